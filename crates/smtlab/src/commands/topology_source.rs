//! `--fsroot DIR | --synthetic SPEC`: where a command reads the machine from.

use std::path::PathBuf;

use clap::Args;
use smtlab_topology::sysfs;
use smtlab_topology::Topology;

use crate::exit::usage;
use crate::flags;

#[derive(Args, Debug, Clone)]
pub struct TopologySource {
    /// Read the topology from this filesystem root (holding sys/ and proc/),
    /// e.g. an extracted hwloc dump, instead of this machine
    #[arg(long, value_name = "DIR", conflicts_with = "synthetic")]
    pub fsroot: Option<PathBuf>,
    /// Use a synthetic machine, e.g. "package:2 core:8 pu:2" (levels: package,
    /// numa, l3, l2, l1, core, pu)
    #[arg(long, value_name = "SPEC", value_parser = flags::synthetic)]
    pub synthetic: Option<Topology>,
}

impl TopologySource {
    /// Load the topology; a bad root or spec is a usage error.
    pub fn load(&self) -> anyhow::Result<Topology> {
        if let Some(topo) = &self.synthetic {
            return Ok(topo.clone());
        }
        match &self.fsroot {
            Some(root) => sysfs::read_root(root).map_err(usage),
            None => sysfs::read_live().map_err(|e| anyhow::anyhow!(e)),
        }
    }

    /// True when the topology is this machine (the only one smtlab can
    /// measure; the others are for plans).
    pub fn is_live(&self) -> bool {
        self.fsroot.is_none() && self.synthetic.is_none()
    }
}
