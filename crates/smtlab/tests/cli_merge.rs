//! `smtlab merge` through the binary (issue 20): the stores of two hosts
//! (`SMTLAB_HOSTNAME`) merged and listed with their hosts, merging again
//! adds nothing, refusals are one line with exit 2 and write nothing, and a
//! merge into a store that a run is writing loses none of its samples.

mod support;

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{assert_success, json, smtlab};

/// A short run of spin as host `host` into `db`: 1 thread, 100 ms
/// samples, two points (thread and process), two samples each.
fn run_as(host: &str, db: &Path) -> Value {
    let out = smtlab()
        .env("SMTLAB_HOSTNAME", host)
        .args([
            "run",
            "-w",
            "spin",
            "--model",
            "thread,process",
            "--threads",
            "1",
            "--duration",
            "100ms",
            "--warmup",
            "0",
            "--min-samples",
            "2",
            "--max-samples",
            "2",
            "--no-counters",
            "--json",
            "--db",
        ])
        .arg(db)
        .output()
        .unwrap();
    assert_success(&out, &format!("run as {host}"));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `smtlab merge INPUTS -o OUT [extra]`: exit code, stdout, stderr.
fn merge(inputs: &[&Path], out: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let o = smtlab()
        .arg("merge")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn merge_json(inputs: &[&Path], out: &Path) -> Value {
    let (code, stdout, stderr) = merge(inputs, out, &["--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

/// `runs --json` of `db`: (host, points, samples) of each run, in id order.
fn runs(db: &Path) -> Vec<(String, u64, u64)> {
    json(&["runs", "--json", "--db", path(db)])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["hostname"].as_str().unwrap_or("?").to_string(),
                r["points"].as_u64().unwrap(),
                r["samples"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Two stores, of hosts alpha and beta.
fn two_hosts(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("alpha.db"), dir.join("beta.db"));
    run_as("alpha", &a);
    run_as("beta", &b);
    (a, b)
}

#[test]
fn two_hosts_merged_are_listed_with_their_hosts_and_merging_again_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_hosts(dir.path());
    let fleet = dir.path().join("fleet.db");

    let (code, out, err) = merge(&[&a, &b], &fleet, &[]);
    assert_eq!(code, Some(0), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{} (host alpha): 1 run added, 0 already present; 2 points, 4 samples copied",
                a.display()
            ),
            format!(
                "{} (host beta): 1 run added, 0 already present; 2 points, 4 samples copied",
                b.display()
            ),
            format!("{}: 2 runs from 2 hosts (alpha, beta)", fleet.display()),
        ]
    );
    assert_eq!(
        runs(&fleet),
        [("alpha".into(), 2, 4), ("beta".into(), 2, 4)]
    );
    // The text listing has the host column.
    let listed = smtlab()
        .args(["runs", "--db", path(&fleet)])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let header = listed.lines().next().unwrap();
    assert!(header.contains("  host  "), "{listed}");
    for (line, host) in listed.lines().skip(1).zip(["alpha", "beta"]) {
        // argv[0] is the binary as the test ran it.
        let (before, command) = line.split_once(&format!("  {host}  ")).expect(&listed);
        assert!(before.contains("complete"), "{listed}");
        assert!(command.contains(" run -w spin "), "{listed}");
    }
    // A merged run shows as it was measured: its host, its results.
    let shown = json(&["show", "2", "--json", "--db", path(&fleet)]);
    assert_eq!(shown["run"]["host"]["hostname"], "beta");
    let original = json(&["show", "1", "--json", "--db", path(&b)]);
    for k in ["points", "status"] {
        assert_eq!(shown[k], original[k], "{k}");
    }

    // Again, and with the inputs the other way round: nothing added.
    let again = merge_json(&[&b, &a], &fleet);
    assert_eq!(again["schema"], "smtlab.merge/1");
    assert_eq!(again["runs"], 2);
    assert_eq!(again["hosts"], serde_json::json!(["alpha", "beta"]));
    for input in again["inputs"].as_array().unwrap() {
        assert_eq!(input["runs_added"], 0, "{input}");
        assert_eq!(input["runs_present"], 1, "{input}");
        assert_eq!(input["samples"], 0, "{input}");
        assert_eq!(input["store_id"].as_str().unwrap().len(), 32, "{input}");
    }
    assert_eq!(
        runs(&fleet),
        [("alpha".into(), 2, 4), ("beta".into(), 2, 4)]
    );
    // Where each run was measured: beta's store, its run 1.
    let beta_store = again["inputs"][0]["store_id"].as_str().unwrap();
    assert_eq!(
        json(&["show", "2", "--json", "--db", path(&fleet)])["origin"],
        serde_json::json!({"store_id": beta_store, "run_id": 1})
    );
    assert!(original["origin"].is_null(), "measured there");
    let text = smtlab()
        .args(["show", "2", "--db", path(&fleet)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("\n  merged: run 1 of store {beta_store}\n")),
        "{text}"
    );
    // The fleet merged into another store brings each run once more.
    let other = dir.path().join("other.db");
    let doc = merge_json(&[&fleet, &a], &other);
    assert_eq!(doc["inputs"][0]["runs_added"], 2);
    assert_eq!(doc["inputs"][1]["runs_present"], 1);
}

/// The output's bytes, or `None` when it does not exist.
fn bytes(p: &Path) -> Option<Vec<u8>> {
    std::fs::read(p).ok()
}

/// A refused merge: exit 2, one line naming `names` and saying `why`, the
/// output as it was.
fn refused(inputs: &[&Path], out: &Path, names: &Path, why: &str) {
    let before = bytes(out);
    let (code, stdout, stderr) = merge(inputs, out, &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&names.display().to_string()), "{stderr}");
    assert!(stderr.contains(why), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert_eq!(bytes(out), before, "{stderr}: the output is untouched");
}

#[test]
fn refusals_are_one_line_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = d.join("alpha.db");
    run_as("alpha", &a);
    let text = d.join("notes.txt");
    std::fs::write(&text, "not a database\n").unwrap();
    let newer = d.join("newer.db");
    run_as("beta", &newer);
    // user_version is the 4 bytes at offset 60 of the database header,
    // big-endian (sqlite.org/fileformat.html); the run has ended, so its
    // WAL is checkpointed into the file and gone.
    assert!(!d.join("newer.db-wal").exists());
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&newer)
        .unwrap();
    f.seek(SeekFrom::Start(60)).unwrap();
    f.write_all(&999u32.to_be_bytes()).unwrap();
    drop(f);
    let missing = d.join("missing.db");

    // Into a new output: it is not created.
    let fleet = d.join("fleet.db");
    for (bad, why) in [
        (&text, "not an smtlab database"),
        (&newer, "schema version 999 is newer than this smtlab's"),
        (&missing, "no such file"),
    ] {
        refused(&[&a, bad], &fleet, bad, why);
        assert!(!fleet.exists());
    }
    // Into an existing output: not a byte changes.
    merge_json(&[&a], &fleet);
    let link = d.join("link.db");
    std::os::unix::fs::symlink(&fleet, &link).unwrap();
    for (bad, why) in [
        (&fleet, "it is the output store"),
        (&link, "it is the output store"),
        (&text, "not an smtlab database"),
        (&newer, "schema version 999"),
    ] {
        refused(&[&a, bad], &fleet, bad, why);
    }
    // Not a store as the output.
    refused(&[&a], &text, &text, "not an smtlab database");
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "not a database\n");
    // No input at all is clap's usage error.
    let (code, _, err) = merge(&[], &fleet, &[]);
    assert_eq!(code, Some(2), "{err}");
}

/// `smtlab run` writing samples into the store while merges go into it:
/// the run ends well (a sample it could not commit would fail it) with
/// every sample stored, and every merged run is there.
#[test]
fn a_merge_into_a_store_a_run_is_writing_loses_none_of_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_hosts(dir.path());
    let fleet = dir.path().join("fleet.db");
    let exe = assert_cmd::cargo::cargo_bin("smtlab");
    let writer = Command::new(&exe)
        .env("SMTLAB_HOSTNAME", "omega")
        .args([
            "run",
            "-w",
            "spin",
            "--threads",
            "1",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--min-samples",
            "30",
            "--max-samples",
            "30",
            "--no-counters",
            "--json",
            "--db",
        ])
        .arg(&fleet)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Merge as soon as the run has committed a sample, and again until it
    // has ended.
    let start = Instant::now();
    while !fleet.exists() || runs(&fleet).first().is_none_or(|r| r.2 == 0) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run never wrote"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut merges = 0;
    let mut added = 0;
    let done = loop {
        let doc = merge_json(&[&a, &b], &fleet);
        merges += 1;
        added += doc["inputs"][0]["runs_added"].as_u64().unwrap()
            + doc["inputs"][1]["runs_added"].as_u64().unwrap();
        let left = runs(&fleet);
        if left[0].2 == 30 {
            break left;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run never ended"
        );
    };
    let out = writer.wait_with_output().unwrap();
    assert_success(&out, &format!("the run beside {merges} merges"));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["points"][0]["samples"], 30);
    assert!(merges >= 2, "merged {merges} times while the run wrote");
    assert_eq!(added, 2, "each merged run added once");
    // The run's own row first, every one of its samples, then the merged.
    let now = runs(&fleet);
    assert_eq!(
        now,
        [
            ("omega".into(), 1, 30),
            ("alpha".into(), 2, 4),
            ("beta".into(), 2, 4)
        ]
    );
    assert_eq!(done[1..], now[1..]);
}
