//! `smtlab`: the command-line front end. Argument parsing and wiring only;
//! the work lives in the library crates (ARCHITECTURE.md's codemap says
//! which crate owns what).

mod cli;
mod commands;
mod db_path;
mod exit;
mod flags;
mod output;
mod shared_host;

/// The commit smtlab was built from (`-dirty` with local changes), or
/// `unknown` outside a git checkout.
pub const GIT_COMMIT: &str = env!("SMTLAB_GIT_COMMIT");

fn main() {
    std::process::exit(exit::run(cli::parse_args()));
}
