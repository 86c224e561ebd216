//! The shape of a machine as a study sees it: usable PUs, cores, PUs per
//! core and packages. Planning decides what to sweep from it; findings size
//! their tables by it; the worker-count ladder and the no-SMT sentence
//! every study that sweeps N or needs SMT shares.

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

/// 1..=max when small; beyond 16 a ladder of powers of two plus `max`, so a
/// 256-PU machine is covered in 10 steps instead of 256.
pub fn ladder(max: usize) -> Vec<usize> {
    if max <= 16 {
        return (1..=max.max(1)).collect();
    }
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
        .take_while(|&n| n < max)
        .collect();
    v.push(max);
    v
}

/// The no-SMT sentence: what is missing, and what hardware would show it
/// (or, when the kernel's SMT switch is off, how to switch it back on).
pub(crate) fn no_smt_sentence(topo: &Topology, what: &str) -> String {
    let cores = topo.cores.len();
    if topo.smt_switched_off() {
        return format!(
            "SMT is switched off on this machine (/sys/devices/system/cpu/smt/control is \
             \"{}\": the kernel took every core's siblings offline, leaving {cores} core{} of one \
             PU each), so {what} cannot be measured here; as root, `echo on > \
             /sys/devices/system/cpu/smt/control` brings the siblings back, and this study would \
             then put threads on one core's siblings and show what each extra sibling adds. What \
             can be measured here was run.",
            topo.smt_control.as_deref().unwrap_or("off"),
            if cores == 1 { "" } else { "s" }
        );
    }
    format!(
        "This machine has no SMT ({cores} core{}, one PU per core), so {what} cannot be measured \
         here; on a machine with 2 or more PUs per core (e.g. Intel Hyper-Threading, AMD SMT, \
         POWER SMT4/SMT8) this study would put threads on one core's siblings and show what \
         each extra sibling adds. What can be measured here was run.",
        if cores == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_topology::synthetic;

    #[test]
    fn no_smt_says_whether_the_hardware_lacks_it_or_the_kernel_switched_it_off() {
        let mut topo = synthetic::parse("package:2 core:2").unwrap();
        let none = no_smt_sentence(&topo, "SMT scalability");
        assert!(
            none.starts_with("This machine has no SMT (4 cores, one PU per core)"),
            "{none}"
        );
        topo.smt_control = Some("off".into());
        let off = no_smt_sentence(&topo, "SMT scalability");
        assert!(
            off.starts_with(
                "SMT is switched off on this machine (/sys/devices/system/cpu/smt/control is \
                 \"off\": the kernel took every core's siblings offline, leaving 4 cores of one PU \
                 each), so SMT scalability cannot be measured here"
            ) && off.contains("`echo on > /sys/devices/system/cpu/smt/control`"),
            "{off}"
        );
    }
}
