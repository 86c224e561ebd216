//! `smtlab run -w web` and `-w nginx` through the binary (issue 17, item
//! 5): every architecture measured with a server started per sample on the
//! point's CPUs and the load generator on the others, per-request costs
//! stored with each sample, hardware counters present or "unsupported"
//! with the reason, no server left behind (also after Ctrl-C), and bad
//! input one line with exit 2.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{assert_success, assert_usage_error, processes_with_mark, smtlab, wait_gone};

fn exe() -> PathBuf {
    assert_cmd::cargo::cargo_bin("smtlab")
}

fn two_cpus() -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        support::skip(&format!(
            "server and load generator need 2 CPUs, this machine gives {n}"
        ));
    }
    n >= 2
}

/// smtlab with the file set cached under `cache` (not the user's home) and
/// a mark in its environment.
fn command(cache: &Path, mark: &str, args: &[&str]) -> StdCommand {
    let mut c = StdCommand::new(exe());
    c.args(args)
        .env("XDG_CACHE_HOME", cache)
        .env("SMTLAB_TEST_MARK", mark)
        .stdin(Stdio::null());
    c
}

#[test]
fn every_architecture_and_nginx_serves_with_its_costs_per_request() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let mark = format!("web-run-{}", std::process::id());
    let nginx = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
        .iter()
        .any(|p| Path::new(p).is_file());
    if !nginx {
        support::skip("nginx is not installed: only smtlab's web server is measured");
    }
    let workloads = if nginx { "web,nginx" } else { "web" };
    let out = command(
        dir.path(),
        &mark,
        &[
            "run",
            "-w",
            workloads,
            "--model",
            "process,thread,event,staged",
            "--threads",
            "1",
            "--param",
            "files=5MB",
            "--duration",
            "300ms",
            "--warmup",
            "0",
            "--min-samples",
            "2",
            "--max-samples",
            "2",
            "--json",
            "--db",
            &db,
        ],
    )
    .output()
    .unwrap();
    assert_success(&out, "run -w web");
    assert!(wait_gone(&mark).is_empty(), "a server was left running");
    // The file set was written once, into the cache.
    assert!(dir
        .path()
        .join("smtlab/web-files/dirs1/dir00000/class3_8")
        .is_file());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = doc["points"].as_array().unwrap();
    let mut seen: Vec<(String, String)> = Vec::new();
    for p in points {
        let server = p["workload"].as_str().unwrap().to_string();
        let model = p["model"].as_str().unwrap().to_string();
        let what = format!("{server} {model}");
        assert_eq!(p["samples"], 2, "{what}: {p}");
        assert_eq!(p["failed"], 0, "{what}: {}", p["failures"]);
        assert_eq!(p["unit"], "req/s");
        assert!(p["median"].as_f64().unwrap() > 100.0, "{what}: {p}");
        // The server on CPU 0 (compact), the load generator on CPU 1.
        assert_eq!(p["cpus"], serde_json::json!([0]), "{what}");
        let x = &p["extras"];
        assert_eq!(x["client_pinned"], 1.0, "{what}: {x}");
        let user = x["server_user_us_per_req"].as_f64().unwrap();
        let sys = x["server_sys_us_per_req"].as_f64().unwrap();
        // A request costs the server some CPU, and not a whole second.
        assert!(user + sys > 0.5 && user + sys < 1e5, "{what}: {x}");
        assert!(x["voluntary_cs_per_req"].as_f64().unwrap() >= 0.0);
        assert!(x["latency_p50_us"].as_f64().unwrap() > 0.0);
        // No warm-up: what was answered in the window was sent in it; what
        // was still waiting at its end is counted apart, at most one per
        // connection (two: two per worker).
        let sent = x["requests_sent"].as_f64().unwrap();
        assert!(
            sent >= x["requests_answered"].as_f64().unwrap(),
            "{what}: {x}"
        );
        let waiting = x["requests_in_flight_at_end"].as_f64().unwrap();
        assert!((0.0..=2.0).contains(&waiting), "{what}: {x}");
        if server == "web" {
            // The server counted at least what the client saw answered.
            assert!(
                x["server_requests"].as_f64().unwrap() >= x["requests_answered"].as_f64().unwrap(),
                "{what}: {x}"
            );
        }
        // Every hardware counter has a value or says why not.
        for c in p["counters"].as_array().unwrap() {
            if c["status"] != "ok" {
                assert!(c["reason"].as_str().is_some_and(|r| !r.is_empty()), "{c}");
            }
        }
        seen.push((server, model));
    }
    let mut want: Vec<(String, String)> = ["process", "thread", "event", "staged"]
        .iter()
        .map(|m| ("web".to_string(), m.to_string()))
        .collect();
    if nginx {
        want.push(("nginx".into(), "event".into()));
    }
    assert_eq!(seen, want);

    // The text output names the per-request costs.
    let text = smtlab().args(["show", "--db", &db]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("point 0 per request: server CPU"), "{text}");
}

#[test]
fn ctrl_c_during_a_server_sample_keeps_what_was_measured_and_leaves_no_server() {
    if !two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db").display().to_string();
    let mark = format!("web-sigint-{}", std::process::id());
    let mut child = command(
        dir.path(),
        &mark,
        &[
            "run",
            "-w",
            "web",
            "--model",
            "process",
            "--threads",
            "1",
            "--param",
            "files=5MB",
            "--duration",
            "700ms",
            "--warmup",
            "0",
            "--min-samples",
            "5",
            "--max-samples",
            "5",
            "--db",
            &db,
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // One sample committed, the next one's server running.
    let until = Instant::now() + Duration::from_secs(60);
    let committed = || -> u64 {
        let out = smtlab()
            .args(["runs", "--json", "--db", &db])
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| v[0]["samples"].as_u64())
            .unwrap_or(0)
    };
    while committed() < 1 {
        assert!(Instant::now() < until, "no sample within 60 s");
        assert!(child.try_wait().unwrap().is_none(), "smtlab ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let servers = processes_with_mark(&mark).len();
    assert!(servers >= 2, "smtlab and its server: {servers} processes");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(wait_gone(&mark).is_empty(), "a server was left running");
    let runs: Value = serde_json::from_slice(
        &smtlab()
            .args(["runs", "--json", "--db", &db])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(runs[0]["status"], "interrupted");
    assert!(runs[0]["samples"].as_u64().unwrap() >= 1);
}

#[test]
fn bad_server_input_is_one_line_and_exit_2() {
    let web = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "-w", "web", "--dry-run"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (web(&["--param", "files=huge"]), "--param files=huge"),
        (web(&["--param", "connections=0"]), "--param connections=0"),
        (
            web(&["--param", "url=index.html"]),
            "--param url=index.html",
        ),
        (web(&["--param", "threads=2"]), "--param threads"),
        (web(&["--client-cpus", "x"]), "--client-cpus"),
        (web(&["--model", "hybrid:1x2"]), "--model hybrid:1x2"),
        (web(&["--work", "5"]), "--work"),
        (
            ["run", "-w", "nginx", "--model", "process", "--dry-run"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            "--model",
        ),
        (
            ["run", "-w", "spin", "--model", "event", "--dry-run"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            "--model event",
        ),
        (
            ["run", "-w", "spin", "--client-cpus", "1", "--dry-run"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            "--client-cpus 1",
        ),
        (
            ["run", "-w", "apache", "--dry-run"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            "servers: web, nginx",
        ),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_usage_error(&args, needle);
    }
}

#[test]
fn dry_run_plans_servers_for_an_smt_machine() {
    let out = smtlab()
        .args([
            "run",
            "-w",
            "web,nginx",
            "--model",
            "process,thread,event,staged",
            "--threads",
            "2",
            "--placement",
            "smt:0,core",
            "--synthetic",
            "core:4 pu:2",
            "--dry-run",
            "--json",
        ])
        .output()
        .unwrap();
    assert_success(&out, "run -w web,nginx --dry-run");
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let points = plan["points"].as_array().unwrap();
    // web: 4 models x 2 placements; nginx: event x 2 placements.
    assert_eq!(points.len(), 10, "{plan}");
    let nginx = points
        .iter()
        .filter(|p| p["program"]["server"] == "nginx")
        .count();
    assert_eq!(nginx, 2);
}
