//! The `pi-rpc` binary: a thin shell over the library.

use clap::Parser;

fn main() {
    let cli = pi_rpc::cli::Cli::parse();
    let code = pi_rpc::app::main_with(cli);
    std::process::exit(code);
}
