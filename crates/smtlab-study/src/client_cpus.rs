//! Where a server study's load generator runs: the web and chat studies
//! split the machine once, the last quarter of its cores (at least one)
//! driving the load, the others serving, so that server and client never
//! take turns on a CPU. What both studies say about it, and how each
//! server point is given those CPUs, is here, written once.

use smtlab_topology::Topology;
use smtlab_types::cpuset::CpuSet;
use smtlab_types::{Program, CLIENT_CPUS_PARAM};

/// The CPUs that drive the load: every usable PU of the last quarter of
/// the usable cores (at least one core), or none on a one-core machine.
pub fn client_cpus(topo: &Topology) -> CpuSet {
    let usable = topo.online().intersection(&topo.allowed());
    let cores: Vec<CpuSet> = topo
        .cores
        .iter()
        .map(|c| c.cpus.intersection(&usable))
        .filter(|c| !c.is_empty())
        .collect();
    if cores.len() < 2 {
        return CpuSet::new();
    }
    let k = cores.len().div_ceil(4).max(1);
    cores[cores.len() - k..]
        .iter()
        .fold(CpuSet::new(), |acc, c| acc.union(c))
}

/// The limit a server study states when there are no client CPUs (a
/// one-core machine): the load generator shares the server's CPUs.
pub(crate) fn shared_core_limit() -> String {
    "This machine has a single usable core, so the load generator shares the server's \
     CPUs: every result is marked, and the throughputs are lower bounds."
        .to_string()
}

/// Give a server point's load generator the study's client CPUs, unless
/// the user chose others (`--client-cpus`, or a `client_cpus` parameter)
/// or there are none.
pub(crate) fn give_client_cpus(program: &mut Program, client: &CpuSet) {
    if let Program::Server {
        params,
        client_cpus,
        ..
    } = program
    {
        if !client.is_empty() && client_cpus.is_none() && !params.contains_key(CLIENT_CPUS_PARAM) {
            *client_cpus = Some(client.clone());
        }
    }
}
