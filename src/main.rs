//! The `pi-rpc` binary: a thin shell over the library.

// musl's malloc costs about 2.5 times the CPU of glibc's when streaming; the static musl build
// uses mimalloc instead (Cargo.toml, README "Build"). Other targets keep the system allocator.
#[cfg(all(target_env = "musl", feature = "mimalloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `args_os`: a non-UTF-8 argument must reach the flag parser, not panic here.
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Some(code) = pi_rpc::login::run(&args) {
        std::process::exit(code);
    }
    let cli = pi_rpc::cli::Cli::parse_env();
    let code = pi_rpc::app::main_with(cli);
    // A token refresh cut short by the exit must not leave auth.json locked for 30 s.
    pi_rpc::llm::oauth::lock::release_all_held();
    std::process::exit(code);
}
