//! A fleet through the binary (issue 20): stores made on this machine under
//! two host names (`SMTLAB_HOSTNAME`, `--db DIR/{host}.db`), merged with
//! `smtlab merge`, compared with `compare --by host` and reported with
//! `report --fleet`; the ranks of one `mpirun` job on this host, each
//! writing `{rank}.db` with `--shared-host`, and refused without it; a
//! `{rank}` without a launcher, and an unknown placeholder, refused in one
//! line.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::{assert_success, assert_usage_error, smtlab};

/// Every variable a launcher sets that `smtlab_dsm::launcher_from_env`
/// reads: removed where a test needs no launcher (the tests themselves may
/// run under one).
const LAUNCHER_VARS: [&str; 14] = [
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MPI_LOCALNRANKS",
    "SLURM_PROCID",
    "SLURM_NTASKS",
    "SLURM_LOCALID",
    "SLURM_STEP_TASKS_PER_NODE",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_NODEID",
];

/// smtlab without any launcher's variables.
fn alone() -> assert_cmd::Command {
    let mut c = smtlab();
    for v in LAUNCHER_VARS {
        c.env_remove(v);
    }
    c
}

/// A short sweep: spin at N = 1 and 2, three samples of 100 ms each.
const SWEEP: [&str; 13] = [
    "run",
    "-w",
    "spin",
    "--threads",
    "1,2",
    "--duration",
    "100ms",
    "--warmup",
    "0",
    "--min-samples",
    "3",
    "--max-samples",
    "3",
];

/// `smtlab run` of the sweep as host `host` into `db` (a `--db` text, its
/// placeholders unexpanded).
fn run_as(host: &str, db: &str) {
    let out = alone()
        .env("SMTLAB_HOSTNAME", host)
        .args(SWEEP)
        .args(["--db", db, "--json"])
        .output()
        .unwrap();
    assert_success(&out, host);
}

/// Whether this smtlab has `merge` (built beside this work).
fn has_merge() -> bool {
    smtlab()
        .args(["merge", "--help"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `smtlab merge INPUTS -o OUT`, insisting on success.
fn merge(inputs: &[&Path], out: &Path) {
    let o = smtlab()
        .arg("merge")
        .args(inputs)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert_success(&o, "merge");
}

fn text(args: &[&str]) -> String {
    let out = smtlab().args(args).output().unwrap();
    assert_success(&out, &format!("{args:?}"));
    String::from_utf8(out.stdout).unwrap()
}

/// The run ids of `db` by host name.
fn runs_by_host(db: &str) -> Vec<(String, i64)> {
    let runs = support::json(&["runs", "--db", db, "--json"]);
    runs.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["hostname"].as_str().unwrap_or("?").to_string(),
                r["id"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[test]
// A script read top to bottom: two hosts' runs, merged, compared, reported.
#[allow(clippy::too_many_lines)]
fn two_hosts_on_this_machine_merged_compared_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("{host}.db").display().to_string();
    run_as("alpha", &template);
    run_as("beta", &template);
    let (alpha, beta) = (dir.path().join("alpha.db"), dir.path().join("beta.db"));
    assert!(alpha.exists() && beta.exists(), "{{host}} expanded");
    // The stored host name is the one the test gave.
    let shown = support::json(&[
        "show",
        "latest",
        "--db",
        &alpha.display().to_string(),
        "--json",
    ]);
    assert_eq!(shown["run"]["host"]["hostname"], "alpha");
    assert!(shown["run"]["host"].get("shared_host").is_none());

    let fleet = dir.path().join("fleet.db");
    if has_merge() {
        merge(&[&alpha, &beta], &fleet);
    } else {
        support::skip(
            "`smtlab merge` is not built yet: the fleet store is made by running both hosts \
             into one store instead",
        );
        run_as("alpha", &fleet.display().to_string());
        run_as("beta", &fleet.display().to_string());
    }
    let db = fleet.display().to_string();
    let hosts = runs_by_host(&db);
    let id = |h: &str| hosts.iter().find(|(n, _)| n == h).unwrap().1;

    // Every host's latest run, point by point; the same machine twice, so
    // the same facts.
    let out = text(&["compare", "--by", "host", "--db", &db]);
    assert!(
        out.starts_with(&format!(
            "alpha (run {}), beta (run {}): 2 matching points",
            id("alpha"),
            id("beta")
        )),
        "{out}"
    );
    assert!(out.contains("spin thread compact N=1 glibc"), "{out}");
    assert!(out.contains("spin thread compact N=2 glibc"), "{out}");
    assert!(out.contains("beta/alpha speed [95% CI]"), "{out}");
    assert!(
        out.contains(
            "machines: alpha and beta: the same CPU model, SMT, kernel, THP, governor and \
             topology"
        ),
        "{out}"
    );
    let doc = support::json(&["compare", "--by", "host", "--db", &db, "--json"]);
    assert_eq!(doc["schema"], "smtlab.compare.hosts/1");
    let cmp = &doc["comparison"];
    assert_eq!(cmp["hosts"][0]["host"], "alpha");
    assert_eq!(cmp["hosts"][1]["host"], "beta");
    assert_eq!(cmp["points"].as_array().unwrap().len(), 2);
    for p in cmp["points"].as_array().unwrap() {
        let beta = &p["values"][1];
        assert!(beta["median"].as_f64().unwrap() > 0.0, "{p}");
        assert!(
            beta["vs_first"]["speed_ratio"].as_f64().unwrap() > 0.0,
            "{p}"
        );
    }
    assert_eq!(cmp["facts"]["differences"], Value::Array(Vec::new()));

    // Two runs of different hosts given explicitly say the same.
    let a = id("alpha").to_string();
    let b = id("beta").to_string();
    let out = text(&["compare", &b, &a, "--db", &db]);
    assert!(
        out.contains("machines: beta and alpha: the same CPU model"),
        "{out}"
    );
    // Their verdicts speak of the two hosts, not of "this machine".
    assert!(
        out.contains("  * Across hosts beta (A) and alpha (B), "),
        "{out}"
    );
    assert!(!out.contains("On this machine"), "{out}");
    let doc = support::json(&["compare", &b, &a, "--db", &db, "--json"]);
    assert_eq!(doc["facts"]["hosts"], serde_json::json!(["beta", "alpha"]));

    // The fleet's report: one chart per workload, both hosts in the table
    // (`-o` takes `{host}` as `--db` does).
    let report = dir.path().join("report-gamma");
    let o = smtlab()
        .env("SMTLAB_HOSTNAME", "gamma")
        .args(["report", "--fleet", "--db", &db, "-o"])
        .arg(dir.path().join("report-{host}"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.starts_with(&format!("{}\n", report.display())), "{out}");
    assert!(
        out.contains("Recommendations, per workload and host"),
        "{out}"
    );
    assert!(out.contains("Machines: alpha and beta: the same"), "{out}");
    // One workload, one chart: said in the singular.
    assert!(
        out.ends_with(&format!(
            "\nReport: {} (1 chart as PNG and SVG, summary.md, fleet.json in {})\n",
            report.join("report.html").display(),
            report.display()
        )),
        "{out}"
    );
    for f in ["report.html", "summary.md", "fleet.json"] {
        let len = std::fs::metadata(report.join(f)).unwrap().len();
        assert!(len > 0, "{f}");
    }
    let charts: Vec<String> = std::fs::read_dir(report.join("charts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut charts = charts;
    charts.sort();
    assert_eq!(charts, ["fleet-spin.png", "fleet-spin.svg"]);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("fleet.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "smtlab.fleet/1");
    let spin = &json["workloads"][0];
    assert_eq!(spin["program"], "spin");
    let on: Vec<&str> = spin["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(on, ["alpha", "beta"]);
    for h in spin["hosts"].as_array().unwrap() {
        let rec = &h["recommendations"][0]["short"];
        assert!(rec.as_str().unwrap().contains(", compact; "), "{h}");
        assert_eq!(h["line"]["points"].as_array().unwrap().len(), 2, "{h}");
    }
    let html = std::fs::read_to_string(report.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 1, "one chart, inline");
    assert!(html.contains("<td>alpha</td>") && html.contains("<td>beta</td>"));
    // The one script is smtlab's browser check of the charts; nothing is
    // fetched.
    assert_eq!(html.matches("<script").count(), 1, "only the render check");
    assert!(html.contains(r#"<p id="render-check""#));
    assert!(!html.contains("http://") && !html.contains("https://"));
    let svg = std::fs::read_to_string(report.join("charts/fleet-spin.svg")).unwrap();
    assert!(svg.contains("alpha (thread / compact)"), "a line per host");
    assert!(svg.contains("beta (thread / compact)"), "a line per host");
    let md = std::fs::read_to_string(report.join("summary.md")).unwrap();
    assert!(
        md.contains("| spin | alpha |") && md.contains("| spin | beta |"),
        "{md}"
    );

    // A store of one host has no hosts to compare.
    assert_usage_error(
        &[
            "compare",
            "--by",
            "host",
            "--db",
            &alpha.display().to_string(),
        ],
        "holds runs of one host only (alpha)",
    );
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `mpirun --oversubscribe -np 2 smtlab ARGS` on this host.
fn mpirun(args: &[&str]) -> std::process::Output {
    let exe = assert_cmd::cargo::cargo_bin("smtlab");
    let mut m = Command::new("mpirun");
    // Open MPI refuses root unless told; the tests may run as root.
    if is_root() {
        m.arg("--allow-run-as-root");
    }
    m.args(["--oversubscribe", "-np", "2"])
        .arg(&exe)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_ranks_of_one_mpirun_job_write_their_own_stores_when_sharing_is_meant() {
    if !has("mpirun") {
        support::skip("mpirun is not installed (openmpi-bin; scripts/setup.sh installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("{rank}.db").display().to_string();

    // Two tasks on this one host: refused, nothing measured or stored.
    let out = mpirun(&[&SWEEP[..], &["--db", &template]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // One line per rank, each whole: smtlab writes a line in one write, so
    // mpirun's own messages about the failed job, printed amid the ranks'
    // output, come before or after it and never inside.
    let refusal = "smtlab: Open MPI started 2 tasks of this job on this host, and they would \
                   disturb each other's measurements: start one per host (mpirun --map-by \
                   ppr:1:node), or add --shared-host if that is meant\n";
    assert_eq!(err.matches(refusal).count(), 2, "one line per rank: {err}");
    let ours = err.lines().filter(|l| l.starts_with("smtlab: ")).count();
    assert_eq!(ours, 2, "nothing else from smtlab: {err}");
    assert!(!dir.path().join("0.db").exists() && !dir.path().join("1.db").exists());

    // Meant: each rank measures into its own store, which says so.
    let out = mpirun(&[&SWEEP[..], &["--shared-host", "--db", &template]].concat());
    assert_success(&out, "mpirun -np 2 smtlab run --shared-host");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches(
            "smtlab: warning: Open MPI runs 2 tasks of this job on this host (--shared-host)"
        )
        .count(),
        2,
        "{err}"
    );
    let stores = ["0.db", "1.db"].map(|f| dir.path().join(f));
    for s in &stores {
        let shown = support::json(&["show", "latest", "--db", &s.display().to_string(), "--json"]);
        assert_eq!(
            shown["run"]["host"]["shared_host"],
            serde_json::json!({"launcher": "Open MPI", "tasks": 2}),
            "{}",
            s.display()
        );
        assert_eq!(shown["status"], "complete");
        let text = text(&["show", "latest", "--db", &s.display().to_string()]);
        assert!(
            text.contains("shared its host: Open MPI ran 2 tasks of the job on it"),
            "{text}"
        );
    }
    if !has_merge() {
        support::skip("`smtlab merge` is not built yet: the ranks' stores are not merged");
        return;
    }
    let merged = dir.path().join("ranks.db");
    merge(&[&stores[0], &stores[1]], &merged);
    let runs = support::json(&["runs", "--db", &merged.display().to_string(), "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
}

#[test]
fn a_second_task_on_this_host_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db").display().to_string();
    // What Open MPI and Slurm set for the second of two tasks on one host.
    let launchers: [&[(&str, &str)]; 2] = [
        &[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
        ],
        &[
            ("SLURM_PROCID", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_NODEID", "0"),
            ("SLURM_STEP_TASKS_PER_NODE", "2"),
        ],
    ];
    let study = ["study", "-w", "spin", "-n", "1", "--duration", "100ms"];
    for (vars, flag) in launchers
        .iter()
        .zip(["--map-by ppr:1:node", "--ntasks-per-node=1"])
    {
        for command in [&SWEEP[..], &study[..]] {
            let mut c = alone();
            for (k, v) in *vars {
                c.env(k, v);
            }
            let out = c.args(command).args(["--db", &db]).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(
                err.contains("started 2 tasks of this job on this host"),
                "{err}"
            );
            assert!(err.contains(flag) && err.contains("--shared-host"), "{err}");
        }
    }
    assert!(!Path::new(&db).exists(), "nothing stored");
}

#[test]
fn placeholders_without_a_value_or_a_meaning_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rank = dir.path().join("{rank}.db").display().to_string();
    let out = alone().args(SWEEP).args(["--db", &rank]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("{rank} needs a launcher's rank"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // Every command with --db expands it the same way.
    let out = alone().args(["runs", "--db", &rank]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));

    let typo = dir.path().join("{hots}.db").display().to_string();
    assert_usage_error(
        &["runs", "--db", &typo],
        "unknown placeholder {hots}; --db knows {host}, {rank}",
    );
    // A host name that would climb out of the directory is one file name
    // (its `/` percent-encoded).
    let host = dir.path().join("{host}.db").display().to_string();
    let out = alone()
        .env("SMTLAB_HOSTNAME", "../up")
        .args(SWEEP)
        .args(["--db", &host])
        .output()
        .unwrap();
    assert_success(&out, "run as host ../up");
    assert!(dir.path().join("..%2Fup.db").exists());
}
