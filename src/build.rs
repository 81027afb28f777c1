//! Build script: on Linux, links the `pi-rpc` binary with
//! `src/startup_order.ld`, which places the functions start-up runs next to each other.
//!
//! Why: the kernel maps executable pages 64 KiB at a time around each page the program touches
//! ("fault-around"). Start-up runs about 400 functions that the compiler scatters over the
//! whole 5 MB `.text`, so nearly all of it became resident. Grouped, the same code touches about
//! 1 MB: peak RSS from spawn to the first `get_state` answer drops by about 1.6 MiB
//! (`cargo run --release --example bench_startup`).
//!
//! The script only orders sections (`INSERT BEFORE .text` keeps the linker's default layout), so
//! a stale or partly matching script costs memory, never correctness. Regenerate it with
//! `cargo run --release --example startup_order` after larger changes to the start-up path.
//! `PI_RPC_NO_STARTUP_ORDER=1` turns it off (for linkers without `INSERT`, such as gold).

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    println!("cargo:rerun-if-changed=src/startup_order.ld");
    println!("cargo:rerun-if-env-changed=PI_RPC_NO_STARTUP_ORDER");

    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let disabled = env::var_os("PI_RPC_NO_STARTUP_ORDER").is_some_and(|v| !v.is_empty());
    if !linux || disabled {
        return;
    }
    let Some(dir) = env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let script = std::path::Path::new(&dir)
        .join("src")
        .join("startup_order.ld");
    if script.is_file() {
        // `-T <file>` as two arguments: the path may contain commas or spaces.
        println!("cargo:rustc-link-arg-bins=-T");
        println!("cargo:rustc-link-arg-bins={}", script.display());
    }
}
