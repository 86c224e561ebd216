//! `smtlab study web` through the binary (issue 17, item 6): the plan on
//! this machine, on a synthetic SMT machine and on a real 256-PU POWER7
//! dump (servers never on the load generator's CPUs; SMT siblings against
//! one worker per core), and a short real study with its table, verdicts,
//! limits and report.

mod support;

use std::path::Path;

use serde_json::Value;
use support::json;

fn nginx_here() -> bool {
    ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
        .iter()
        .any(|p| Path::new(p).is_file())
}

fn points(doc: &Value) -> Vec<(String, String, String, usize, Vec<u64>)> {
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["program"]["server"].as_str().unwrap().to_string(),
                p["model"]["kind"].as_str().unwrap().to_string(),
                p["placement"].as_str().unwrap().to_string(),
                p["workers"].as_u64().unwrap() as usize,
                p["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
                    .collect(),
            )
        })
        .collect()
}

fn client_cpus(doc: &Value) -> Vec<String> {
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["program"]["params"]["client_cpus"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn synthetic_smt_machine_gets_siblings_and_cores_beside_the_load_generator() {
    let doc = json(&[
        "study",
        "web",
        "--synthetic",
        "core:4 pu:2",
        "--dry-run",
        "--json",
    ]);
    let pts = points(&doc);
    let servers = if nginx_here() { 5 } else { 4 };
    // compact N = 1..6 (3 server cores x 2 siblings), core N = 2, 3 (its
    // N = 1 is compact's), per server and model.
    assert_eq!(pts.len(), servers * 8, "{pts:?}");
    // The load generator has core 3 (CPUs 6, 7); no server touches it.
    assert!(client_cpus(&doc).iter().all(|c| c == "6-7"));
    for (_, _, _, _, cpus) in &pts {
        assert!(cpus.iter().all(|c| *c < 6), "{cpus:?}");
    }
    let web_process = |placement: &str, n: usize| {
        pts.iter()
            .find(|p| p.0 == "web" && p.1 == "process" && p.2 == placement && p.3 == n)
            .map(|p| p.4.clone())
    };
    assert_eq!(web_process("compact", 2), Some(vec![0, 1]), "SMT siblings");
    assert_eq!(web_process("core", 2), Some(vec![0, 2]), "two cores");
    assert_eq!(web_process("core", 1), None, "measured once, as compact");
    if nginx_here() {
        assert!(pts
            .iter()
            .filter(|p| p.0 == "nginx")
            .all(|p| p.1 == "event"));
    }
    assert!(doc["limits"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| !l.as_str().unwrap().contains("no SMT")));
}

#[test]
fn power7_dump_plans_the_ladder_on_48_cores_and_keeps_16_for_the_load() {
    let tmp = tempfile::tempdir().unwrap();
    let root = support::dump("256ppc-8n8s4t", tmp.path());
    let doc = json(&[
        "study",
        "web",
        "--fsroot",
        root.to_str().unwrap(),
        "--dry-run",
        "--json",
        "--model",
        "event",
        "-w",
        "web",
    ]);
    let pts = points(&doc);
    // compact: 1, 2, 4, ..., 128, 192 (the 192 PUs of 48 cores); core: 2
    // to 32 (at most 48 cores).
    let ns = |placement: &str| -> Vec<usize> {
        pts.iter()
            .filter(|p| p.2 == placement)
            .map(|p| p.3)
            .collect()
    };
    assert_eq!(ns("compact"), vec![1, 2, 4, 8, 16, 32, 64, 128, 192]);
    assert_eq!(ns("core"), vec![2, 4, 8, 16, 32]);
    assert!(client_cpus(&doc).iter().all(|c| c == "192-255"), "{doc}");
    for p in &pts {
        assert!(p.4.iter().all(|c| *c < 192), "{p:?}");
    }
    let compact4 = pts.iter().find(|p| p.2 == "compact" && p.3 == 4).unwrap();
    assert_eq!(compact4.4, vec![0, 1, 2, 3], "one core's four SMT threads");
    let core4 = pts.iter().find(|p| p.2 == "core" && p.3 == 4).unwrap();
    assert_eq!(core4.4, vec![0, 4, 8, 12], "the first PU of four cores");
}

#[test]
fn this_machine_runs_every_architecture_and_nginx_with_verdicts_and_a_report() {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        support::skip(&format!(
            "the study keeps a CPU for the load generator; this machine gives {n}"
        ));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db").display().to_string();
    let out = dir.path().join("report");
    let doc = json(&[
        "study",
        "web",
        "--duration",
        "300ms",
        "--warmup",
        "0",
        "--min-samples",
        "2",
        "--max-samples",
        "2",
        "--param",
        "files=5MB",
        "--db",
        &db,
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    let text = doc.to_string();
    let verdicts: Vec<&str> = doc["verdicts"]
        .as_array()
        .unwrap_or_else(|| panic!("verdicts in {text}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        verdicts
            .iter()
            .any(|v| v.contains("architecture served the most")),
        "{verdicts:?}"
    );
    assert!(
        verdicts.iter().any(|v| v.starts_with("The paper found")),
        "{verdicts:?}"
    );
    if nginx_here() {
        assert!(verdicts.iter().any(|v| v.contains("nginx")), "{verdicts:?}");
    }
    let tables = doc["tables"].as_array().unwrap();
    let web = tables
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with("Web servers"))
        .unwrap();
    let rows = web["rows"].as_array().unwrap();
    assert_eq!(rows.len(), if nginx_here() { 5 } else { 4 });
    for r in rows {
        // requests/s measured, user and sys µs per request filled in.
        assert!(r[4].as_str().unwrap().ends_with("req/s"), "{r}");
        assert!(r[5].as_str().unwrap().parse::<f64>().is_ok(), "{r}");
        assert!(r[6].as_str().unwrap().parse::<f64>().is_ok(), "{r}");
    }
    let limits = doc["limits"].to_string();
    if std::fs::read_to_string("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
        .is_ok_and(|s| s.trim() == "0")
    {
        assert!(limits.contains("no SMT"), "{limits}");
    }
    assert!(out.join("report.html").is_file());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Web servers"),
        "the study table is in the report"
    );
}
