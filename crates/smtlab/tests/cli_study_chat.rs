//! `smtlab study chat` through the binary (issue 18, item 5): the default
//! sweep planned on this machine and on the POWER7 dump (20 to 10,000
//! connections, three models and ngircd, servers apart from the load
//! generator), bad flags, and a short real study with its table, verdicts,
//! charts and report.

mod support;

use std::path::Path;

use serde_json::Value;
use support::{assert_usage_error, json};

fn ngircd_here() -> bool {
    ["/usr/sbin/ngircd", "/usr/local/sbin/ngircd"]
        .iter()
        .any(|p| Path::new(p).is_file())
}

fn planned(doc: &Value) -> Vec<(String, String, usize)> {
    doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["program"]["server"].as_str().unwrap().to_string(),
                p["model"]["kind"].as_str().unwrap().to_string(),
                p["program"]["params"]["connections"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_default_sweep_goes_from_20_to_10000_connections_on_the_power7_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let root = support::dump("256ppc-8n8s4t", tmp.path());
    let doc = json(&[
        "study",
        "chat",
        "--fsroot",
        root.to_str().unwrap(),
        "--dry-run",
        "--json",
    ]);
    let points = planned(&doc);
    let mut counts: Vec<usize> = points.iter().map(|p| p.2).collect();
    counts.dedup();
    // Counts past this machine's own limits are dropped and said; the
    // dump's plan uses this machine's open-file and thread limits.
    assert_eq!(counts[0], 20);
    assert!(counts.iter().all(|c| c % 20 == 0));
    let models: Vec<&str> = points
        .iter()
        .filter(|p| p.0 == "chat" && p.2 == 20)
        .map(|p| p.1.as_str())
        .collect();
    assert_eq!(models, ["thread2", "thread", "event"]);
    if ngircd_here() {
        assert!(points.iter().any(|p| p.0 == "ngircd" && p.1 == "event"));
    }
    // Every server on the 192 PUs before the load generator's 64.
    for p in doc["points"].as_array().unwrap() {
        assert_eq!(p["program"]["params"]["client_cpus"], "192-255", "{p}");
        let cpus = p["cpus"].as_array().unwrap();
        assert!(cpus.iter().all(|c| c.as_u64().unwrap() < 192), "{p}");
    }
}

#[test]
fn bad_study_flags_are_one_line_and_exit_2() {
    assert_usage_error(
        &["study", "chat", "--connections", "30", "--dry-run"],
        "--connections 30",
    );
    assert_usage_error(
        &["study", "web", "--connections", "20", "--dry-run"],
        "--connections applies to `study chat`",
    );
    assert_usage_error(&["study", "chat", "-w", "spin", "--dry-run"], "-w/--cmd");
    assert_usage_error(
        &["study", "chat", "--param", "connections=20", "--dry-run"],
        "--param connections",
    );
    assert_usage_error(
        &["study", "chat", "--param", "files=5MB", "--dry-run"],
        "--param files",
    );
    assert_usage_error(
        &["study", "chat", "--model", "process", "--dry-run"],
        "--model process: the chat server runs as thread2, thread or event",
    );
}

#[test]
fn a_short_study_on_this_machine_has_its_table_verdicts_and_charts() {
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
        "chat",
        "--connections",
        "20,60",
        "--param",
        "messages=20",
        "--min-samples",
        "1",
        "--max-samples",
        "1",
        "--db",
        &db,
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    let verdicts: Vec<&str> = doc["verdicts"]
        .as_array()
        .unwrap_or_else(|| panic!("verdicts in {doc}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for model in ["thread2", "thread", "event"] {
        assert!(
            verdicts.iter().any(
                |v| v.starts_with(&format!("{model}'s kernel time per message"))
                    && v.contains("from 20 to 60 connections")
            ),
            "{verdicts:?}"
        );
    }
    assert!(
        verdicts
            .iter()
            .any(|v| v.starts_with("At 60 connections") && v.contains("delivered the most")),
        "{verdicts:?}"
    );
    let table = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with("Chat servers"))
        .unwrap();
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), if ngircd_here() { 8 } else { 6 });
    for r in rows {
        assert!(r[2].as_str().unwrap().ends_with("msg/s"), "{r}");
        assert!(r[3].as_str().unwrap().parse::<f64>().is_ok(), "{r}");
        // Kernel time comes from /proc in clock ticks (10 ms): a short
        // message phase of a fast server may see none, so one row may read
        // 0.00; a negative or missing value is still wrong.
        assert!(r[4].as_str().unwrap().parse::<f64>().unwrap() >= 0.0, "{r}");
    }
    assert!(
        rows.iter()
            .any(|r| r[4].as_str().unwrap().parse::<f64>().unwrap() > 0.0),
        "no point saw any kernel time per message: {rows:?}"
    );
    if ngircd_here() {
        let notes = doc["notes"].to_string();
        assert!(
            notes.contains("MaxPenaltyTime"),
            "ngircd's flood control said: {notes}"
        );
    }
    for chart in [
        "chat-messages",
        "chat-kernel-per-message",
        "chat-memory-per-connection",
    ] {
        assert!(
            out.join("charts").join(format!("{chart}.svg")).is_file(),
            "{chart}"
        );
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Chat servers"),
        "the study table is in the report"
    );
    assert!(
        html.contains("Kernel time per message"),
        "the charts are in the report"
    );
}
