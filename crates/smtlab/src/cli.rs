//! Command-line definitions (clap) and dispatch.

use clap::{Parser, Subcommand};

use crate::commands;

#[derive(Parser)]
#[command(
    name = "smtlab",
    version,
    about = "Measure how to run a parallel program on this machine: threads or processes, \
             how many, pinned where, with SMT or without",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the machine: packages, cores, PUs, caches, NUMA nodes
    Topology(commands::topology::TopologyArgs),
    /// Show the CPUs a placement or CPU expression picks for N workers
    Place(commands::place::PlaceArgs),
    /// Run a program with its threads pinned one by one to a CPU list
    Pin(commands::pin::PinArgs),
}

/// Parse the command line and run the command; clap's own errors (unknown
/// flag, missing value) exit 2 as well.
pub fn parse_args() -> anyhow::Result<i32> {
    let cli = Cli::parse();
    match cli.command {
        Command::Topology(a) => commands::topology::run(a),
        Command::Place(a) => commands::place::run(a),
        Command::Pin(a) => commands::pin::run(a),
    }
}
