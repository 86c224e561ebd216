//! `smtlab topology` and `smtlab place` from the outside: output, JSON,
//! exit codes.

mod support;

use support::{assert_usage_error, dump, json, smtlab};

use std::process::Command as StdCommand;

/// Ask hwloc how many objects of a type this machine has.
fn hwloc_count(kind: &str) -> Option<usize> {
    let out = StdCommand::new("hwloc-calc")
        .args(["--number-of", kind, "all"])
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

#[test]
fn this_machine_agrees_with_hwloc() {
    let (Some(packages), Some(cores), Some(pus)) = (
        hwloc_count("package"),
        hwloc_count("core"),
        hwloc_count("pu"),
    ) else {
        support::skip("hwloc-calc not installed (Debian package hwloc)");
        return;
    };
    let out = smtlab().arg("topology").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let summary = text.lines().last().unwrap();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let expect = format!(
        "{}, {}, {}, SMT {}",
        plural(packages, "package"),
        plural(cores, "core"),
        plural(pus, "PU"),
        if pus > cores { "on" } else { "off" }
    );
    assert!(
        summary.starts_with(&expect),
        "summary `{summary}`, hwloc says `{expect}`"
    );
    let doc = json(&["topology", "--json"]);
    assert_eq!(doc["schema"], "smtlab.topology/1");
    let online = doc["pus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["online"] == true)
        .count();
    assert_eq!(online, pus);
}

#[test]
fn power7_dump_shows_64_cores_of_4_pus_and_8_numa_nodes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = dump("256ppc-8n8s4t", tmp.path());
    let out = smtlab()
        .args(["topology", "--fsroot"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("64 packages, 64 cores, 256 PUs, SMT on (4 PUs per core), 8 NUMA nodes"),
        "{text}"
    );
    let doc = json(&["topology", "--json", "--fsroot", root.to_str().unwrap()]);
    let cores = doc["cores"].as_array().unwrap();
    assert_eq!(cores.len(), 64);
    assert!(cores
        .iter()
        .all(|c| c["cpus"].as_array().unwrap().len() == 4));
    assert_eq!(doc["numa_nodes"].as_array().unwrap().len(), 8);
}

#[test]
fn cpuset_dump_marks_the_six_cpus_outside_as_not_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = dump("16amd64-8n2c-cpusets", tmp.path());
    let doc = json(&["topology", "--json", "--fsroot", root.to_str().unwrap()]);
    let pus = doc["pus"].as_array().unwrap();
    assert_eq!(pus.len(), 16, "every PU, online or not, is listed");
    let not_allowed: Vec<u64> = pus
        .iter()
        .filter(|p| p["allowed"] == false)
        .map(|p| p["os_index"].as_u64().unwrap())
        .collect();
    assert_eq!(not_allowed, [4, 7, 8, 9, 10, 11]);
    for p in pus {
        for key in ["os_index", "core", "package", "numa", "online", "allowed"] {
            assert!(p.get(key).is_some(), "PU object lacks `{key}`: {p}");
        }
    }
    let text = String::from_utf8(
        smtlab()
            .args(["topology", "--fsroot"])
            .arg(&root)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(text.contains("(P#7, not allowed)"), "{text}");
    assert!(text.contains("Offline PUs: 4"), "{text}");
}

#[test]
fn synthetic_ultrasparc_t1_has_32_pus_in_8_cores() {
    let doc = json(&["topology", "--synthetic", "core:8 pu:4", "--json"]);
    let pus = doc["pus"].as_array().unwrap();
    assert_eq!(pus.len(), 32);
    let cores: std::collections::BTreeSet<u64> =
        pus.iter().map(|p| p["core"].as_u64().unwrap()).collect();
    assert_eq!(cores.len(), 8);
    assert_eq!(doc["cores"].as_array().unwrap().len(), 8);
    assert_eq!(doc["smt_active"], true);
}

#[test]
fn malformed_topology_input_exits_2_with_one_line() {
    assert_usage_error(&["topology", "--synthetic", "core:x"], "core:x");
    assert_usage_error(&["topology", "--synthetic", "sockets:2"], "sockets");
    assert_usage_error(
        &["topology", "--fsroot", "/nonexistent/smtlab-root"],
        "--fsroot /nonexistent/smtlab-root",
    );
    let empty = tempfile::tempdir().unwrap();
    assert_usage_error(
        &["topology", "--fsroot", empty.path().to_str().unwrap()],
        "--fsroot",
    );
}

#[test]
fn malformed_cpu_expressions_exit_2_naming_the_token() {
    for (expr, token) in [
        ("S9:0", "S9"),
        ("0-", "0-"),
        ("E:N:0", "E:N:0"),
        ("Q:0", "Q"),
    ] {
        assert_usage_error(&["place", "-n", "2", "-p", expr], token);
    }
    assert_usage_error(&["place", "-n", "0"], "at least 1");
    assert_usage_error(&["place", "-n", "2", "-p", "smt:x"], "smt:x");
}

/// The CPUs `smtlab place --json` gives `n` workers under `policy` on `machine`.
fn placed_cpus(machine: &str, policy: &str, n: usize) -> Vec<u64> {
    let doc = json(&[
        "place",
        "--synthetic",
        machine,
        "-n",
        &n.to_string(),
        "-p",
        policy,
        "--json",
    ]);
    doc["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}

#[test]
fn t2_pinning_plan_one_core_versus_eight_cores() {
    let t2 = "core:8 pu:8";
    let eight: Vec<u64> = (0..8).collect();
    assert_eq!(
        placed_cpus(t2, "smt:0", 8),
        eight,
        "8 threads on core 0's PUs"
    );
    let firsts: Vec<u64> = (0..8).map(|c| c * 8).collect();
    assert_eq!(placed_cpus(t2, "core", 8), firsts, "first PU of 8 cores");
    let over = json(&[
        "place",
        "--synthetic",
        t2,
        "-n",
        "16",
        "-p",
        "smt:0",
        "--json",
    ]);
    assert_eq!(over["oversubscription"], 2.0);
}
