//! The `pi-rpc` binary: a thin shell over the library.

fn main() {
    let cli = pi_rpc::cli::Cli::parse_env();
    let code = pi_rpc::app::main_with(cli);
    std::process::exit(code);
}
