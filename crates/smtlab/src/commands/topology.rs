//! `smtlab topology`: the machine as a tree and a one-line summary, or JSON.

use clap::Args;
use smtlab_core::topology::{render_tree, summary_line};

use super::topology_source::TopologySource;

#[derive(Args, Debug)]
pub struct TopologyArgs {
    #[command(flatten)]
    pub source: TopologySource,
    /// Print the topology as JSON (schema in README, "Topology JSON")
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: TopologyArgs) -> anyhow::Result<i32> {
    let topo = a.source.load()?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&topo)?);
    } else {
        print!("{}", render_tree(&topo));
        println!("{}", summary_line(&topo));
    }
    Ok(0)
}
