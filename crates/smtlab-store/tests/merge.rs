//! `Store::merge` (issue 20): stores of two hosts merged with every row
//! kept exactly, ids renumbered and origins kept, merging again adds
//! nothing, a merged store merged again keeps the first origin, a run that
//! went on is brought up to date (a shared host recorded later too),
//! copies of one store keep their runs apart, every refusal writes
//! nothing, and a merge beside a writer loses none of its samples.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::Connection;

use smtlab_store::{HostFacts, MergeError, MergeSummary, NewRun, RunStatus, Store};
use smtlab_types::{
    CounterScope, CounterStatus, CounterValue, Metric, Mode, Model, Point, Program, ResourceUsage,
    Sample, SampleStatus, SharedHost, Spawn, WorkerSample,
};

// ----- fixtures -----------------------------------------------------------

fn new_run(host: &str, seed: u64) -> NewRun {
    NewRun {
        command_line: vec!["smtlab".into(), "run".into(), "-w".into(), "spin".into()],
        version: "0.1.0".into(),
        git_commit: Some("abc123".into()),
        // Above i64::MAX: stored as text.
        seed: u64::MAX - seed,
        config_json: serde_json::json!({"threads": [1, 2], "precision": 0.02}),
        host: HostFacts {
            hostname: Some(host.into()),
            kernel: Some("6.1.0".into()),
            cpu_model: Some(format!("CPU of {host}")),
            topology: serde_json::json!({"packages": 1, "pus": [0, 1]}),
            thp: Some("madvise".into()),
            perf_event_paranoid: Some(2),
            load_avg: Some([0.38, 1.14, 1.12]),
            ..Default::default()
        },
        started_at: None,
    }
}

fn builtin_point(index: usize) -> Point {
    Point {
        index,
        program: Program::Builtin {
            workload: "spin".into(),
            params: BTreeMap::from([("iters".to_string(), "1000".to_string())]),
        },
        model: Model::Thread,
        spawn: Spawn::Exec,
        placement: "compact".into(),
        workers: 2,
        cpus: Some(vec![0, 1]),
        oversubscription: 2.0 / 3.0,
        alloc: "glibc".into(),
        mode: Mode::FixedTime { seconds: 0.1 + 0.2 },
        metric: Metric {
            name: "ops_per_s".into(),
            unit: "ops/s".into(),
            higher_is_better: true,
        },
    }
}

fn command_point(index: usize) -> Point {
    Point {
        index,
        program: Program::Command {
            template: "./bench --threads {n} --cpus {cpus}".into(),
        },
        model: Model::Hybrid {
            processes: 2,
            threads: 3,
        },
        spawn: Spawn::Fork,
        placement: "none".into(),
        workers: 6,
        cpus: None,
        oversubscription: 3.0,
        alloc: "/opt/lib/libfancy.so".into(),
        mode: Mode::FixedWork { work: 1 << 40 },
        metric: Metric {
            name: "wall_time".into(),
            unit: "s".into(),
            higher_is_better: false,
        },
    }
}

fn counters(k: u64) -> Vec<CounterValue> {
    vec![
        CounterValue {
            name: "cycles".into(),
            scope: CounterScope::User,
            status: CounterStatus::Unsupported,
            raw: None,
            value: None,
            fraction_running: None,
            reason: Some("no PMU: perf_event_open returned ENOENT".into()),
        },
        CounterValue {
            name: "context-switches".into(),
            scope: CounterScope::All,
            status: CounterStatus::Ok,
            raw: Some(17 + k),
            value: Some(17.0 + k as f64),
            fraction_running: Some(1.0),
            reason: None,
        },
        CounterValue {
            name: "cpu-migrations".into(),
            scope: CounterScope::All,
            status: CounterStatus::Ok,
            raw: Some(3 * k),
            value: Some(3.0 * k as f64 / 0.7),
            fraction_running: Some(0.7),
            reason: None,
        },
    ]
}

/// A sample with two workers, counters of each and summed, extras, and
/// floats without a short decimal form.
fn full_sample(seq: usize) -> Sample {
    let k = seq as u64;
    let worker = |w: usize| WorkerSample {
        worker: w,
        rank: 0,
        thread: w,
        pid: 4242,
        tid: if w == 0 { Some(4242) } else { None },
        cpu: if w == 0 { Some(0) } else { None },
        last_cpu: Some(w as u32),
        ops: 1_000_000 + k * 7 + w as u64,
        start_s: 12_345.678_901_234 + k as f64,
        end_s: 12_345.678_901_234 + k as f64 + 0.1 + 0.2,
        counters: counters(k + w as u64),
    };
    Sample {
        seq,
        warmup: seq == 0,
        status: SampleStatus::Ok,
        reason: None,
        started_at: 1.7e9 + k as f64 / 3.0,
        wall_s: 1.0 / 3.0 + k as f64,
        ops: Some(2_000_000 + k),
        metric: Some(2_000_000.0 / (1.0 / 3.0 + k as f64)),
        usage: ResourceUsage {
            user_s: Some(0.59 + k as f64),
            sys_s: Some(5e-324),
            voluntary_cs: Some(12),
            minor_faults: Some(345),
            peak_rss_kb: Some(4096),
            ..Default::default()
        },
        counters: counters(k),
        workers: vec![worker(0), worker(1)],
        extras: [
            ("live_objects".to_string(), 40_000.0 + k as f64),
            ("foreign_objects".to_string(), 1.0 / 3.0),
        ]
        .into_iter()
        .collect(),
    }
}

fn failed_sample(seq: usize) -> Sample {
    Sample {
        seq,
        warmup: false,
        status: SampleStatus::Crashed,
        reason: Some("worker 1 killed by SIGSEGV".into()),
        started_at: 1.7e9,
        wall_s: 0.25,
        ops: None,
        metric: None,
        usage: ResourceUsage::default(),
        counters: Vec::new(),
        workers: Vec::new(),
        extras: BTreeMap::new(),
    }
}

/// A finished run of two points on `host`: a built-in point with four
/// samples (a warm-up, a crash, outlier flags set) and a command point with
/// two. Returns its id.
fn add_run(store: &Store, host: &str, seed: u64) -> i64 {
    let run = store.create_run(&new_run(host, seed)).unwrap();
    let p0 = store.add_point(run, &builtin_point(0)).unwrap();
    let p1 = store.add_point(run, &command_point(1)).unwrap();
    for seq in 0..4 {
        let s = if seq == 2 {
            failed_sample(seq)
        } else {
            full_sample(seq)
        };
        store.add_sample(p0, &s).unwrap();
    }
    store.set_outliers(p0, &[3]).unwrap();
    for seq in 0..2 {
        store.add_sample(p1, &full_sample(10 + seq)).unwrap();
    }
    store.finish_run(run, RunStatus::Complete).unwrap();
    run
}

fn db(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

fn merge(inputs: &[&Path], output: &Path) -> Result<Vec<MergeSummary>, MergeError> {
    Store::merge(inputs, output)
}

/// Every row of `sql` as SQLite's values: two equal lists hold the same
/// storage classes and bytes.
fn rows(conn: &Connection, sql: &str, run: i64) -> Vec<Vec<Value>> {
    let mut st = conn.prepare(sql).unwrap();
    let n = st.column_count();
    st.query_map([run], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// A run's rows in every table, without the ids a merge renumbers, in a
/// stable order: (runs, points, samples, workers, counters).
fn run_rows(path: &Path, run: i64) -> Vec<Vec<Vec<Value>>> {
    let c = Connection::open(path).unwrap();
    vec![
        rows(
            &c,
            "SELECT started_at, finished_at, status, command_line, smtlab_version, git_commit, \
             seed, config_json, host_json, uid FROM runs WHERE id = ?1",
            run,
        ),
        rows(
            &c,
            "SELECT idx, program, workload, params_json, command, model, processes, \
             threads_per_process, workers, spawn, placement, cpus_json, oversubscription, \
             alloc, mode, mode_value, metric, unit, higher_is_better, point_json \
             FROM points WHERE run_id = ?1 ORDER BY idx",
            run,
        ),
        rows(
            &c,
            "SELECT p.idx, s.seq, s.warmup, s.status, s.reason, s.started_at, s.wall_s, s.ops, \
             s.metric, s.user_s, s.sys_s, s.voluntary_cs, s.involuntary_cs, s.minor_faults, \
             s.major_faults, s.migrations, s.peak_rss_kb, s.pss_kb, s.anon_huge_kb, s.outlier, \
             s.extras_json FROM samples s JOIN points p ON p.id = s.point_id \
             WHERE p.run_id = ?1 ORDER BY p.idx, s.seq",
            run,
        ),
        rows(
            &c,
            "SELECT p.idx, s.seq, w.worker, w.rank, w.thread, w.pid, w.tid, w.cpu, w.last_cpu, \
             w.ops, w.start_s, w.end_s FROM worker_samples w JOIN samples s ON s.id = w.sample_id \
             JOIN points p ON p.id = s.point_id WHERE p.run_id = ?1 ORDER BY p.idx, s.seq, w.id",
            run,
        ),
        rows(
            &c,
            "SELECT p.idx, s.seq, c.worker, c.name, c.scope, c.status, c.raw, c.value, \
             c.fraction_running, c.reason FROM counters c JOIN samples s ON s.id = c.sample_id \
             JOIN points p ON p.id = s.point_id WHERE p.run_id = ?1 ORDER BY p.idx, s.seq, c.id",
            run,
        ),
    ]
}

/// The number of rows of each table.
fn sizes(path: &Path) -> Vec<i64> {
    try_sizes(path).unwrap()
}

/// [`sizes`], or `None` for a file that is not a store.
fn try_sizes(path: &Path) -> Option<Vec<i64>> {
    let c = Connection::open(path).ok()?;
    ["runs", "points", "samples", "worker_samples", "counters"]
        .iter()
        .map(|t| {
            c.query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .ok()
        })
        .collect()
}

fn run_ids_by_host(store: &Store) -> BTreeMap<String, Vec<i64>> {
    let mut out: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for r in store.runs().unwrap() {
        out.entry(r.hostname.unwrap_or_default())
            .or_default()
            .push(r.id);
    }
    out
}

// ----- merging ------------------------------------------------------------

#[test]
fn stores_of_two_hosts_merge_with_every_row_kept_and_their_origins() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        db(dir.path(), "a.db"),
        db(dir.path(), "b.db"),
        db(dir.path(), "out.db"),
    );
    let sa = Store::open(&a).unwrap();
    let a1 = add_run(&sa, "alpha", 1);
    let sb = Store::open(&b).unwrap();
    let b1 = add_run(&sb, "beta", 2);
    let b2 = add_run(&sb, "beta", 3);
    // The output has a run of its own, so every merged id is renumbered.
    let so = Store::open(&out).unwrap();
    let own = add_run(&so, "omega", 4);

    let summary = merge(&[&a, &b], &out).unwrap();
    assert_eq!(summary.len(), 2);
    assert_eq!(summary[0].path, a);
    assert_eq!(summary[0].store_id, sa.store_id().unwrap());
    assert_eq!(summary[0].hosts, ["alpha"]);
    assert_eq!(
        (
            summary[0].runs_added,
            summary[0].runs_present,
            summary[0].runs_updated
        ),
        (1, 0, 0)
    );
    assert_eq!((summary[0].points, summary[0].samples), (2, 6));
    assert_eq!(summary[1].hosts, ["beta"]);
    assert_eq!(
        (summary[1].runs_added, summary[1].points, summary[1].samples),
        (2, 4, 12)
    );

    let hosts = run_ids_by_host(&so);
    assert_eq!(hosts["omega"], [own]);
    assert_eq!(hosts["alpha"].len(), 1);
    assert_eq!(hosts["beta"].len(), 2);
    assert!(hosts["alpha"][0] > own && hosts["beta"][0] > own);

    assert_eq!(so.run_origin(own).unwrap(), None);
    for (id, src, src_run) in [
        (hosts["alpha"][0], &sa, a1),
        (hosts["beta"][0], &sb, b1),
        (hosts["beta"][1], &sb, b2),
    ] {
        let origin = so.run_origin(id).unwrap().unwrap();
        assert_eq!(origin.store_id, src.store_id().unwrap());
        assert_eq!(origin.run_id, src_run);
        // The record, bit for bit but for its id.
        let mut theirs = src.run(src_run).unwrap();
        theirs.id = id;
        assert_eq!(so.run(id).unwrap(), theirs);
        // Every row of every table, byte for byte (same storage classes).
        assert_eq!(run_rows(&out, id), run_rows(src.path(), src_run));
        // And as the record types, samples and extras as JSON.
        let (ours, theirs) = (so.points(id).unwrap(), src.points(src_run).unwrap());
        assert_eq!(ours.len(), theirs.len());
        for ((op, opt), (tp, tpt)) in ours.iter().zip(&theirs) {
            assert_eq!(opt, tpt);
            assert_ne!(op, tp, "point ids are the output's");
            let (os, ts) = (so.samples(*op).unwrap(), src.samples(*tp).unwrap());
            assert_eq!(os, ts);
            assert_eq!(
                serde_json::to_string(&os).unwrap(),
                serde_json::to_string(&ts).unwrap()
            );
            assert_eq!(
                so.outlier_flags(*op).unwrap(),
                src.outlier_flags(*tp).unwrap()
            );
        }
    }
    assert_ne!(so.store_id().unwrap(), sa.store_id().unwrap());
    assert_ne!(sa.store_id().unwrap(), sb.store_id().unwrap());
    // The input is read, never written.
    assert_eq!(sa.runs().unwrap().len(), 1);
}

#[test]
fn merging_again_adds_nothing_and_a_then_a_and_b_adds_only_b() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        db(dir.path(), "a.db"),
        db(dir.path(), "b.db"),
        db(dir.path(), "out.db"),
    );
    add_run(&Store::open(&a).unwrap(), "alpha", 1);
    add_run(&Store::open(&b).unwrap(), "beta", 2);

    let first = merge(&[&a], &out).unwrap();
    assert_eq!(first[0].runs_added, 1);
    let after_a = sizes(&out);
    let again = merge(&[&a], &out).unwrap();
    assert_eq!(
        (
            again[0].runs_added,
            again[0].runs_present,
            again[0].runs_updated
        ),
        (0, 1, 0)
    );
    assert_eq!((again[0].points, again[0].samples), (0, 0));
    assert_eq!(sizes(&out), after_a);

    let both = merge(&[&a, &b], &out).unwrap();
    assert_eq!((both[0].runs_added, both[0].runs_present), (0, 1));
    assert_eq!((both[1].runs_added, both[1].runs_present), (1, 0));
    let after_b = sizes(&out);
    assert_eq!(after_b[0], 2);
    // The same input twice in one merge, and everything again: nothing.
    let twice = merge(&[&b, &a, &b], &out).unwrap();
    assert!(twice.iter().all(|s| s.runs_added == 0 && s.samples == 0));
    assert_eq!(sizes(&out), after_b);
}

#[test]
fn a_merged_store_merged_again_keeps_the_first_origin() {
    let dir = tempfile::tempdir().unwrap();
    let (a, f1, f2) = (
        db(dir.path(), "a.db"),
        db(dir.path(), "f1.db"),
        db(dir.path(), "f2.db"),
    );
    let sa = Store::open(&a).unwrap();
    let a1 = add_run(&sa, "alpha", 1);
    let a2 = add_run(&sa, "alpha", 2);
    // f1 measures a run of its own, then takes a's.
    let s1 = Store::open(&f1).unwrap();
    let own1 = add_run(&s1, "f1host", 3);
    merge(&[&a], &f1).unwrap();

    merge(&[&f1], &f2).unwrap();
    let s2 = Store::open(&f2).unwrap();
    let by_host = run_ids_by_host(&s2);
    let origins: Vec<_> = by_host["alpha"]
        .iter()
        .map(|id| s2.run_origin(*id).unwrap().unwrap())
        .collect();
    assert_eq!(
        origins
            .iter()
            .map(|o| (o.store_id.clone(), o.run_id))
            .collect::<Vec<_>>(),
        [(sa.store_id().unwrap(), a1), (sa.store_id().unwrap(), a2)]
    );
    // f1's own run came from f1.
    let o = s2.run_origin(by_host["f1host"][0]).unwrap().unwrap();
    assert_eq!((o.store_id, o.run_id), (s1.store_id().unwrap(), own1));
    assert_eq!(
        run_rows(&f2, by_host["alpha"][1]),
        run_rows(&a, a2),
        "copied twice, still exact"
    );

    // a's runs reach f2 once, whichever way they come.
    let before = sizes(&f2);
    let s = merge(&[&a, &f1], &f2).unwrap();
    assert_eq!((s[0].runs_added, s[0].runs_present), (0, 2));
    assert_eq!((s[1].runs_added, s[1].runs_present), (0, 3));
    assert_eq!(sizes(&f2), before);
    // And f2 merged back into a brings only f1's own run: a's own runs are
    // a's, whatever their copies say.
    let s = merge(&[&f2], &a).unwrap();
    assert_eq!((s[0].runs_added, s[0].runs_present), (1, 2));
    assert_eq!(sa.run_origin(a1).unwrap(), None);
}

#[test]
fn copies_of_one_store_keep_their_new_runs_apart() {
    // A store copied to two hosts (a cloned image) and measured into on
    // each: one store_id, different runs with the same ids.
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        db(dir.path(), "a.db"),
        db(dir.path(), "b.db"),
        db(dir.path(), "out.db"),
    );
    let sa = Store::open(&a).unwrap();
    add_run(&sa, "image", 1);
    drop(sa);
    std::fs::copy(&a, &b).unwrap();
    let (sa, sb) = (Store::open(&a).unwrap(), Store::open(&b).unwrap());
    assert_eq!(sa.store_id().unwrap(), sb.store_id().unwrap());
    let ra = add_run(&sa, "alpha", 2);
    let rb = add_run(&sb, "beta", 3);
    assert_eq!(ra, rb);

    let s = merge(&[&a, &b], &out).unwrap();
    assert_eq!((s[0].runs_added, s[0].runs_present), (2, 0));
    assert_eq!((s[1].runs_added, s[1].runs_present), (1, 1));
    let hosts = run_ids_by_host(&Store::open(&out).unwrap());
    assert_eq!(
        hosts
            .iter()
            .map(|(h, ids)| (h.as_str(), ids.len()))
            .collect::<Vec<_>>(),
        [("alpha", 1), ("beta", 1), ("image", 1)]
    );
}

#[test]
fn a_run_merged_while_running_is_brought_up_to_date_by_merging_again() {
    let dir = tempfile::tempdir().unwrap();
    let (a, old, out) = (
        db(dir.path(), "a.db"),
        db(dir.path(), "old.db"),
        db(dir.path(), "out.db"),
    );
    let sa = Store::open(&a).unwrap();
    let run = sa.create_run(&new_run("alpha", 1)).unwrap();
    let p0 = sa.add_point(run, &builtin_point(0)).unwrap();
    for seq in 0..2 {
        sa.add_sample(p0, &full_sample(seq)).unwrap();
    }
    merge(&[&a], &out).unwrap();
    merge(&[&a], &old).unwrap(); // a copy of this moment, for later
    let so = Store::open(&out).unwrap();
    let merged = so.runs().unwrap()[0].id;
    assert_eq!(so.run(merged).unwrap().status, RunStatus::Running);

    // The run goes on: more samples, a second point, outlier flags, the end.
    for seq in 2..5 {
        sa.add_sample(p0, &full_sample(seq)).unwrap();
    }
    let p1 = sa.add_point(run, &command_point(1)).unwrap();
    sa.add_sample(p1, &full_sample(0)).unwrap();
    sa.set_outliers(p0, &[4]).unwrap();
    sa.finish_run(run, RunStatus::Complete).unwrap();

    let s = merge(&[&a], &out).unwrap();
    assert_eq!(
        (s[0].runs_added, s[0].runs_present, s[0].runs_updated),
        (0, 1, 1)
    );
    assert_eq!((s[0].points, s[0].samples), (1, 4));
    assert_eq!(run_rows(&out, merged), run_rows(&a, run));
    assert_eq!(so.run(merged).unwrap().status, RunStatus::Complete);

    // The older copy changes nothing: not the status, not the flags.
    let before = run_rows(&out, merged);
    let s = merge(&[&old, &a], &out).unwrap();
    assert_eq!(
        (s[0].runs_present, s[0].runs_updated, s[0].samples),
        (1, 0, 0)
    );
    assert_eq!(
        (s[1].runs_present, s[1].runs_updated, s[1].samples),
        (1, 0, 0)
    );
    assert_eq!(run_rows(&out, merged), before);

    // Flags set once every sample was merged arrive alone too.
    sa.set_outliers(p0, &[3]).unwrap();
    let s = merge(&[&a], &out).unwrap();
    assert_eq!((s[0].runs_updated, s[0].samples), (1, 0));
    assert_eq!(run_rows(&out, merged), run_rows(&a, run));
}

#[test]
fn a_shared_host_recorded_after_a_merge_arrives_with_the_next_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, old, out, out2) = (
        db(dir.path(), "a.db"),
        db(dir.path(), "old.db"),
        db(dir.path(), "out.db"),
        db(dir.path(), "out2.db"),
    );
    let sa = Store::open(&a).unwrap();
    let run = add_run(&sa, "alpha", 1);
    merge(&[&a], &out).unwrap();
    merge(&[&a], &old).unwrap(); // the copy before the run was resumed
                                 // `run --resume RUN --shared-host` as one of two tasks on the host:
                                 // the run's samples are all there, only its host facts change.
    let shared = SharedHost {
        launcher: "Open MPI".into(),
        tasks: 2,
    };
    sa.set_shared_host(run, &shared).unwrap();

    let s = merge(&[&a], &out).unwrap();
    assert_eq!(
        (s[0].runs_present, s[0].runs_updated, s[0].samples),
        (1, 1, 0)
    );
    let so = Store::open(&out).unwrap();
    let merged = so.runs().unwrap()[0].id;
    assert_eq!(
        so.run(merged).unwrap().host.shared_host,
        Some(shared.clone())
    );
    assert_eq!(run_rows(&out, merged), run_rows(&a, run));
    // The copy from before does not take it away again, and merging the
    // two copies the other way round ends the same.
    let s = merge(&[&old], &out).unwrap();
    assert_eq!((s[0].runs_present, s[0].runs_updated), (1, 0));
    assert_eq!(run_rows(&out, merged), run_rows(&a, run));
    merge(&[&a, &old], &out2).unwrap();
    let s2 = Store::open(&out2).unwrap();
    let merged2 = s2.runs().unwrap()[0].id;
    assert_eq!(run_rows(&out2, merged2), run_rows(&a, run));
    let s = merge(&[&a], &out2).unwrap();
    assert_eq!((s[0].runs_present, s[0].runs_updated), (1, 0));
}

// ----- refusals -----------------------------------------------------------

/// The refusal of `inputs` into `out`: a refusal (exit 2), one line naming
/// `names` and saying `why`, and the output exactly as before (or absent).
fn refused(inputs: &[&Path], out: &Path, names: &Path, why: &str) {
    // Counted first: a connection's close may checkpoint into the file.
    let before_sizes = out.exists().then(|| try_sizes(out)).flatten();
    let before = std::fs::read(out).ok();
    let e = merge(inputs, out).unwrap_err();
    assert!(e.is_refusal(), "{e:?}");
    let msg = e.to_string();
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(msg.contains(&names.display().to_string()), "{msg}");
    assert!(msg.contains(why), "{msg}");
    assert_eq!(std::fs::read(out).ok(), before, "{msg}: output untouched");
    if let Some(s) = before_sizes {
        assert_eq!(sizes(out), s);
    }
}

#[test]
fn refusals_name_the_file_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good = db(d, "good.db");
    add_run(&Store::open(&good).unwrap(), "alpha", 1);

    let text = db(d, "notes.txt");
    std::fs::write(&text, "these are my notes, not a database\n".repeat(40)).unwrap();
    let empty = db(d, "empty.db");
    std::fs::write(&empty, b"").unwrap();
    let other = db(d, "recipes.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup');")
        .unwrap();
    let newer = db(d, "newer.db");
    add_run(&Store::open(&newer).unwrap(), "beta", 2);
    Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", smtlab_store::schema_version() + 1)
        .unwrap();
    let missing = db(d, "missing.db");

    // Into an output that does not exist: it is not created. A good input
    // first changes nothing.
    let out = db(d, "fleet.db");
    for (bad, why) in [
        (&text, "not an smtlab database"),
        (&empty, "not an smtlab database (it is empty: 0 bytes)"),
        (&other, "it holds other tables: recipes"),
        (&newer, "schema version"),
        (&missing, "no such file"),
        (&d.to_path_buf(), "it is a directory"),
    ] {
        refused(&[&good, bad], &out, bad, why);
        assert!(!out.exists(), "{}", bad.display());
        assert!(!db(d, "fleet.db-wal").exists());
    }
    // The refused files are as they were.
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "these are my notes, not a database\n".repeat(40)
    );
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);

    // Into an output that exists: not a byte changes.
    merge(&[&good], &out).unwrap();
    for bad in [&text, &empty, &other, &newer, &missing] {
        refused(&[&good, bad], &out, bad, "");
    }
    // The output itself, by its name, another path, a symlink, a hard link.
    let link = db(d, "link.db");
    std::os::unix::fs::symlink(&out, &link).unwrap();
    let hard = db(d, "hard.db");
    std::fs::hard_link(&out, &hard).unwrap();
    let dotted = d.join(".").join("fleet.db");
    for same in [&out, &link, &hard, &dotted] {
        refused(&[&good, same], &out, same, "it is the output store");
    }
    // An output that is not a store, or is newer.
    for (bad_out, why) in [
        (&text, "not an smtlab database"),
        (&other, "it holds other tables"),
        (&newer, "schema version"),
    ] {
        refused(&[&good], bad_out, bad_out, why);
        let e = merge(&[&good], bad_out).unwrap_err().to_string();
        assert!(e.starts_with(&format!("-o {}: ", bad_out.display())), "{e}");
    }
}

// ----- beside a writer ------------------------------------------------------

/// A run writing samples into the output while merges run: the writer
/// never fails (it waits for a merge as for another writer), every sample
/// it committed is there, and so is every merged run.
#[test]
fn a_merge_beside_a_writer_loses_none_of_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    let (a, out) = (db(dir.path(), "a.db"), db(dir.path(), "out.db"));
    let sa = Store::open(&a).unwrap();
    for seed in 0..20 {
        add_run(&sa, "alpha", seed);
    }
    let writer = Store::open(&out).unwrap();
    let run = writer.create_run(&new_run("omega", 99)).unwrap();
    let point = writer.add_point(run, &builtin_point(0)).unwrap();

    let merging = {
        let (a, out) = (a.clone(), out.clone());
        std::thread::spawn(move || {
            let mut added = 0;
            for _ in 0..10 {
                let s = merge(&[&a], &out).unwrap();
                added += s[0].runs_added;
            }
            added
        })
    };
    let mut written = 0;
    while !merging.is_finished() || written < 50 {
        writer.add_sample(point, &full_sample(written)).unwrap();
        written += 1;
    }
    assert_eq!(merging.join().unwrap(), 20, "each run added once");
    writer.finish_run(run, RunStatus::Complete).unwrap();
    let samples = writer.samples(point).unwrap();
    assert_eq!(samples.len(), written);
    for (seq, s) in samples.iter().enumerate() {
        assert_eq!(*s, full_sample(seq));
    }
    assert_eq!(writer.runs().unwrap().len(), 21);
}

/// A store merged again and again while its run writes samples into it:
/// every merge sees whole samples, and once the run has ended one more
/// merge leaves the output's copy equal to it, row for row.
#[test]
fn merging_a_store_while_its_run_writes_converges_to_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (a, out) = (db(dir.path(), "a.db"), db(dir.path(), "out.db"));
    let sa = Store::open(&a).unwrap();
    let run = sa.create_run(&new_run("alpha", 1)).unwrap();
    let points = [
        sa.add_point(run, &builtin_point(0)).unwrap(),
        sa.add_point(run, &command_point(1)).unwrap(),
    ];
    let writing = std::thread::spawn(move || {
        for seq in 0..150 {
            sa.add_sample(points[seq % 2], &full_sample(seq / 2))
                .unwrap();
        }
        sa.set_outliers(points[0], &[7]).unwrap();
        sa.finish_run(run, RunStatus::Complete).unwrap();
    });
    let mut merges = 0;
    while !writing.is_finished() {
        merge(&[&a], &out).unwrap();
        merges += 1;
        // Every sample merged so far is whole: its workers and counters.
        let c = Connection::open(&out).unwrap();
        let orphans: i64 = c
            .query_row(
                "SELECT count(*) FROM samples s WHERE s.status = 'ok' AND \
                 (SELECT count(*) FROM worker_samples w WHERE w.sample_id = s.id) <> 2",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(orphans, 0);
    }
    writing.join().unwrap();
    let s = merge(&[&a], &out).unwrap();
    assert!(s[0].runs_added + s[0].runs_present == 1);
    let so = Store::open(&out).unwrap();
    let merged = so.runs().unwrap()[0].id;
    assert_eq!(
        run_rows(&out, merged),
        run_rows(&a, run),
        "after {merges} merges"
    );
    assert_eq!(so.run(merged).unwrap().status, RunStatus::Complete);
}

/// Not a benchmark and asserts nothing about time: prints what a merge of
/// a run of 1,000 samples (2 workers, 9 counters each) costs here.
#[test]
fn merge_cost_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, out) = (db(dir.path(), "a.db"), db(dir.path(), "out.db"));
    let sa = Store::open(&a).unwrap();
    let run = sa.create_run(&new_run("alpha", 1)).unwrap();
    let point = sa.add_point(run, &builtin_point(0)).unwrap();
    for seq in 0..1000 {
        sa.add_sample(point, &full_sample(seq)).unwrap();
    }
    sa.finish_run(run, RunStatus::Complete).unwrap();
    let t = std::time::Instant::now();
    let s = merge(&[&a], &out).unwrap();
    let first = t.elapsed();
    let t = std::time::Instant::now();
    merge(&[&a], &out).unwrap();
    let again = t.elapsed();
    assert_eq!(s[0].samples, 1000);
    let rows: i64 = sizes(&out).iter().sum();
    eprintln!("merge: {rows} rows in {first:?}; merging it again {again:?}");
}
