//! `smtlab topology`: the machine as a tree and a one-line summary, or JSON.

use clap::Args;
use serde::Serialize;
use smtlab_topology::Topology;
use smtlab_topology::{render_tree, summary_line};

use super::topology_source::TopologySource;
use crate::output;

#[derive(Args, Debug)]
pub struct TopologyArgs {
    #[command(flatten)]
    pub source: TopologySource,
    /// Print the topology as JSON (schema in README, "Topology JSON")
    #[arg(long)]
    pub json: bool,
}

/// The stable JSON document: a schema tag, then the topology's fields.
/// Fields are only ever added under the same schema tag; a rename or removal
/// bumps it.
#[derive(Serialize)]
struct TopologyJson<'a> {
    schema: &'static str,
    summary: String,
    smt_active: bool,
    #[serde(flatten)]
    topology: &'a Topology,
}

pub fn run(a: TopologyArgs) -> anyhow::Result<i32> {
    let topo = a.source.load()?;
    if a.json {
        let doc = TopologyJson {
            schema: "smtlab.topology/1",
            summary: summary_line(&topo),
            smt_active: topo.smt_active(),
            topology: &topo,
        };
        output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        output::print(&format!("{}{}\n", render_tree(&topo), summary_line(&topo)))?;
    }
    Ok(0)
}
