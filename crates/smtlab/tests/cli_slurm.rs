//! smtlab under a real Slurm (issue 32, item 1): a one-node cluster of
//! Debian's slurm-wlm and munge (tests/support/slurm.rs) runs smtlab as a
//! cluster's users do. `srun` DSM ranks verify and are stored for every
//! mechanism; two `srun` tasks of `smtlab run` on one host are both
//! refused in one line; `sbatch` jobs write `{host}` stores that merge
//! and compare by host; a job cancelled mid-run says so and leaves no
//! process or rendezvous behind; README's Slurm recipes run as written.
//!
//! One cluster for the whole file (it started in about 1 s on the 2-vCPU
//! development VM, in about 15 s where the issue tried it by hand), so
//! one test runs the scenarios in order, each a function named after what
//! it pins, and prints how long each took. Needs root and the packages;
//! skipped with the reason otherwise.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::slurm::{Cluster, Running};
use support::{assert_success, processes_with_mark, smtlab, wait_gone};

const MECHANISMS: [&str; 5] = ["sigio", "thr1", "thr2", "thr3", "poll"];

/// A Slurm job's step is seconds here; a minute means it is stuck.
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// One scenario of the file, run on the shared cluster.
type Scenario = fn(&Cluster);

fn exe() -> PathBuf {
    assert_cmd::cargo::cargo_bin("smtlab")
}

#[test]
fn smtlab_runs_under_a_real_one_node_slurm_cluster() {
    let started = Instant::now();
    let Some(cluster) = Cluster::start() else {
        return;
    };
    let up = started.elapsed();
    let scenarios: [(&str, Scenario); 6] = [
        (
            "srun_dsm_ranks_verify_and_store_for_every_mechanism",
            srun_dsm_ranks_verify_and_store_for_every_mechanism,
        ),
        (
            "srun_two_tasks_of_run_on_one_host_are_both_refused",
            srun_two_tasks_of_run_on_one_host_are_both_refused,
        ),
        (
            "sbatch_jobs_write_host_stores_that_merge_and_compare_by_host",
            sbatch_jobs_write_host_stores_that_merge_and_compare_by_host,
        ),
        (
            "scancel_mid_run_stops_srun_ranks_with_a_message_and_leaves_nothing",
            scancel_mid_run_stops_srun_ranks_with_a_message_and_leaves_nothing,
        ),
        (
            "scancel_mid_run_stops_smtlab_run_and_its_ranks_and_leaves_nothing",
            scancel_mid_run_stops_smtlab_run_and_its_ranks_and_leaves_nothing,
        ),
        (
            "readme_slurm_recipes_run_as_written",
            readme_slurm_recipes_run_as_written,
        ),
    ];
    for (name, scenario) in scenarios {
        let t = Instant::now();
        scenario(&cluster);
        eprintln!("{name}: {:.1} s", t.elapsed().as_secs_f64());
    }
    eprintln!(
        "cluster up in {:.1} s, scenarios done in {:.1} s",
        up.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// `srun -n 2 smtlab rank` with each mechanism: rank 0 alone prints, the
/// launcher it names is Slurm and the job Slurm's `JOB.STEP`; the run
/// verifies and is stored as a one-point run of 2 processes; every
/// mechanism gives the same checksum; nothing is left in TMPDIR.
fn srun_dsm_ranks_verify_and_store_for_every_mechanism(c: &Cluster) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ranks.db");
    let db_text = db.display().to_string();
    let mut checksums = Vec::new();
    for m in MECHANISMS {
        let out = c.output_within(
            c.command("srun")
                .args(["-n", "2"])
                .arg(exe())
                .args(["rank", "-w", "sor", "--comm", m])
                .args(["--param", "n=64", "--param", "iterations=20", "--json"])
                .args(["--db", &db_text])
                .env("TMPDIR", dir.path()),
            STEP_LIMIT,
        );
        let what = format!("srun -n 2 smtlab rank -w sor --comm {m}");
        assert_success(&out, &what);
        // One document: rank 1 prints nothing.
        let rank0: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{what}: {e}\n{}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(rank0["launcher"], "Slurm", "{what}: {rank0}");
        let job = rank0["job"].as_str().unwrap();
        let (id, step) = job.split_once('.').unwrap();
        assert!(
            id.parse::<u64>().is_ok() && step.parse::<u64>().is_ok(),
            "{what}: Slurm's JOB.STEP, got {job}"
        );
        assert_eq!(rank0["status"], "ok", "{what}: {rank0}");
        let report = &rank0["report"];
        assert_eq!(report["verified"], true, "{what}: {report}");
        assert_eq!(report["ranks"], 2);
        assert_eq!(report["comm"], m);
        assert_eq!(report["per_rank"].as_array().unwrap().len(), 2);

        let stored = support::json(&["show", "latest", "--db", &db_text, "--json"]);
        let points = stored["points"].as_array().unwrap();
        assert_eq!(points.len(), 1, "{what}: {stored}");
        let p = &points[0];
        assert_eq!(p["workload"], format!("sor {m}"));
        assert_eq!((&p["model"], &p["threads"]), (&"process".into(), &2.into()));
        // The launcher placed the ranks.
        assert_eq!(p["placement"], "none");
        assert_eq!(p["samples"], 1, "{what}: {}", p["failures"]);
        assert_eq!(p["extras"]["verified"], 1.0, "{what}: {p}");
        assert_eq!(p["extras"]["checksum"], report["checksum"]);
        // What the store keeps of the launch: the ranks' command line.
        let line = stored["run"]["command_line"].as_array().unwrap();
        assert!(line.iter().any(|a| a == "rank") && line.iter().any(|a| a == m));
        checksums.push(report["checksum"].as_f64().unwrap());
    }
    assert!(
        checksums.iter().all(|s| *s == checksums[0]),
        "{checksums:?}"
    );
    let runs = support::json(&["runs", "--db", &db_text, "--json"]);
    assert_eq!(runs.as_array().unwrap().len(), MECHANISMS.len(), "{runs}");
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

/// Two tasks of `smtlab run` on one host would disturb each other's
/// measurements: both refuse in one line (each task's own, as `--label`
/// shows), srun exits 2, and neither `{rank}` store is made; with
/// `--shared-host` each writes its own `{rank}` store, recording it.
fn srun_two_tasks_of_run_on_one_host_are_both_refused(c: &Cluster) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("{rank}.db").display().to_string();
    let out = c.output_within(
        c.command("srun")
            .args(["-n", "2", "--label"])
            .arg(exe())
            .args(["run", "-w", "spin", "--threads", "1", "--duration", "100ms"])
            .args(["--db", &db]),
        STEP_LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let refusal = "smtlab: Slurm started 2 tasks of this job on this host, and they would \
                   disturb each other's measurements: start one per host (srun \
                   --ntasks-per-node=1), or add --shared-host if that is meant";
    for task in ["0", "1"] {
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.split_once(": ").is_some_and(|(t, _)| t.trim() == task))
            .collect();
        assert_eq!(
            lines,
            [format!("{task}: {refusal}")],
            "task {task}: one line, the refusal\n{err}"
        );
    }
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{err}");

    // Meant (--shared-host): each task measures into its own {rank}
    // store, Slurm's SLURM_PROCID, and records that it shared its host.
    let out = c.output_within(
        c.command("srun")
            .args(["-n", "2"])
            .arg(exe())
            .args(["run", "-w", "spin", "--threads", "1", "--duration", "100ms"])
            .args(["--warmup", "0", "--min-samples", "1", "--max-samples", "1"])
            .args(["--shared-host", "--db", &db]),
        STEP_LIMIT,
    );
    assert_success(&out, "srun -n 2 smtlab run --shared-host");
    for rank in ["0", "1"] {
        let store = dir.path().join(format!("{rank}.db")).display().to_string();
        let shown = support::json(&["show", "latest", "--db", &store, "--json"]);
        assert_eq!(
            shown["run"]["host"]["shared_host"],
            serde_json::json!({"launcher": "Slurm", "tasks": 2}),
            "{store}"
        );
    }
}

/// Two `sbatch --ntasks-per-node=1` jobs, each a script running
/// `smtlab run ... --db 'batch-{host}.db'`: one as this host, one as host
/// `beta` (SMTLAB_HOSTNAME, as README's fleet example makes a second host
/// on one machine). Both complete, their stores are named by host, and
/// `merge` then `compare --by host` and `show` see both hosts.
fn sbatch_jobs_write_host_stores_that_merge_and_compare_by_host(c: &Cluster) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = d.join("job.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec {} run -w spin --threads 1,2 --duration 100ms --warmup 0 \
             --min-samples 3 --max-samples 3 --db 'batch-{{host}}.db'\n",
            exe().display()
        ),
    )
    .unwrap();
    let submit = |export: &str| -> String {
        let out = c
            .command("sbatch")
            .args(["--parsable", "--ntasks-per-node=1", "--chdir"])
            .arg(d)
            .args(["--output", "job-%j.out", "--export", export])
            .arg(&script)
            .output()
            .unwrap();
        assert_success(&out, "sbatch");
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        id.split(';').next().unwrap().to_string()
    };
    let jobs = [submit("ALL"), submit("ALL,SMTLAB_HOSTNAME=beta")];
    for id in &jobs {
        let state = c.wait_job(id, STEP_LIMIT);
        let printed = std::fs::read_to_string(d.join(format!("job-{id}.out"))).unwrap_or_default();
        if let Some(state) = state {
            assert!(
                state.contains("JobState=COMPLETED") && state.contains("ExitCode=0:0"),
                "job {id}: {state}\n{printed}"
            );
        }
        assert!(printed.contains("spin"), "job {id} printed:\n{printed}");
    }
    let host = kernel_host_name();
    let stores = [d.join(format!("batch-{host}.db")), d.join("batch-beta.db")];
    for s in &stores {
        assert!(s.exists(), "{} not written", s.display());
    }
    let fleet = d.join("fleet.db");
    let out = smtlab()
        .arg("merge")
        .args(&stores)
        .arg("-o")
        .arg(&fleet)
        .output()
        .unwrap();
    assert_success(&out, "merge");
    let fleet = fleet.display().to_string();
    let doc = support::json(&["compare", "--by", "host", "--db", &fleet, "--json"]);
    let hosts: Vec<&str> = doc["comparison"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    let mut want = vec!["beta", host.as_str()];
    want.sort_unstable();
    assert_eq!(hosts, want, "{doc}");
    assert_eq!(doc["comparison"]["points"].as_array().unwrap().len(), 2);
    let own = support::json(&[
        "show",
        "latest",
        "--db",
        &stores[0].display().to_string(),
        "--json",
    ]);
    assert_eq!(own["run"]["host"]["hostname"], host.as_str());
}

/// `scancel` of a running `srun -n 2 smtlab rank` job: Slurm stops both
/// ranks (SIGTERM), each says so in one line, srun reports the step
/// cancelled and fails; then no process of the job, no rendezvous
/// directory and no stored run is left.
fn scancel_mid_run_stops_srun_ranks_with_a_message_and_leaves_nothing(c: &Cluster) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cancelled.db").display().to_string();
    let exe = exe().display().to_string();
    let srun = [
        "-n",
        "2",
        &exe,
        "rank",
        "-w",
        "sor",
        "--comm",
        "thr2",
        "--param",
        "n=1024",
        "--param",
        "iterations=5000",
        "--db",
        &db,
    ];
    let (out, _) = cancel_mid_run(c, &srun, dir.path(), |pids| {
        pids.iter()
            .filter(|p| cmdline(**p).get(1).is_some_and(|a| a == "rank"))
            .count()
            == 2
    });
    let err = String::from_utf8_lossy(&out.stderr);
    for rank in [0, 1] {
        assert!(
            err.contains(&format!("smtlab: rank {rank}: stopped by SIGTERM")),
            "rank {rank} says why it stopped:\n{err}"
        );
    }
    // Rank 0 records the run at its end only.
    if Path::new(&db).exists() {
        let runs = support::json(&["runs", "--db", &db, "--json"]);
        assert_eq!(runs, Value::Array(Vec::new()), "nothing stored");
    }
}

/// `scancel` of a running `srun smtlab run -w sor -n 2` job, whose two
/// ranks are `smtlab __rank` processes of the task: the step ends, smtlab
/// says it was stopped, and no smtlab, no `__rank` and no rendezvous
/// directory is left.
fn scancel_mid_run_stops_smtlab_run_and_its_ranks_and_leaves_nothing(c: &Cluster) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cancelled.db").display().to_string();
    let exe = exe().display().to_string();
    let srun = [
        "-n",
        "1",
        &exe,
        "run",
        "-w",
        "sor",
        "--comm",
        "thr2",
        "-n",
        "2",
        "--param",
        "n=1024",
        "--param",
        "iterations=5000",
        "--warmup",
        "0",
        "--min-samples",
        "1",
        "--max-samples",
        "1",
        "--db",
        &db,
    ];
    let (out, _) = cancel_mid_run(c, &srun, dir.path(), |pids| {
        pids.iter()
            .filter(|p| cmdline(**p).get(1).is_some_and(|a| a == "__rank"))
            .count()
            == 2
    });
    let err = String::from_utf8_lossy(&out.stderr);
    // SIGTERM: exit 143, the run kept to be resumed.
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(
        err.contains(&format!(
            "smtlab: run 1 interrupted; every measured sample is stored. Finish it with: \
             smtlab run --resume 1 --db {db}"
        )),
        "{err}"
    );
    let runs = support::json(&["runs", "--db", &db, "--json"]);
    assert_eq!(runs[0]["status"], "interrupted", "{runs}");
}

/// Start `srun SRUN_ARGS` (its tasks' TMPDIR `tmp`), wait until
/// `running` holds of the job's processes and they are past their
/// meeting (no rendezvous directory under `tmp` after a second), cancel
/// the job with `scancel JOBID`, and insist that srun fails saying the
/// step was cancelled, that no process of the job and no rendezvous
/// directory is left; srun's output and the job id.
fn cancel_mid_run(
    c: &Cluster,
    srun_args: &[&str],
    tmp: &Path,
    running: impl Fn(&[u32]) -> bool,
) -> (Output, String) {
    let mark = format!("slurm-scancel-{}-{}", std::process::id(), srun_args[1]);
    let name = format!("smtlab-{mark}");
    let mut srun = Running::spawn(
        c.command("srun")
            .args(["--job-name", &name])
            .args(srun_args)
            .env("TMPDIR", tmp)
            .env("SMTLAB_TEST_MARK", &mark),
    );
    // Running, and past their meeting: the rendezvous directory is made
    // by the first rank there and removed by rank 0 once both are past
    // the first barrier.
    let started = wait_until(Duration::from_secs(30), || {
        running(&processes_with_mark(&mark))
    });
    let since = Instant::now();
    let met = started
        && wait_until(Duration::from_secs(30), || {
            since.elapsed() > Duration::from_secs(1) && leftovers(tmp).is_empty()
        });
    assert!(
        met && !srun.finished(),
        "{srun_args:?}: the ranks did not start and meet: {:?}\n{}",
        processes_with_mark(&mark)
            .into_iter()
            .map(cmdline)
            .collect::<Vec<_>>(),
        c.logs()
    );
    let id = job_named(c, &name);
    let out = c.command("scancel").arg(&id).output().unwrap();
    assert_success(&out, "scancel");
    let until = Instant::now() + STEP_LIMIT;
    let out = loop {
        if let Some(out) = srun.try_finish() {
            break out;
        }
        assert!(Instant::now() < until, "srun still running after scancel");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("STEP {id}.0 ON {} CANCELLED", c.host())),
        "Slurm says the step was cancelled:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let left: Vec<Vec<String>> = wait_gone(&mark).into_iter().map(cmdline).collect();
    assert_eq!(left, Vec::<Vec<String>>::new(), "the job's processes");
    assert_eq!(leftovers(tmp), Vec::<String>::new());
    c.wait_job(&id, STEP_LIMIT);
    (out, id)
}

/// A process's command line, word by word (empty once it is gone).
fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// README's two Slurm lines, read from README.md and run by `sh` as a user
/// would paste them, with only what a one-node test cluster forces
/// changed (each said below); `smtlab` is the built binary, first on
/// PATH.
fn readme_slurm_recipes_run_as_written(c: &Cluster) {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let shared = tempfile::tempdir().unwrap();
    let shared_dir = shared.path().display().to_string();
    let dsm = readme_line(&readme, "srun -n 16 smtlab rank");
    // 16 tasks do not fit on one node of a few CPUs: 2 ranks, the DSM's
    // fewest; /shared (a directory every node mounts) is a temporary one.
    let dsm = substitute(&dsm, &[("-n 16", "-n 2"), ("/shared", &shared_dir)]);
    let out = shell(c, &dsm, shared.path());
    assert_success(&out, &dsm);
    let text = String::from_utf8_lossy(&out.stdout);
    // What rank 0 prints: the run, its application and mechanism, the
    // ranks Slurm started.
    assert!(
        text.contains("lu thr2, 2 ranks (Slurm)") && text.contains("verified"),
        "{dsm}:\n{text}"
    );
    let lu = shared.path().join("lu.db").display().to_string();
    let stored = support::json(&["show", "latest", "--db", &lu, "--json"]);
    assert_eq!(stored["points"][0]["workload"], "lu thr2");
    assert_eq!(stored["points"][0]["extras"]["verified"], 1.0, "{stored}");
    // The rendezvous directory is made in /shared and removed by rank 0.
    assert!(!shared.path().join("rv").exists());

    let fleet = readme_line(&readme, "srun --nodes=8 --ntasks-per-node=1 smtlab study");
    // One node, not eight; /shared as above; README's study narrowed by
    // flags its Studies section documents to a run of seconds (a study
    // of the spin workload at one worker, three short samples).
    let fleet = substitute(
        &fleet,
        &[("--nodes=8", "--nodes=1"), ("/shared", &shared_dir)],
    ) + " -w spin -n 1 --duration 100ms --warmup 0 --min-samples 3 --max-samples 3";
    let out = shell(c, &fleet, shared.path());
    assert_success(&out, &fleet);
    let host = kernel_host_name();
    let store = shared.path().join(format!("{host}.db"));
    assert!(store.exists(), "{fleet}: no {}", store.display());
    let report = shared
        .path()
        .join("reports")
        .join(&host)
        .join("report.html");
    assert!(report.exists(), "{fleet}: no {}", report.display());
    // README's next line gathers the stores.
    let merge = readme_line(&readme, "smtlab merge /shared/*.db -o fleet.db");
    let merge = substitute(&merge, &[("/shared", &shared_dir)]);
    let out = shell(c, &merge, shared.path());
    assert_success(&out, &merge);
    let merged = shared.path().join("fleet.db").display().to_string();
    let runs = support::json(&["runs", "--db", &merged, "--json"]);
    assert!(
        runs.as_array()
            .unwrap()
            .iter()
            .any(|r| r["hostname"] == host.as_str()),
        "{runs}"
    );
}

/// The README line that starts with `start` (its comment cut), which must
/// be there: a recipe that changed must change this test too.
fn readme_line(readme: &str, start: &str) -> String {
    let line = readme
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("README.md has no line starting `{start}`"));
    line.split(" #").next().unwrap().trim_end().to_string()
}

/// `line` with each `(from, to)` replaced; each `from` must be there.
fn substitute(line: &str, swaps: &[(&str, &str)]) -> String {
    let mut out = line.to_string();
    for (from, to) in swaps {
        assert!(out.contains(from), "`{from}` is not in `{line}`");
        out = out.replace(from, to);
    }
    out
}

/// `sh -c LINE` in `cwd`, with the built smtlab first on PATH and the
/// cluster's SLURM_CONF.
fn shell(c: &Cluster, line: &str, cwd: &Path) -> std::process::Output {
    let bin = exe().parent().unwrap().to_path_buf();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path))).unwrap();
    let mut cmd = c.command("sh");
    cmd.arg("-c")
        .arg(line)
        .current_dir(cwd)
        .env("PATH", path)
        .env("TMPDIR", cwd);
    c.output_within(&mut cmd, STEP_LIMIT)
}

/// The host name smtlab records and puts in `{host}`: the kernel's.
fn kernel_host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// The job of this cluster named `name`.
fn job_named(c: &Cluster, name: &str) -> String {
    let out = c
        .command("squeue")
        .args(["-h", "-n", name, "-o", "%i"])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "job {name}: `{id}`");
    id
}

/// Rendezvous directories under `tmp` (a launcher's job's or smtlab's own).
fn leftovers(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("smtlab-rendezvous-") || n.starts_with("smtlab-dsm-"))
        .collect()
}

/// Poll `done` until it holds or `limit` passes; whether it held.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
