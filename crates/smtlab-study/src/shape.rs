//! The shape of a machine as a study sees it: usable PUs, cores, PUs per
//! core and packages. Planning decides what to sweep from it; findings size
//! their tables by it.

use smtlab_topology::Topology;

/// The machine's usable PUs and cores, and the most PUs on one core.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub(crate) pus: usize,
    pub(crate) cores: usize,
    pub(crate) pus_per_core: usize,
    pub(crate) packages: usize,
}

pub(crate) fn shape(topo: &Topology) -> Shape {
    let usable = topo.online().intersection(&topo.allowed());
    let cores: Vec<usize> = topo
        .cores
        .iter()
        .map(|c| c.cpus.intersection(&usable).len())
        .filter(|&n| n > 0)
        .collect();
    let packages = topo
        .packages
        .iter()
        .filter(|p| p.cpus.intersects(&usable))
        .count();
    Shape {
        pus: usable.len(),
        cores: cores.len(),
        pus_per_core: cores.iter().copied().max().unwrap_or(1),
        packages: packages.max(1),
    }
}
