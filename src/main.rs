//! The `pi-rpc` binary: a thin shell over the library.

// musl's malloc costs about 2.5 times the CPU of glibc's when streaming; the static musl build
// uses mimalloc instead (Cargo.toml, README "Build"). Other targets keep the system allocator.
#[cfg(all(target_env = "musl", feature = "mimalloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = pi_rpc::login::run(&args) {
        std::process::exit(code);
    }
    let cli = pi_rpc::cli::Cli::parse_env();
    let code = pi_rpc::app::main_with(cli);
    std::process::exit(code);
}
