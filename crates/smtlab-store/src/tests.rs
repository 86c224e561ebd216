//! Tests of the store: schema creation and migration, refusal of foreign and
//! newer files, exact round trips with NULL for `None`, idempotent points,
//! outlier flags, and the durability promises (a `kill -9` mid-write leaves
//! every committed sample intact; a reader sees whole samples while a writer
//! writes). Each test uses its own temporary database.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::Connection;

use super::schema::{self, MIGRATIONS};
use super::*;
use crate::samples::{counter_status_str, parse_counter_scope, parse_counter_status};
use smtlab_types::{
    CounterScope, CounterStatus, CounterValue, Mode, Point, Program, ResourceUsage, Sample,
    SampleStatus, Spawn, WorkerSample,
};
use smtlab_types::{Metric, Model};

// ----- fixtures -----------------------------------------------------------

fn new_run() -> NewRun {
    NewRun {
        command_line: vec!["smtlab".into(), "run".into(), "-w".into(), "spin".into()],
        version: "0.1.0".into(),
        git_commit: None,
        // Above i64::MAX: must survive as text.
        seed: u64::MAX - 7,
        config_json: serde_json::json!({"threads": [1, 2], "precision": 0.02}),
        host: HostFacts {
            hostname: Some("testbox".into()),
            kernel: Some("6.1.0".into()),
            cpu_model: None,
            topology: serde_json::json!({"packages": 1, "pus": [0, 1]}),
            smt_active: false,
            governor: None,
            thp: Some("madvise".into()),
            perf_event_paranoid: Some(2),
            load_avg: Some([0.38, 1.14, 1.12]),
            shared_host: None,
            emulated: None,
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
        // Neither has an exact short decimal form.
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

const HW: [&str; 9] = [
    "cycles",
    "instructions",
    "cache-references",
    "cache-misses",
    "L1-dcache-load-misses",
    "LLC-load-misses",
    "dTLB-load-misses",
    "iTLB-load-misses",
    "branch-misses",
];

/// 20 counters as a VM without a PMU gives them: 18 unsupported hardware
/// ones (user and kernel), two counted software ones.
fn counters(k: u64) -> Vec<CounterValue> {
    let mut out = Vec::new();
    for name in HW {
        for scope in [CounterScope::User, CounterScope::Kernel] {
            out.push(CounterValue {
                name: name.into(),
                scope,
                status: CounterStatus::Unsupported,
                raw: None,
                value: None,
                fraction_running: None,
                reason: Some("no PMU: perf_event_open returned ENOENT".into()),
            });
        }
    }
    out.push(CounterValue {
        name: "context-switches".into(),
        scope: CounterScope::All,
        status: CounterStatus::Ok,
        raw: Some(17 + k),
        value: Some(17.0 + k as f64),
        fraction_running: Some(1.0),
        reason: None,
    });
    out.push(CounterValue {
        name: "cpu-migrations".into(),
        scope: CounterScope::All,
        status: CounterStatus::Ok,
        raw: Some(3 * k),
        // Multiplexed: scaled value is not the raw count.
        value: Some(3.0 * k as f64 / 0.7),
        fraction_running: Some(0.7),
        reason: None,
    });
    out
}

/// A full sample: two workers with 20 counters each, 20 summed counters,
/// resource usage partly unknown.
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
            involuntary_cs: Some(0),
            minor_faults: Some(345),
            major_faults: Some(0),
            migrations: None,
            peak_rss_kb: Some(4096),
            pss_kb: None,
            anon_huge_kb: None,
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

/// A failed sample: almost everything unknown.
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

/// A store with one run and one point.
fn store_with_point(dir: &Path) -> (Store, i64, i64) {
    let store = Store::open(&dir.join("smtlab.db")).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    let point = store.add_point(run, &builtin_point(0)).unwrap();
    (store, run, point)
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn user_version(path: &Path) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap()
}

fn schema_of(path: &Path) -> Vec<(String, String, Option<String>)> {
    let conn = Connection::open(path).unwrap();
    let mut st = conn
        .prepare("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

// ----- schema ---------------------------------------------------------------

#[test]
fn creates_a_fresh_database_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.path(), path);
    let c = &store.conn;
    let mode: String = c
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let sync: i64 = c
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .unwrap();
    assert_eq!(sync, 1, "synchronous=NORMAL");
    let fk: bool = c
        .pragma_query_value(None, "foreign_keys", |r| r.get(0))
        .unwrap();
    assert!(fk);
    let app: i32 = c
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    assert_eq!(app, APPLICATION_ID);
    drop(store);
    assert_eq!(user_version(&path), schema_version());
    assert_eq!(schema_version(), MIGRATIONS.len() as i64);

    // Reopening changes nothing.
    let before = schema_of(&path);
    Store::open(&path).unwrap();
    assert_eq!(schema_of(&path), before);

    // An empty file (`touch smtlab.db`) becomes a store too.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    Store::open(&empty).unwrap();
    assert_eq!(user_version(&empty), schema_version());
}

/// Every older version (not only N-1) migrates to the current schema, and
/// data written under the old schema survives.
#[test]
fn migrates_older_versions_to_the_current_schema() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.db");
    drop(Store::open(&fresh).unwrap());
    let want = schema_of(&fresh);

    for applied in 1..MIGRATIONS.len() {
        let path = dir.path().join(format!("v{applied}.db"));
        {
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..applied] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", applied as i64)
                .unwrap();
            // A run written by the old version (migration 1's columns).
            conn.execute(
                "INSERT INTO runs (started_at, status, command_line, smtlab_version, seed, \
                 config_json, host_json) VALUES (1.5e9, 'complete', '[\"smtlab\"]', '0.0.9', \
                 '42', '{}', '{\"hostname\": \"old\"}')",
                [],
            )
            .unwrap();
        }
        assert_eq!(user_version(&path), applied as i64);

        let store = Store::open(&path).unwrap();
        let run = store.run(1).unwrap();
        assert_eq!(run.seed, 42);
        assert_eq!(run.status, RunStatus::Complete);
        // Facts missing from old host JSON read as None.
        assert_eq!(run.host.hostname.as_deref(), Some("old"));
        assert_eq!(run.host.kernel, None);
        // The new schema works: the views of migration 2 exist.
        assert_eq!(
            count(
                &store.conn,
                "SELECT count(*) FROM hosts WHERE hostname = 'old'"
            ),
            1
        );
        drop(store);
        assert_eq!(user_version(&path), schema_version());
        assert_eq!(schema_of(&path), want, "migrated from version {applied}");
    }
}

#[test]
fn newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    drop(Store::open(&path).unwrap());
    let future = schema_version() + 1;
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", future)
        .unwrap();

    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains(&format!("version {future}")), "{msg}");
    assert!(msg.contains(&format!("({})", schema_version())), "{msg}");
    assert_eq!(user_version(&path), future);
}

#[test]
fn non_database_file_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let text = "these are my notes, not a database\n".repeat(40);
    std::fs::write(&path, &text).unwrap();

    for open in [Store::open, Store::open_existing] {
        let err = open(&path).unwrap_err();
        assert!(matches!(err, StoreError::NotSmtlab { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "--db {}: not an smtlab database (",
                path.display()
            )),
            "{msg}"
        );
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn another_programs_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();

    let tables = dir.path().join("other.db");
    Connection::open(&tables)
        .unwrap()
        .execute_batch("CREATE TABLE recipes (name TEXT);")
        .unwrap();
    let msg = Store::open(&tables).unwrap_err().to_string();
    assert!(msg.contains("not an smtlab database"), "{msg}");
    assert!(msg.contains("recipes"), "{msg}");

    let app = dir.path().join("app.db");
    Connection::open(&app)
        .unwrap()
        .pragma_update(None, "application_id", 0x0F00_BA12)
        .unwrap();
    let msg = Store::open(&app).unwrap_err().to_string();
    assert!(msg.contains("application_id 0xf00ba12"), "{msg}");

    let versioned = dir.path().join("versioned.db");
    Connection::open(&versioned)
        .unwrap()
        .pragma_update(None, "user_version", 3)
        .unwrap();
    let msg = Store::open(&versioned).unwrap_err().to_string();
    assert!(msg.contains("not an smtlab database"), "{msg}");
}

#[test]
fn open_existing_refuses_a_missing_file_without_creating_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.db");
    let err = Store::open_existing(&path).unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err:?}");
    assert!(err.to_string().contains(&path.display().to_string()));
    assert!(!path.exists());

    let err = Store::open(&dir.path().join("no/such/dir/x.db")).unwrap_err();
    assert!(err.to_string().contains("no/such/dir/x.db"), "{err}");
}

// ----- runs and points ----------------------------------------------------

#[test]
fn a_resumed_run_records_its_shared_host_and_keeps_the_larger_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("smtlab.db")).unwrap();
    let new = new_run();
    let id = store.create_run(&new).unwrap();
    let other = store.create_run(&new).unwrap();
    let shared = |tasks| smtlab_types::SharedHost {
        launcher: "Open MPI".into(),
        tasks,
    };
    store.set_shared_host(id, &shared(3)).unwrap();
    assert_eq!(store.run(id).unwrap().host.shared_host, Some(shared(3)));
    // A later part with fewer tasks beside it does not undo what the
    // earlier part shared.
    store.set_shared_host(id, &shared(2)).unwrap();
    assert_eq!(store.run(id).unwrap().host.shared_host, Some(shared(3)));
    store.set_shared_host(id, &shared(4)).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.host.shared_host, Some(shared(4)));
    // Every other fact as it was, and the other run untouched.
    assert_eq!(
        HostFacts {
            shared_host: None,
            emulated: None,
            ..run.host
        },
        new.host
    );
    assert_eq!(store.run(other).unwrap().host, new.host);
    assert!(store.set_shared_host(other + 1, &shared(2)).is_err());
}

#[test]
fn a_run_recorded_after_it_began_keeps_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("smtlab.db")).unwrap();
    let began = 1.6e9 + 0.25;
    let id = store
        .create_run(&NewRun {
            started_at: Some(began),
            ..new_run()
        })
        .unwrap();
    assert_eq!(store.run(id).unwrap().started_at, began);
    store.finish_run(id, RunStatus::Complete).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.started_at, began);
    assert!(
        run.finished_at.unwrap() > 1.7e9,
        "finished now, not at its start"
    );
}

#[test]
fn run_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smtlab.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.latest_run_id().unwrap(), None);
    assert!(store.runs().unwrap().is_empty());

    let new = new_run();
    let id = store.create_run(&new).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.id, id);
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(run.finished_at, None);
    assert_eq!(run.command_line, new.command_line);
    assert_eq!(run.version, new.version);
    assert_eq!(run.git_commit, None);
    assert_eq!(run.seed, new.seed);
    assert_eq!(run.config_json, new.config_json);
    assert_eq!(run.host, new.host);
    assert!(run.started_at > 1.6e9);

    let p0 = store.add_point(id, &builtin_point(0)).unwrap();
    store.add_point(id, &command_point(1)).unwrap();
    store.add_sample(p0, &full_sample(0)).unwrap();
    store.add_sample(p0, &failed_sample(1)).unwrap();

    store.finish_run(id, RunStatus::Interrupted).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(run.finished_at.unwrap() >= run.started_at);

    // --resume: back to running, not finished.
    store.set_run_status(id, RunStatus::Running).unwrap();
    let run = store.run(id).unwrap();
    assert_eq!((run.status, run.finished_at), (RunStatus::Running, None));

    let second = store.create_run(&new).unwrap();
    assert_eq!(store.latest_run_id().unwrap(), Some(second));
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        runs[0],
        RunSummary {
            id,
            started_at: run.started_at,
            finished_at: None,
            status: RunStatus::Running,
            points: 2,
            samples: 2,
            failed_samples: 1,
            command_line: new.command_line.clone(),
            hostname: Some("testbox".into()),
        }
    );
    assert_eq!(
        (runs[1].id, runs[1].points, runs[1].samples),
        (second, 0, 0)
    );

    // The hosts view shows the facts as columns.
    let (host, thp, load5): (String, String, f64) = store
        .conn
        .query_row(
            "SELECT hostname, thp, load5 FROM hosts WHERE run_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (host.as_str(), thp.as_str(), load5),
        ("testbox", "madvise", 1.14)
    );

    let missing = 999;
    for err in [
        store.run(missing).unwrap_err(),
        store.points(missing).unwrap_err(),
        store.finish_run(missing, RunStatus::Complete).unwrap_err(),
        store
            .set_run_status(missing, RunStatus::Running)
            .unwrap_err(),
        store.add_point(missing, &builtin_point(0)).unwrap_err(),
    ] {
        assert_eq!(err.to_string(), format!("no run 999 in {}", path.display()));
    }
}

#[test]
fn add_point_is_idempotent_and_points_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("smtlab.db")).unwrap();
    let run = store.create_run(&new_run()).unwrap();
    let a = builtin_point(0);
    let b = command_point(1);
    // Out of order on purpose: points() orders by idx.
    let id_b = store.add_point(run, &b).unwrap();
    let id_a = store.add_point(run, &a).unwrap();
    assert_eq!(store.add_point(run, &a).unwrap(), id_a);
    assert_eq!(store.add_point(run, &b).unwrap(), id_b);
    assert_eq!(count(&store.conn, "SELECT count(*) FROM points"), 2);
    assert_eq!(
        store.points(run).unwrap(),
        vec![(id_a, a.clone()), (id_b, b)]
    );

    // The same index with a different configuration is refused.
    let mut changed = a.clone();
    changed.placement = "scatter".into();
    let err = store.add_point(run, &changed).unwrap_err();
    assert!(
        matches!(err, StoreError::PointMismatch { idx: 0, .. }),
        "{err:?}"
    );

    // The columns for hand queries.
    let row: (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        i64,
        i64,
    ) = store
        .conn
        .query_row(
            "SELECT program, workload, params_json, command, model, processes, \
             threads_per_process FROM points WHERE id = ?1",
            [id_b],
            |r| r.try_into(),
        )
        .unwrap();
    assert_eq!(
        row,
        (
            "./bench".into(),
            None,
            None,
            Some("./bench --threads {n} --cpus {cpus}".into()),
            "hybrid:2x3".into(),
            2,
            3
        )
    );
    let (cpus, mode, value): (Option<String>, String, i64) = store
        .conn
        .query_row(
            "SELECT cpus_json, mode, mode_value FROM points WHERE id = ?1",
            [id_b],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((cpus, mode.as_str(), value), (None, "fixed_work", 1 << 40));
    let (cpus, params): (String, String) = store
        .conn
        .query_row(
            "SELECT cpus_json, params_json FROM points WHERE id = ?1",
            [id_a],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (cpus.as_str(), params.as_str()),
        ("[0,1]", r#"{"iters":"1000"}"#)
    );
}

// ----- samples --------------------------------------------------------------

#[test]
fn samples_round_trip_exactly_with_null_for_none() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, point) = store_with_point(dir.path());
    let mut odd = full_sample(2);
    odd.usage.sys_s = Some(f64::MAX);
    odd.metric = Some(f64::MIN_POSITIVE);
    odd.workers[1].counters.clear();
    odd.workers.reverse(); // order of insertion, not worker number, is kept
    let added = vec![full_sample(0), failed_sample(1), odd];
    for s in &added {
        store.add_sample(point, s).unwrap();
    }
    assert_eq!(store.samples(point).unwrap(), added);
    assert_eq!(store.samples(point + 1).unwrap(), Vec::<Sample>::new());

    let c = &store.conn;
    // Unknown resource usage is NULL, not 0.
    let nulls: (bool, bool, bool, bool, bool, bool) = c
        .query_row(
            "SELECT migrations IS NULL, pss_kb IS NULL, anon_huge_kb IS NULL, \
             major_faults IS NULL, outlier IS NULL, reason IS NULL \
             FROM samples WHERE seq = 0",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .unwrap();
    assert_eq!(nulls, (true, true, true, false, true, true));
    // Extras: JSON when there are some, NULL (not `{}`) when there are none.
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM samples WHERE extras_json IS NULL AND seq = 1"
        ),
        1
    );
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM samples \
             WHERE json_extract(extras_json, '$.live_objects') = 40000 AND seq = 0"
        ),
        1
    );
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM samples WHERE seq = 1 AND ops IS NULL AND metric IS NULL \
             AND user_s IS NULL AND sys_s IS NULL AND voluntary_cs IS NULL \
             AND involuntary_cs IS NULL AND minor_faults IS NULL AND major_faults IS NULL \
             AND migrations IS NULL AND peak_rss_kb IS NULL AND pss_kb IS NULL \
             AND anon_huge_kb IS NULL AND reason = 'worker 1 killed by SIGSEGV' \
             AND status = 'crashed'"
        ),
        1
    );
    // Worker facts: tid and cpu unknown for worker 1.
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM worker_samples WHERE worker = 1 \
             AND tid IS NULL AND cpu IS NULL AND last_cpu = 1"
        ),
        2
    );
    // Unsupported counters: no value anywhere, a reason; counted ones the
    // reverse. Per worker and summed (worker NULL).
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM counters WHERE status = 'unsupported' AND raw IS NULL \
             AND value IS NULL AND fraction_running IS NULL AND reason LIKE 'no PMU%'"
        ),
        18 * 5
    );
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM counters WHERE status = 'ok' AND raw IS NOT NULL \
             AND value IS NOT NULL AND reason IS NULL"
        ),
        2 * 5
    );
    assert_eq!(
        count(c, "SELECT count(*) FROM counters WHERE worker IS NULL"),
        40
    );
    // The hand-query view joins them up.
    assert_eq!(
        count(
            c,
            "SELECT count(*) FROM point_samples WHERE model = 'thread' AND idx = 0"
        ),
        3
    );
}

/// A sample is stored whole or not at all: a failure halfway leaves no rows.
#[test]
fn a_sample_that_cannot_be_stored_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, point) = store_with_point(dir.path());
    store.add_sample(point, &full_sample(0)).unwrap();
    let rows = |c: &Connection| {
        (
            count(c, "SELECT count(*) FROM samples"),
            count(c, "SELECT count(*) FROM worker_samples"),
            count(c, "SELECT count(*) FROM counters"),
        )
    };
    let before = rows(&store.conn);

    let err = store.add_sample(point, &full_sample(0)).unwrap_err();
    assert!(
        matches!(err, StoreError::DuplicateSample { seq: 0, .. }),
        "{err:?}"
    );

    // The last summed counter is out of range: the sample row, both workers
    // and 59 counters were already inserted when it failed.
    let mut bad = full_sample(1);
    bad.counters.last_mut().unwrap().raw = Some(u64::MAX);
    let err = store.add_sample(point, &bad).unwrap_err();
    assert!(
        err.to_string().contains("exceeds SQLite's INTEGER range"),
        "{err}"
    );

    let mut twins = full_sample(2);
    twins.workers[1].worker = 0;
    let err = store.add_sample(point, &twins).unwrap_err();
    assert!(err.to_string().contains("two workers numbered 0"), "{err}");

    let err = store.add_sample(point + 100, &full_sample(0)).unwrap_err();
    assert!(matches!(err, StoreError::NoPoint { .. }), "{err:?}");

    assert_eq!(rows(&store.conn), before);
    assert_eq!(store.samples(point).unwrap(), vec![full_sample(0)]);
    // And the connection is usable afterwards.
    store.add_sample(point, &full_sample(1)).unwrap();
}

#[test]
fn outlier_flags_cover_only_measured_ok_samples() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, point) = store_with_point(dir.path());
    // 0: warm-up, 1, 2: ok, 3: crashed, 4: ok.
    for seq in 0..5 {
        let s = if seq == 3 {
            failed_sample(seq)
        } else {
            full_sample(seq)
        };
        store.add_sample(point, &s).unwrap();
    }
    assert!(store
        .outlier_flags(point)
        .unwrap()
        .iter()
        .all(|(_, f)| f.is_none()));

    store.set_outliers(point, &[2]).unwrap();
    let flagged = vec![
        (0, None),
        (1, Some(false)),
        (2, Some(true)),
        (3, None),
        (4, Some(false)),
    ];
    assert_eq!(store.outlier_flags(point).unwrap(), flagged);

    // A warm-up, a failure or a missing seq cannot be an outlier; the
    // earlier flags stay as they were.
    for seq in [0, 3, 9] {
        let err = store.set_outliers(point, &[1, seq]).unwrap_err();
        assert!(err.to_string().contains(&format!("sample {seq}")), "{err}");
        assert_eq!(store.outlier_flags(point).unwrap(), flagged);
    }

    store.set_outliers(point, &[]).unwrap();
    assert_eq!(
        store.outlier_flags(point).unwrap(),
        vec![
            (0, None),
            (1, Some(false)),
            (2, Some(false)),
            (3, None),
            (4, Some(false))
        ]
    );
    // Outlier flags do not change the samples themselves.
    assert_eq!(store.samples(point).unwrap()[2], full_sample(2));
}

/// Not a benchmark and asserts nothing about time: prints what storing a
/// realistic sample (2 workers x 20 counters + 20 summed) costs here.
#[test]
fn add_sample_cost_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, point) = store_with_point(dir.path());
    let samples: Vec<Sample> = (0..300).map(full_sample).collect();
    store.add_sample(point, &samples[0]).unwrap();
    let t = Instant::now();
    for s in &samples[1..] {
        store.add_sample(point, s).unwrap();
    }
    let per = t.elapsed() / (samples.len() as u32 - 1);
    let t = Instant::now();
    let back = store.samples(point).unwrap();
    let read = t.elapsed();
    assert_eq!(back, samples);
    eprintln!(
        "store: add_sample (2 workers, 60 counters) {per:?} each; \
         samples() of {} samples {read:?}",
        samples.len()
    );
}

// ----- durability -----------------------------------------------------------

/// Set in the child process of [`kill_9_keeps_every_committed_sample`].
const CHILD_DB: &str = "SMTLAB_STORE_TEST_KILL_DB";
const CHILD_POINT: &str = "SMTLAB_STORE_TEST_KILL_POINT";

/// In the child: append samples to the point, printing each seq once its
/// transaction is committed, until killed (bounded, in case the parent died).
fn kill_child_writer(db: &str, point: i64) {
    let store = Store::open(Path::new(db)).unwrap();
    let next = store.samples(point).unwrap().len();
    let mut out = std::io::stdout().lock();
    for seq in next..next + 200_000 {
        store.add_sample(point, &full_sample(seq)).unwrap();
        writeln!(out, "committed {seq}").unwrap();
        out.flush().unwrap();
    }
}

/// `kill -9` of a writer, three times over, each time resuming where the
/// last left off: every sample reported committed is there and intact, the
/// stored seqs have no gap, no sample is partly stored, and the file passes
/// SQLite's integrity check.
#[test]
fn kill_9_keeps_every_committed_sample() {
    if let (Ok(db), Ok(point)) = (std::env::var(CHILD_DB), std::env::var(CHILD_POINT)) {
        kill_child_writer(&db, point.parse().unwrap());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (store, _, point) = store_with_point(dir.path());
    let db = store.path().to_path_buf();
    drop(store);

    // This test's name for `--exact`, without the crate.
    let module = module_path!().split_once("::").unwrap().1;
    let test_name = format!("{module}::kill_9_keeps_every_committed_sample");
    let exe = std::env::current_exe().unwrap();

    let mut committed = 0usize;
    for round in 0..3 {
        let mut child = Command::new(&exe)
            .args([
                test_name.as_str(),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DB, &db)
            .env(CHILD_POINT, point.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < 25 {
            let Some(line) = lines.next() else {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "round {round}: child ended after {seen} commits: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            // libtest's `test NAME ... ` may precede the first line.
            if let Some((_, seq)) = line.unwrap().split_once("committed ") {
                let seq: usize = seq.trim().parse().unwrap();
                assert_eq!(seq, committed, "round {round}: commits in order");
                committed += 1;
                seen += 1;
            }
        }
        child.kill().unwrap(); // SIGKILL, mid-write with high probability
        child.wait().unwrap();
        // The child may have committed a few more than we read.
        for line in lines.map_while(Result::ok) {
            if line.contains("committed ") {
                committed += 1;
            }
        }

        let store = Store::open(&db).unwrap();
        let ok: String = store
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let samples = store.samples(point).unwrap();
        assert!(
            samples.len() == committed || samples.len() == committed + 1,
            "round {round}: {} stored, {committed} reported committed",
            samples.len()
        );
        for (seq, s) in samples.iter().enumerate() {
            assert_eq!(*s, full_sample(seq), "round {round}: sample {seq}");
        }
        // No orphan rows of a half-written sample.
        let n = samples.len() as i64;
        assert_eq!(
            count(&store.conn, "SELECT count(*) FROM worker_samples"),
            2 * n
        );
        assert_eq!(count(&store.conn, "SELECT count(*) FROM counters"), 60 * n);
        committed = samples.len();
    }
}

/// A second connection (`smtlab runs` during a run) reads while samples are
/// written: never an error, never half a sample, counts only grow.
#[test]
fn reader_sees_whole_samples_while_a_writer_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _, point) = store_with_point(dir.path());
    let db = writer.path().to_path_buf();
    let done = Arc::new(AtomicBool::new(false));

    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let store = Store::open_existing(&db).unwrap();
            let (mut reads, mut last) = (0usize, 0usize);
            while !done.load(Ordering::Relaxed) || reads == 0 {
                let runs = store.runs().unwrap();
                assert!(runs[0].samples as usize >= last);
                let samples = store.samples(point).unwrap();
                assert!(samples.len() >= last);
                for (seq, s) in samples.iter().enumerate() {
                    assert_eq!(*s, full_sample(seq));
                }
                last = samples.len();
                reads += 1;
            }
            reads
        })
    };
    for seq in 0..200 {
        writer.add_sample(point, &full_sample(seq)).unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    assert_eq!(writer.samples(point).unwrap().len(), 200);
}

#[test]
fn run_status_names_round_trip() {
    for s in [
        RunStatus::Running,
        RunStatus::Complete,
        RunStatus::Interrupted,
        RunStatus::Failed,
    ] {
        assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            format!("\"{}\"", s.as_str())
        );
    }
    assert_eq!(RunStatus::parse("done"), None);
    for s in [
        CounterStatus::Ok,
        CounterStatus::Unsupported,
        CounterStatus::NotPermitted,
        CounterStatus::Error,
    ] {
        assert_eq!(parse_counter_status(counter_status_str(s)), Some(s));
        // The same names serde gives them.
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            format!("\"{}\"", counter_status_str(s))
        );
    }
    for s in [CounterScope::User, CounterScope::Kernel, CounterScope::All] {
        assert_eq!(parse_counter_scope(s.as_str()), Some(s));
    }
    // The migration function is a no-op on a current database.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("x.db")).unwrap();
    assert_eq!(
        schema::migrate(&store.conn, schema_version()).unwrap(),
        schema_version()
    );
}

/// A store written before extras existed (schema 2) opens, migrates, reads
/// its old samples with no extras, and stores new samples with them.
#[test]
fn samples_of_a_store_without_extras_read_back_empty() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    {
        let conn = Connection::open(&path).unwrap();
        for step in &MIGRATIONS[..2] {
            conn.execute_batch(step).unwrap();
        }
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
    }
    // The sample row is written with schema 2's columns only, as every row
    // from before the migration reads (extras_json NULL).
    let run = {
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO runs (started_at, status, command_line, smtlab_version, seed, \
             config_json, host_json) VALUES (1.5e9, 'complete', '[]', '0.0.9', '1', '{}', '{}')",
            [],
        )
        .unwrap();
        conn.last_insert_rowid()
    };
    let store = Store::open(&path).unwrap();
    assert_eq!(user_version(&path), schema_version());
    let point = store.add_point(run, &builtin_point(0)).unwrap();
    store
        .conn
        .execute(
            "INSERT INTO samples (point_id, seq, warmup, status, wall_s, ops, metric) \
             VALUES (?1, 0, 0, 'ok', 1.0, 10, 10.0)",
            [point],
        )
        .unwrap();
    let old = store.samples(point).unwrap();
    assert_eq!(old.len(), 1);
    assert!(old[0].extras.is_empty());
    let new = full_sample(1);
    store.add_sample(point, &new).unwrap();
    assert_eq!(store.samples(point).unwrap()[1], new);
    // Old JSON without the field (a sample serialised by an older smtlab)
    // reads as no extras too.
    let mut v = serde_json::to_value(&new).unwrap();
    v.as_object_mut().unwrap().remove("extras");
    let back: Sample = serde_json::from_value(v).unwrap();
    assert!(back.extras.is_empty());
}

/// Reading a point's samples takes three queries, each row dealt to its
/// sample; a counter naming a worker its sample does not have is a damaged
/// file, said as such (not a panic, not a counter silently dropped).
#[test]
fn a_counter_naming_a_worker_the_sample_lacks_is_a_corrupt_record() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, point) = store_with_point(dir.path());
    store.add_sample(point, &full_sample(1)).unwrap();
    assert_eq!(store.samples(point).unwrap(), vec![full_sample(1)]);
    let moved = store
        .conn
        .execute("UPDATE counters SET worker = 7 WHERE worker = 1", [])
        .unwrap();
    assert!(moved > 0);
    let e = store.samples(point).unwrap_err();
    assert!(matches!(e, StoreError::Invalid { .. }), "{e:?}");
    assert!(
        e.to_string().ends_with(&format!(
            "corrupt record: a counter of sample 1 of point {point} names worker 7, \
             which the sample does not have"
        )),
        "{e}"
    );
}

// ----- issue 15: paths, migrations, concurrent creation -------------------

#[test]
fn a_db_path_that_cannot_be_a_file_is_refused_naming_why_and_creating_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "").unwrap();
    let cases: Vec<(std::path::PathBuf, &str)> = vec![
        ("/dev/null".into(), "it is not a regular file"),
        (dir.path().join("x.db/"), "it ends with `/`"),
        (dir.path().to_path_buf(), "it is a directory"),
        (dir.path().join("missing/x.db"), "does not exist"),
        (file.join("x.db"), "is not a directory"),
    ];
    for (path, why) in cases {
        for opened in [
            Store::open(&path),
            Store::open_existing(&path),
            Store::open_read_only(&path),
        ] {
            let e = opened.unwrap_err().to_string();
            assert!(e.contains(why), "{}: {e}", path.display());
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
    assert!(!Path::new("/dev/null-journal").exists());
    assert!(!dir.path().join("x.db").exists());
}

#[test]
fn a_failed_migration_names_the_versions_not_the_sql() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        // Version 1 by its marks, but with the column a later step adds:
        // that step fails ("duplicate column name").
        let c = Connection::open(&path).unwrap();
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "application_id", schema::APPLICATION_ID)
            .unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
        assert!(MIGRATIONS[1..]
            .join("\n")
            .contains("ADD COLUMN extras_json"));
        c.execute_batch("ALTER TABLE samples ADD COLUMN extras_json TEXT")
            .unwrap();
    }
    let e = Store::open(&path).unwrap_err().to_string();
    let known = schema::latest_version();
    assert!(
        e.contains(&format!(
            "cannot bring the schema from version 1 to {known}"
        )),
        "{e}"
    );
    assert!(!e.contains("CREATE"), "{e}");
    assert!(e.len() < 400, "{e}");
}

#[test]
fn an_immutable_read_opens_a_store_whose_directory_cannot_be_written() {
    // What a read-only mount does to a WAL database: no -shm can be made.
    // As root (who may write anyway) the fallback cannot be provoked by
    // permissions, so the immutable open is checked directly.
    let dir = tempfile::tempdir().unwrap();
    let (store, run, _) = store_with_point(dir.path());
    drop(store);
    let path = dir.path().join("smtlab.db");
    let uri = format!("file:{}?immutable=1", super::store::uri_path(&path));
    let c = Connection::open_with_flags(
        &uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    let n: i64 = c
        .query_row("SELECT count(*) FROM runs WHERE id = ?1", [run], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 1);
    let ro = Store::open_read_only(&path).unwrap();
    assert_eq!(ro.run(run).unwrap().id, run);
}

// ----- issue 29: reading changes nothing ----------------------------------

/// Every file of `dir` with its bytes, by name.
fn files_of(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_read_only_open_leaves_the_directory_and_the_file_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let (store, run, point) = store_with_point(dir.path());
    store.add_sample(point, &full_sample(0)).unwrap();
    let path = store.path().to_path_buf();
    drop(store);
    let before = files_of(dir.path());
    assert_eq!(before.keys().collect::<Vec<_>>(), ["smtlab.db"]);

    let ro = Store::open_read_only(&path).unwrap();
    assert_eq!(ro.runs().unwrap()[0].samples, 1);
    // SQLite needs the WAL's files while the reader is open.
    assert!(dir.path().join("smtlab.db-shm").exists());
    drop(ro);
    assert_eq!(files_of(dir.path()), before);

    // Files that were there when the reader came (a writer has the store
    // open) are the writer's: the reader leaves them, the writer's close
    // takes them away.
    let writer = Store::open(&path).unwrap();
    writer.add_sample(point, &full_sample(1)).unwrap();
    let ro = Store::open_read_only(&path).unwrap();
    assert_eq!(ro.samples(point).unwrap().len(), 2);
    drop(ro);
    assert!(dir.path().join("smtlab.db-wal").exists());
    writer.add_sample(point, &full_sample(2)).unwrap();
    drop(writer);
    assert_eq!(
        files_of(dir.path()).keys().collect::<Vec<_>>(),
        ["smtlab.db"]
    );

    // A writer that comes and goes while a reader is open cannot remove
    // the files (the reader holds the database); the reader's close does,
    // and what the writer committed is in the file.
    let ro = Store::open_read_only(&path).unwrap();
    let writer = Store::open(&path).unwrap();
    writer.add_sample(point, &full_sample(3)).unwrap();
    drop(writer);
    assert!(dir.path().join("smtlab.db-wal").exists());
    drop(ro);
    assert_eq!(
        files_of(dir.path()).keys().collect::<Vec<_>>(),
        ["smtlab.db"]
    );
    let ro = Store::open_read_only(&path).unwrap();
    assert_eq!(ro.samples(point).unwrap().len(), 4);
    assert_eq!(ro.run(run).unwrap().id, run);
}

#[test]
fn an_empty_file_is_not_a_store_to_a_reader_and_stays_empty() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("e.db");
    std::fs::write(&empty, b"").unwrap();
    let e = Store::open_read_only(&empty).unwrap_err();
    assert!(matches!(e, StoreError::NotSmtlab { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "--db {}: not an smtlab database (it is empty: 0 bytes)",
            empty.display()
        )
    );
    // A SQLite database with nothing in it (one page, no table).
    let blank = dir.path().join("blank.db");
    Connection::open(&blank)
        .unwrap()
        .execute_batch("VACUUM")
        .unwrap();
    let size = std::fs::metadata(&blank).unwrap().len();
    assert!(size > 0);
    let e = Store::open_read_only(&blank).unwrap_err().to_string();
    assert!(e.ends_with("(it is an empty SQLite database)"), "{e}");
    let files = files_of(dir.path());
    assert_eq!(files.keys().collect::<Vec<_>>(), ["blank.db", "e.db"]);
    assert!(files["e.db"].is_empty());
    assert_eq!(files["blank.db"].len() as u64, size);
}

#[test]
fn an_older_store_is_read_from_a_migrated_copy_and_left_at_its_version() {
    let dir = tempfile::tempdir().unwrap();
    for applied in 1..MIGRATIONS.len() {
        let path = dir.path().join(format!("v{applied}.db"));
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "journal_mode", "WAL").unwrap();
            for step in &MIGRATIONS[..applied] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "application_id", APPLICATION_ID)
                .unwrap();
            conn.pragma_update(None, "user_version", applied as i64)
                .unwrap();
            conn.execute(
                "INSERT INTO runs (started_at, status, command_line, smtlab_version, seed, \
                 config_json, host_json) VALUES (1.5e9, 'complete', '[\"smtlab\"]', '0.0.9', \
                 '42', '{}', '{\"hostname\": \"old\"}')",
                [],
            )
            .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let ro = Store::open_read_only(&path).unwrap();
        let run = ro.run(1).unwrap();
        assert_eq!((run.seed, run.host.hostname.as_deref()), (42, Some("old")));
        // Read through the columns the migrations added.
        assert_eq!(ro.runs().unwrap().len(), 1);
        assert_eq!(ro.store_id().unwrap().len(), 32);
        drop(ro);
        assert_eq!(std::fs::read(&path).unwrap(), before, "v{applied}");
        assert_eq!(user_version(&path), applied as i64);
    }
    let left: Vec<String> = files_of(dir.path()).into_keys().collect();
    assert!(left.iter().all(|f| f.ends_with(".db")), "{left:?}");
}

// ----- issue 29: one process measures a run -------------------------------

/// A process that lives until killed, as a run's owner, and its identity.
fn live_other() -> (std::process::Child, Owner) {
    let child = Command::new("sleep").arg("60").spawn().unwrap();
    let me = Owner::this_process();
    let pid = child.id();
    // Its start time, once /proc shows it.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    let start: u64 = rest.split_whitespace().nth(19).unwrap().parse().unwrap();
    let other = Owner {
        pid,
        host: Some("otherbox".into()),
        start_ticks: Some(start),
        ..me
    };
    (child, other)
}

fn owner_pid(store: &Store, run: i64) -> Option<u32> {
    use rusqlite::OptionalExtension;
    store
        .conn
        .query_row("SELECT pid FROM run_owners WHERE run_id = ?1", [run], |r| {
            r.get(0)
        })
        .optional()
        .unwrap()
}

#[test]
fn a_run_another_live_process_measures_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, run, _) = store_with_point(dir.path());
    // Recorded by this process: its own until it finishes.
    assert_eq!(owner_pid(&store, run), Some(std::process::id()));
    store.claim_run(run, &Owner::this_process()).unwrap();

    let (mut child, other) = live_other();
    let e = store.claim_run(run, &other).unwrap_err();
    assert!(matches!(e, StoreError::RunOwned { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "--db {}: run {run} is being measured by pid {} on host ",
            store.path().display(),
            std::process::id()
        )),
        "{text}"
    );
    assert!(text.contains("wait for it to end"), "{text}");
    assert_eq!(owner_pid(&store, run), Some(std::process::id()));

    // The other way round: the other process owns it, this one asks.
    store.own_run(run, &other).unwrap();
    let e = store.resume_run(run).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "being measured by pid {} on host otherbox",
            other.pid
        )),
        "{e}"
    );
    // Once it is gone (killed, reaped), its run is taken over.
    child.kill().unwrap();
    child.wait().unwrap();
    store.set_run_status(run, RunStatus::Interrupted).unwrap();
    store.resume_run(run).unwrap();
    assert_eq!(owner_pid(&store, run), Some(std::process::id()));
    assert_eq!(store.run(run).unwrap().status, RunStatus::Running);

    // Finished: nobody's, and complete runs are not resumed.
    store.finish_run(run, RunStatus::Complete).unwrap();
    assert_eq!(owner_pid(&store, run), None);
    let e = store.resume_run(run).unwrap_err();
    assert!(matches!(e, StoreError::RunComplete { .. }), "{e:?}");
}

#[test]
fn an_owner_on_a_host_that_cannot_be_seen_is_refused_and_a_restarted_hosts_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let (store, run, _) = store_with_point(dir.path());
    let me = Owner::this_process();
    let far = Owner {
        pid: 4242,
        host: Some("far".into()),
        boot_id: Some("another-boot".into()),
        pid_ns: Some("pid:[1]".into()),
        start_ticks: Some(1),
    };
    store.own_run(run, &far).unwrap();
    let e = store.claim_run(run, &me).unwrap_err().to_string();
    assert!(e.contains("pid 4242 on host far"), "{e}");
    assert!(e.contains("cannot be seen from here"), "{e}");
    // This host's name, another boot: it has restarted since.
    let before_boot = Owner {
        host: me.host.clone(),
        ..far
    };
    store.own_run(run, &before_boot).unwrap();
    store.claim_run(run, &me).unwrap();
    assert_eq!(owner_pid(&store, run), Some(me.pid));
}

/// Two processes resuming one run at once (two connections, two
/// identities, both alive): exactly one gets it.
#[test]
fn of_two_resumers_racing_exactly_one_claims_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (store, run, _) = store_with_point(dir.path());
    let path = store.path().to_path_buf();
    store.finish_run(run, RunStatus::Interrupted).unwrap();
    drop(store);
    let (mut child, other) = live_other();
    for _ in 0..20 {
        let first = Store::open(&path).unwrap();
        first.set_run_status(run, RunStatus::Interrupted).unwrap();
        first.conn.execute("DELETE FROM run_owners", []).unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let claims: Vec<_> = [Owner::this_process(), other.clone()]
            .into_iter()
            .map(|who| {
                let (path, barrier) = (path.clone(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let s = Store::open(&path).unwrap();
                    barrier.wait();
                    s.claim_run(run, &who).map(|_| who.pid)
                })
            })
            .collect();
        let results: Vec<_> = claims.into_iter().map(|t| t.join().unwrap()).collect();
        let won: Vec<u32> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().copied())
            .collect();
        assert_eq!(won.len(), 1, "{results:?}");
        for r in &results {
            if let Err(e) = r {
                assert!(matches!(e, StoreError::RunOwned { .. }), "{e:?}");
            }
        }
        assert_eq!(owner_pid(&first, run), Some(won[0]));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_merge_does_not_copy_who_measures_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let (store, run, _) = store_with_point(dir.path());
    assert_eq!(owner_pid(&store, run), Some(std::process::id()));
    let out = dir.path().join("out.db");
    Store::merge(&[store.path()], &out).unwrap();
    let merged = Store::open(&out).unwrap();
    assert_eq!(merged.runs().unwrap().len(), 1);
    assert_eq!(owner_pid(&merged, 1), None);
}

/// A reader polling for a store two runs are creating sees no store, then
/// the whole store: never a half-made one (which it would refuse as empty).
/// The two creators share one store; no temporary file is left.
#[test]
fn a_new_store_appears_whole_to_a_reader_and_two_creators_share_it() {
    for round in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("smtlab.db");
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                loop {
                    match Store::open_read_only(&path) {
                        Err(StoreError::Missing { .. }) => {}
                        Ok(s) => return s.store_id().unwrap(),
                        Err(e) => panic!("round {round}: {e}"),
                    }
                    assert!(start.elapsed().as_secs() < 20, "never created");
                }
            })
        };
        let creators: Vec<_> = (0..2)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let s = Store::open(&path).unwrap();
                    s.create_run(&new_run()).unwrap();
                    s.store_id().unwrap()
                })
            })
            .collect();
        let ids: Vec<String> = creators.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(ids[0], ids[1], "one store");
        assert_eq!(reader.join().unwrap(), ids[0]);
        assert_eq!(Store::open(&path).unwrap().runs().unwrap().len(), 2);
        assert_eq!(
            files_of(dir.path()).keys().collect::<Vec<_>>(),
            ["smtlab.db"]
        );
    }
}
