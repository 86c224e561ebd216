//! `smtlab doctor` from the outside: every check in the JSON, the PMU
//! verdict on a machine without one, the text summary, exit codes.

mod support;

use support::smtlab;

use serde_json::Value;

fn doctor_json() -> Value {
    let out = smtlab().args(["doctor", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Does this machine have a hardware PMU? Asked independently of smtlab, of
/// `perf stat` (`None` if perf is not installed or says something else).
fn machine_has_pmu() -> Option<bool> {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "cycles:u", "true"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    if text.contains("<not supported>") {
        Some(false)
    } else if text.contains("cycles") && text.chars().next()?.is_ascii_digit() {
        Some(true)
    } else {
        None
    }
}

#[test]
fn json_has_every_check() {
    let v = doctor_json();
    assert_eq!(v["schema"], "smtlab.doctor/1");
    let checks = v["checks"].as_array().unwrap();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    for want in [
        "pmu",
        "perf_event_paranoid",
        "hypervisor",
        "cpuset",
        "smt",
        "thp",
        "cpufreq_governor",
        "open_files",
        "allocator_glibc",
        "allocator_jemalloc",
        "allocator_mimalloc",
        "allocator_tcmalloc",
        "allocator_jemalloc-percpu",
        "allocator_smtalloc",
        "wrk",
        "hyperfine",
    ] {
        assert!(names.contains(&want), "no check {want} in {names:?}");
    }
    for c in checks {
        let status = c["status"].as_str().unwrap();
        assert!(["ok", "warn", "missing"].contains(&status), "{c}");
        assert!(!c["finding"].as_str().unwrap().is_empty(), "{c}");
        // Whatever is not ok says how to fix it.
        if status == "missing" {
            assert!(c["fix"].as_str().is_some_and(|f| !f.is_empty()), "{c}");
        }
    }
    assert!(!v["can_measure"].as_array().unwrap().is_empty());
    assert!(v["cannot_measure"].is_array());
}

#[test]
fn pmu_missing_without_hardware_counters() {
    let v = doctor_json();
    let pmu = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "pmu")
        .unwrap()
        .clone();
    match machine_has_pmu() {
        Some(false) => {
            assert_eq!(pmu["status"], "missing", "{pmu}");
            assert!(
                pmu["finding"].as_str().unwrap().contains("no hardware PMU"),
                "{pmu}"
            );
            assert!(pmu["fix"].as_str().unwrap().contains("bare metal"), "{pmu}");
        }
        Some(true) => {
            // Counters open as root here; as an unprivileged user the
            // doctor may report them refused instead.
            assert_ne!(pmu["status"], "missing", "{pmu}");
            support::skip(&format!(
                "this machine has a hardware PMU ({}): the no-PMU verdict is not exercised",
                pmu["finding"]
            ));
        }
        None => support::skip("perf not installed (Debian package linux-perf): cannot tell"),
    }
}

#[test]
fn text_has_table_and_summary() {
    let out = smtlab().arg("doctor").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("STATUS"), "{text}");
    for name in ["pmu", "perf_event_paranoid", "smt", "allocator_jemalloc"] {
        assert!(text.contains(name), "{name} missing:\n{text}");
    }
    assert!(text.contains("Can measure here:"), "{text}");
    assert!(text.contains("Cannot measure here:"), "{text}");
}

#[test]
fn bogus_flag_exits_2() {
    let out = smtlab().args(["doctor", "--bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty());
}
