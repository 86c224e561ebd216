//! `smtlab run -w chat` and `-w ngircd` through the binary (issue 18, item
//! 4): each model measured with a server started per sample on the
//! point's CPUs and the load generator on the others; per message and per
//! connection costs of the message phase stored with each sample; counters
//! present or "unsupported" with the reason; no server left behind; bad
//! input one line with exit 2.

mod support;

use std::path::Path;

use serde_json::Value;
use support::{assert_success, assert_usage_error, smtlab};

fn two_cpus() -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        support::skip(&format!(
            "server and load generator need 2 CPUs, this machine gives {n}"
        ));
    }
    n >= 2
}

#[test]
fn every_model_and_ngircd_report_their_costs_per_message() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db").display().to_string();
    let ngircd = ["/usr/sbin/ngircd", "/usr/local/sbin/ngircd"]
        .iter()
        .any(|p| Path::new(p).is_file());
    if !ngircd {
        support::skip("ngircd is not installed: only smtlab's chat server is measured");
    }
    let workloads = if ngircd { "chat,ngircd" } else { "chat" };
    let out = smtlab()
        .args(["run", "-w", workloads, "--model", "thread2,thread,event"])
        .args([
            "--threads",
            "1",
            "--param",
            "connections=40",
            "--param",
            "messages=10",
        ])
        .args(["--warmup", "0", "--min-samples", "2", "--max-samples", "2"])
        .args(["--json", "--db", &db])
        .output()
        .unwrap();
    assert_success(&out, &format!("run -w {workloads}"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = doc["points"].as_array().unwrap();
    let mut seen = Vec::new();
    let mut cpu_seen = false;
    for p in points {
        // `chat connections=40`: the server, then its connections.
        let label = p["workload"].as_str().unwrap();
        assert!(label.ends_with(" connections=40"), "{label}");
        let server = label.split(' ').next().unwrap().to_string();
        let model = p["model"].as_str().unwrap().to_string();
        let what = format!("{server} {model}");
        assert_eq!(p["samples"], 2, "{what}: {p}");
        assert_eq!(p["failed"], 0, "{what}: {}", p["failures"]);
        assert_eq!(p["unit"], "msg/s");
        assert!(p["median"].as_f64().unwrap() > 100.0, "{what}: {p}");
        assert_eq!(p["cpus"], serde_json::json!([0]), "{what}");
        let x = &p["extras"];
        // 40 users in rooms of 20 send 10 messages each, 19 deliveries each.
        assert_eq!(x["connections"], 40.0, "{what}: {x}");
        assert_eq!(x["messages_sent"], 400.0, "{what}: {x}");
        assert_eq!(x["deliveries"], 7600.0, "{what}: {x}");
        assert_eq!(x["client_pinned"], 1.0, "{what}: {x}");
        // CPU time comes from /proc in clock ticks: a fast server's short
        // message phase may see none (0.0, as the event server did on a
        // quiet machine); negative, missing or absurd is still wrong, and
        // some point must see some.
        let user = x["server_user_us_per_msg"].as_f64().unwrap();
        let sys = x["server_sys_us_per_msg"].as_f64().unwrap();
        assert!(user >= 0.0 && sys >= 0.0 && user + sys < 1e4, "{what}: {x}");
        cpu_seen |= user + sys > 0.0;
        // The server process's threads: its main thread, the acceptor and
        // two per connection, or one, or the main thread and one loop;
        // ngircd has one thread.
        let threads = x["server_threads"].as_f64().unwrap();
        let want = match (server.as_str(), model.as_str()) {
            ("chat", "thread2") => 82.0,
            ("chat", "thread") => 42.0,
            ("chat", _) => 2.0,
            _ => 1.0,
        };
        assert_eq!(threads, want, "{what}: {x}");
        assert!(x["server_pss_kb_per_connection"].as_f64().unwrap() >= 0.0);
        for c in p["counters"].as_array().unwrap() {
            if c["status"] != "ok" {
                assert!(c["reason"].as_str().is_some_and(|r| !r.is_empty()), "{c}");
            }
        }
        seen.push((server, model));
    }
    let mut want: Vec<(String, String)> = ["thread2", "thread", "event"]
        .iter()
        .map(|m| ("chat".to_string(), m.to_string()))
        .collect();
    if ngircd {
        want.push(("ngircd".into(), "event".into()));
    }
    assert_eq!(seen, want);
    assert!(cpu_seen, "no point saw any server CPU time: {doc}");
    let text = smtlab().args(["show", "--db", &db]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("point 0 per message delivered: server CPU"),
        "{text}"
    );
    // No server left: every sample's server was reaped.
    let left = std::process::Command::new("pgrep")
        .args(["-f", "serve chat --model"])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "a chat server was left running");
}

#[test]
fn bad_chat_points_are_one_line_and_exit_2() {
    assert_usage_error(
        &["run", "-w", "chat", "--model", "process", "--dry-run"],
        "--model process: the chat server runs as thread2, thread or event",
    );
    assert_usage_error(
        &["run", "-w", "ngircd", "--model", "thread", "--dry-run"],
        "ngircd has one architecture",
    );
    assert_usage_error(
        &[
            "run",
            "-w",
            "chat",
            "--model",
            "event",
            "--param",
            "files=5MB",
            "--dry-run",
        ],
        "--param files",
    );
    assert_usage_error(
        &[
            "run",
            "-w",
            "chat",
            "--model",
            "event",
            "--param",
            "connections=30",
            "--dry-run",
        ],
        "--param connections=30",
    );
    assert_usage_error(
        &["run", "-w", "spin", "--model", "thread2", "--dry-run"],
        "--model thread2: only servers",
    );
}
