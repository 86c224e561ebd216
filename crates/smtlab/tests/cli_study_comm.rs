//! `smtlab study comm` through the binary (issue 19, item 6): the default
//! plan on this machine (five mechanisms x SOR, LU, TSP x 2 and 4 ranks x
//! one rank per CPU and two per node) and on the POWER7 dump (the paper's 8
//! and 16 ranks), bad flags, and a short real study with its tables,
//! verdicts, charts and report.

mod support;

use serde_json::Value;
use support::{assert_usage_error, json};

/// (application, mechanism, ranks, ranks per node) of every planned point.
fn planned(doc: &Value) -> Vec<(String, String, u64, String)> {
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let prog = &p["program"];
            assert_eq!(prog["kind"], "ranks", "{p}");
            assert_eq!(p["model"]["kind"], "process", "{p}");
            (
                prog["app"].as_str().unwrap().to_string(),
                prog["comm"].as_str().unwrap().to_string(),
                p["workers"].as_u64().unwrap(),
                prog["params"]["per_node"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_default_plan_here_is_five_mechanisms_three_applications_and_four_layouts() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let doc = json(&["study", "comm", "--dry-run", "--json"]);
    assert_eq!(doc["study"], "comm");
    let points = planned(&doc);
    let mut ranks: Vec<u64> = points.iter().map(|p| p.2).collect();
    ranks.sort_unstable();
    ranks.dedup();
    assert_eq!(&ranks[..2], [2, 4], "{ranks:?}");
    assert!(ranks.iter().all(|n| n % 2 == 0));
    // 5 mechanisms x 3 applications x the ladder x 2 layouts.
    assert_eq!(points.len(), 5 * 3 * ranks.len() * 2);
    for app in ["sor", "lu", "tsp"] {
        for comm in ["sigio", "thr1", "thr2", "thr3", "poll"] {
            for per_node in ["1", "2"] {
                assert!(
                    points
                        .iter()
                        .any(|p| p.0 == app && p.1 == comm && p.2 == 2 && p.3 == per_node),
                    "{app} {comm} per_node={per_node}"
                );
            }
        }
    }
    let limits = doc["limits"].to_string();
    if cpus <= 2 {
        assert_eq!(points.len(), 60);
        assert!(
            limits.contains("at 4 ranks the ranks share CPUs"),
            "{limits}"
        );
    }
    let notes = doc["notes"].to_string();
    assert!(notes.contains("Problem sizes: sor"), "{notes}");
    // The text form lists the points and the limits.
    let out = support::smtlab()
        .args(["study", "comm", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("smtlab study comm: "), "{text}");
    assert!(text.contains("lu thr2 per_node=2"), "{text}");
    assert!(text.contains("limit: "), "{text}");
}

#[test]
fn on_the_power7_dump_the_plan_reaches_the_papers_eight_and_sixteen_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = support::dump("256ppc-8n8s4t", tmp.path());
    let doc = json(&[
        "study",
        "comm",
        "--fsroot",
        root.to_str().unwrap(),
        "--dry-run",
        "--json",
    ]);
    let points = planned(&doc);
    for n in [8, 16] {
        for per_node in ["1", "2"] {
            assert!(
                points.iter().any(|p| p.2 == n && p.3 == per_node),
                "{n} ranks, per_node={per_node}"
            );
        }
    }
    // Up to the DSM's 64 ranks on 256 PUs, and no rank shares a CPU.
    assert_eq!(points.iter().map(|p| p.2).max(), Some(64));
    for p in doc["points"].as_array().unwrap() {
        assert_eq!(p["oversubscription"].as_f64(), Some(1.0), "{p}");
    }
    assert!(
        doc["notes"].to_string().contains("stops at 64 ranks"),
        "{}",
        doc["notes"]
    );
    // The paper's cluster: 8 dual-processor nodes.
    let doc = json(&[
        "study",
        "comm",
        "--synthetic",
        "package:8 core:2",
        "--dry-run",
        "--json",
    ]);
    let mut ranks: Vec<u64> = planned(&doc).iter().map(|p| p.2).collect();
    ranks.sort_unstable();
    ranks.dedup();
    assert_eq!(ranks, [2, 4, 8, 16]);
}

/// (ranks, placement, CPUs) of the two-ranks-per-node points of a dry
/// run on a synthetic machine, and the plan's note on the layouts.
fn nodes_on(machine: &str) -> (Vec<(u64, String, Vec<u64>)>, String) {
    let doc = json(&[
        "study",
        "comm",
        "--synthetic",
        machine,
        "-w",
        "sor",
        "--comm",
        "thr2",
        "--dry-run",
        "--json",
    ]);
    let nodes = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["program"]["params"]["per_node"] == "2")
        .map(|p| {
            (
                p["workers"].as_u64().unwrap(),
                p["placement"].as_str().unwrap().to_string(),
                p["cpus"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| c.as_u64().unwrap())
                    .collect(),
            )
        })
        .collect();
    let note = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|n| n.contains("Two ranks per node"))
        .expect("a note on the layouts")
        .to_string();
    (nodes, note)
}

#[test]
fn two_ranks_per_node_share_a_core_on_smt_and_two_cores_without() {
    // The emulated guest's machine: 2 packages x 2 cores x 2 SMT threads,
    // where PUs 2k and 2k+1 are core k's siblings.
    let (nodes, note) = nodes_on("package:2 core:2 pu:2");
    assert_eq!(
        nodes,
        [
            (2, "compact".to_string(), vec![0, 1]),
            (4, "compact".to_string(), vec![0, 1, 2, 3]),
            (8, "compact".to_string(), (0..8).collect()),
        ]
    );
    assert!(
        note.contains("node k is the two SMT siblings of core k")
            && note.contains("(CPUs 0 and 1 for node 0; placement compact)"),
        "{note}"
    );
    // The paper's eight dual-processor nodes, no SMT: as before.
    let (nodes, note) = nodes_on("package:8 core:2");
    assert_eq!(nodes.len(), 4);
    for (n, placement, cpus) in nodes {
        assert_eq!(placement, "core");
        assert_eq!(cpus, (0..n).collect::<Vec<_>>());
    }
    assert!(
        note.contains("node k is cores 2k and 2k+1 (CPUs 0 and 1 for node 0; placement core)"),
        "{note}"
    );
}

#[test]
fn flags_that_do_not_apply_are_one_line_and_exit_2() {
    assert_usage_error(
        &["study", "comm", "--threads", "2,3", "--dry-run"],
        "--threads 3: ",
    );
    assert_usage_error(
        &["study", "comm", "-w", "spin", "--dry-run"],
        "-w spin: `study comm` measures the DSM applications",
    );
    assert_usage_error(
        &["study", "comm", "--cmd", "true", "--dry-run"],
        "--cmd: `study comm`",
    );
    assert_usage_error(
        &["study", "comm", "--model", "thread", "--dry-run"],
        "--model (ranks are processes)",
    );
    assert_usage_error(
        &["study", "comm", "--duration", "1s", "--dry-run"],
        "--duration/--work",
    );
    assert_usage_error(
        &["study", "comm", "--comm", "signal", "--dry-run"],
        "--comm `signal`",
    );
    assert_usage_error(
        &["study", "comm", "--param", "per_node=2", "--dry-run"],
        "--param per_node",
    );
    assert_usage_error(
        &[
            "study",
            "comm",
            "-w",
            "sor",
            "--param",
            "cities=9",
            "--dry-run",
        ],
        "--param cities: none of the study's applications (sor)",
    );
    assert_usage_error(
        &["study", "comm", "--param", "n=7", "--dry-run"],
        "--param n=7",
    );
    assert_usage_error(
        &["study", "comm", "--connections", "20", "--dry-run"],
        "--connections applies to `study chat`",
    );
    assert_usage_error(
        &["study", "models", "--comm", "thr2", "--dry-run"],
        "--comm applies to `study comm`",
    );
}

#[test]
fn a_short_study_on_this_machine_has_its_tables_verdicts_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db").display().to_string();
    let out = dir.path().join("report");
    // SOR on a small grid, two mechanisms, 2 ranks in both layouts: four
    // points of three samples each.
    let doc = json(&[
        "study",
        "comm",
        "-w",
        "sor",
        "--comm",
        "sigio,thr2",
        "--threads",
        "2",
        "--param",
        "n=64",
        "--param",
        "iterations=4",
        "--warmup",
        "0",
        "--min-samples",
        "3",
        "--max-samples",
        "3",
        "--db",
        &db,
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(doc["study"], "comm");
    let verdicts: Vec<&str> = doc["verdicts"]
        .as_array()
        .unwrap_or_else(|| panic!("verdicts in {doc}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        verdicts[0].starts_with("Every result verified: all 12 "),
        "{verdicts:#?}"
    );
    for layout in ["one rank per CPU", "two ranks per node"] {
        let at = format!("SOR at 2 ranks, {layout}");
        assert!(
            verdicts.iter().any(|v| v.starts_with(&format!("{at}: "))),
            "{at}: {verdicts:#?}"
        );
        // thr2 against sigio: faster, slower or a tie, always said.
        assert!(
            verdicts
                .iter()
                .any(|v| v.starts_with("Thr2 ") && v.contains("sigio") && v.contains(&at)),
            "{at}: {verdicts:#?}"
        );
        assert!(
            verdicts
                .iter()
                .any(|v| v.starts_with("The paper's finding (threads") && v.contains(&at)),
            "{at}: {verdicts:#?}"
        );
    }
    let tables = doc["tables"].as_array().unwrap();
    let title = |t: &Value| t["title"].as_str().unwrap().to_string();
    let stats = tables
        .iter()
        .find(|t| title(t) == "SOR: communication statistics")
        .unwrap_or_else(|| panic!("{tables:?}"));
    let rows = stats["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        // messages, KB and page fetches were counted.
        assert!(r[3].as_str().unwrap().parse::<f64>().unwrap() > 0.0, "{r}");
        assert!(r[5].as_str().unwrap().parse::<f64>().unwrap() > 0.0, "{r}");
    }
    let split = tables
        .iter()
        .find(|t| title(t).starts_with("SOR: wall time and where"))
        .unwrap();
    for r in split["rows"].as_array().unwrap() {
        assert!(r[3].as_str().unwrap().ends_with('s'), "{r}");
        assert!(r[5].as_str().unwrap().parse::<f64>().unwrap() > 0.0, "{r}");
    }
    for chart in [
        "comm-sor-per-cpu",
        "comm-sor-per-node",
        "comm-split-sor-2-per-cpu",
        "comm-split-sor-2-per-node",
    ] {
        assert!(
            out.join("charts").join(format!("{chart}.svg")).is_file(),
            "{chart}"
        );
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("SOR: communication statistics"), "the table");
    assert!(html.contains("wall time by mechanism"), "the charts");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("Every result verified"), "{md}");
}
