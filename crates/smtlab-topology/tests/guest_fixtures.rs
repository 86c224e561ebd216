//! The emulated guests' machines (`scripts/guest-fixtures` captured their
//! `/sys` and `/proc` inside QEMU: fixtures/sysfs/*-qemu), read without
//! booting anything: each reads as the shape it was booted with, and the
//! placements choose the PUs the guest tests saw chosen inside the guest.
//! (`hwloc_fixtures` checks every dump, these among them, against lstopo.)

use std::path::Path;
use std::process::Command;

use smtlab_topology::placement::place;
use smtlab_topology::{summary_line, sysfs, Topology};
use smtlab_types::{CpuSet, Policy};

fn load(name: &str) -> (tempfile::TempDir, Topology) {
    let tmp = tempfile::tempdir().unwrap();
    let tarball = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sysfs")
        .join(format!("{name}.tar.bz2"));
    let ok = Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp.path())
        .status()
        .expect("tar runs (needs tar and bzip2)")
        .success();
    assert!(ok, "extracting {}", tarball.display());
    let topo = sysfs::read_root(&tmp.path().join(name)).unwrap();
    (tmp, topo)
}

/// The CPUs `policy` gives `n` workers.
fn cpus(t: &Topology, policy: &str, n: usize) -> Vec<u32> {
    let p: Policy = policy.parse().unwrap();
    place(t, &p, n).unwrap().cpus.expect("pinned")
}

fn set(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

#[test]
fn shape_a_one_package_two_cores_two_threads() {
    let (_tmp, t) = load("4em64t-1s2c2t-qemu");
    assert_eq!(
        summary_line(&t),
        "1 package, 2 cores, 4 PUs, SMT on (2 PUs per core)"
    );
    assert_eq!(cpus(&t, "compact", 4), [0, 1, 2, 3]);
    assert_eq!(cpus(&t, "scatter", 4), [0, 2, 1, 3]);
    assert_eq!(cpus(&t, "core", 2), [0, 2]);
    assert_eq!(cpus(&t, "smt:1", 2), [2, 3]);
}

#[test]
fn shape_b_two_packages_two_nodes() {
    let (_tmp, t) = load("8em64t-2s2c2t-2n-qemu");
    assert_eq!(t.smt_control.as_deref(), Some("on"));
    assert_eq!(
        summary_line(&t),
        "2 packages, 4 cores, 8 PUs, SMT on (2 PUs per core), 2 NUMA nodes"
    );
    let nodes: Vec<CpuSet> = t.numa_nodes.iter().map(|n| n.cpus.clone()).collect();
    assert_eq!(nodes, [set("0-3"), set("4-7")]);
    assert_eq!(cpus(&t, "compact", 4), [0, 1, 2, 3]);
    // One PU per core, the packages (and nodes) taking turns.
    assert_eq!(cpus(&t, "scatter", 4), [0, 4, 2, 6]);
    assert_eq!(cpus(&t, "core", 4), [0, 2, 4, 6]);
    assert_eq!(cpus(&t, "M1:0-1", 2), [4, 6]);
}

#[test]
fn shape_c_smt4() {
    let (_tmp, t) = load("8em64t-1s2c4t-qemu");
    assert_eq!(
        summary_line(&t),
        "1 package, 2 cores, 8 PUs, SMT on (4 PUs per core)"
    );
    assert_eq!(cpus(&t, "compact", 5), [0, 1, 2, 3, 4]);
    assert_eq!(cpus(&t, "scatter", 4), [0, 4, 1, 5]);
    assert_eq!(cpus(&t, "smt:1", 4), [4, 5, 6, 7]);
}

#[test]
fn shape_d_smt_off_at_run_time_and_a_cpu_offline() {
    let (_tmp, t) = load("8em64t-2s2c2t-2n-smtoff-qemu");
    assert!(!t.smt_active());
    // The kernel's switch, not a machine without siblings.
    assert_eq!(t.smt_control.as_deref(), Some("off"));
    assert!(t.smt_switched_off());
    let offline: CpuSet = t
        .pus
        .iter()
        .filter(|p| !p.online)
        .map(|p| p.os_index)
        .collect();
    assert_eq!(offline, set("1,3,5-7"));
    assert_eq!(
        summary_line(&t),
        "2 packages, 3 cores, 3 PUs, SMT switched off, 2 NUMA nodes; 5 PUs offline"
    );
    // Placements never choose an offline PU.
    assert_eq!(cpus(&t, "compact", 3), [0, 2, 4]);
    assert_eq!(cpus(&t, "scatter", 3), [0, 4, 2]);
}

#[test]
fn shape_e_inside_a_cgroup_v2_cpuset() {
    let (_tmp, t) = load("8em64t-2s2c2t-2n-cgroup2-qemu");
    assert_eq!(t.allowed(), set("0-2,5"));
    assert!(
        t.cpuset_source
            .as_deref()
            .is_some_and(|s| s.ends_with("smtlab-guest/cpuset.cpus.effective")),
        "{:?}",
        t.cpuset_source
    );
    // Only allowed PUs are chosen, siblings first for compact.
    assert_eq!(cpus(&t, "compact", 4), [0, 1, 2, 5]);
    assert_eq!(cpus(&t, "core", 3), [0, 2, 5]);
}
