//! `smtlab`: the command-line front end. Argument parsing and wiring only;
//! the work lives in `smtlab-core`.

mod cli;
mod commands;
mod exit;
mod output;

fn main() {
    std::process::exit(exit::run(cli::parse_args()));
}
