//! The store's schema as an ordered list of migrations.
//!
//! `PRAGMA user_version` holds how many steps of [`MIGRATIONS`] a database
//! has had; opening an older database applies the missing steps in one
//! transaction. A step, once released, is never edited: a change to the
//! schema is a new step at the end. `PRAGMA application_id` marks the file as
//! smtlab's, so another program's SQLite file is refused rather than
//! "migrated".
//!
//! Conventions, so the tables read well in `sqlite3`:
//! * NULL means unknown or not measured, never 0;
//! * times are Unix seconds as REAL (`datetime(started_at, 'unixepoch')`);
//!   worker windows are CLOCK_MONOTONIC seconds;
//! * booleans are INTEGER 0/1;
//! * enumerations are their lower-case names as TEXT, with no CHECK, so a new
//!   variant in the code needs no table rebuild (the reader refuses unknown
//!   names);
//! * JSON is TEXT (`json_extract` works on it).

use rusqlite::{Connection, TransactionBehavior};

/// `PRAGMA application_id` of an smtlab database: "SMTL" in ASCII.
pub const APPLICATION_ID: i32 = 0x534D_544C;

/// The schema, one step per entry; the database's `user_version` is the
/// number of steps applied.
pub const MIGRATIONS: &[&str] = &[
    // 1: the tables.
    r#"
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    started_at      REAL NOT NULL,
    finished_at     REAL,
    -- running | complete | interrupted | failed
    status          TEXT NOT NULL,
    -- JSON array of argv
    command_line    TEXT NOT NULL,
    smtlab_version  TEXT NOT NULL,
    git_commit      TEXT,
    -- decimal text: a u64 seed does not fit SQLite's signed INTEGER
    seed            TEXT NOT NULL,
    -- the run's configuration, opaque to the store (--resume rebuilds the plan from it)
    config_json     TEXT NOT NULL,
    -- HostFacts as JSON; the `hosts` view shows them as columns
    host_json       TEXT NOT NULL
);

CREATE TABLE points (
    id                  INTEGER PRIMARY KEY,
    run_id              INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    -- Point.index: position in the plan, stable across --resume
    idx                 INTEGER NOT NULL,
    -- workload name or the command's first word
    program             TEXT NOT NULL,
    -- built-in workload and its parameters (JSON object); NULL for a command
    workload            TEXT,
    params_json         TEXT,
    -- command template; NULL for a built-in workload
    command             TEXT,
    -- thread | process | hybrid:PxT
    model               TEXT NOT NULL,
    processes           INTEGER NOT NULL,
    threads_per_process INTEGER NOT NULL,
    workers             INTEGER NOT NULL,
    -- exec | fork
    spawn               TEXT NOT NULL,
    placement           TEXT NOT NULL,
    -- JSON array, worker i's PU; NULL when not pinned
    cpus_json           TEXT,
    oversubscription    REAL NOT NULL,
    alloc               TEXT NOT NULL,
    -- fixed_time (mode_value: seconds) | fixed_work (mode_value: work units)
    mode                TEXT NOT NULL,
    mode_value          NUMERIC NOT NULL,
    metric              TEXT NOT NULL,
    unit                TEXT NOT NULL,
    higher_is_better    INTEGER NOT NULL,
    -- the whole Point as JSON, what --resume reads back
    point_json          TEXT NOT NULL,
    UNIQUE (run_id, idx)
);

CREATE TABLE samples (
    id              INTEGER PRIMARY KEY,
    point_id        INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    -- 0, 1, 2, ... within the point, warm-ups included
    seq             INTEGER NOT NULL,
    warmup          INTEGER NOT NULL,
    -- ok | failed | crashed | timeout | wrong_result
    status          TEXT NOT NULL,
    reason          TEXT,
    started_at      REAL,
    wall_s          REAL,
    ops             INTEGER,
    -- the point's primary metric for this sample
    metric          REAL,
    -- resource usage summed over the worker processes
    user_s          REAL,
    sys_s           REAL,
    voluntary_cs    INTEGER,
    involuntary_cs  INTEGER,
    minor_faults    INTEGER,
    major_faults    INTEGER,
    migrations      INTEGER,
    peak_rss_kb     INTEGER,
    pss_kb          INTEGER,
    anon_huge_kb    INTEGER,
    -- set by analysis (MAD rule) on measured ok samples; NULL otherwise
    outlier         INTEGER,
    UNIQUE (point_id, seq)
);

CREATE TABLE worker_samples (
    id          INTEGER PRIMARY KEY,
    sample_id   INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    -- worker number 0..N across the point; rank = process, thread = index in it
    worker      INTEGER NOT NULL,
    rank        INTEGER NOT NULL,
    thread      INTEGER NOT NULL,
    pid         INTEGER NOT NULL,
    tid         INTEGER,
    -- pinned PU, and the PU it last ran on
    cpu         INTEGER,
    last_cpu    INTEGER,
    ops         INTEGER NOT NULL,
    -- measured window, CLOCK_MONOTONIC seconds
    start_s     REAL,
    end_s       REAL,
    UNIQUE (sample_id, worker)
);

CREATE TABLE counters (
    id                  INTEGER PRIMARY KEY,
    sample_id           INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
    -- worker number; NULL = summed over the sample's workers
    worker              INTEGER,
    name                TEXT NOT NULL,
    -- user | kernel | all
    scope               TEXT NOT NULL,
    -- ok | unsupported | not_permitted | error
    status              TEXT NOT NULL,
    raw                 INTEGER,
    -- raw scaled for multiplexing
    value               REAL,
    fraction_running    REAL,
    reason              TEXT
);
CREATE INDEX counters_by_sample ON counters (sample_id, worker);
"#,
    // 2: views for reading by hand.
    r#"
CREATE VIEW hosts AS
SELECT
    id                                          AS run_id,
    json_extract(host_json, '$.hostname')       AS hostname,
    json_extract(host_json, '$.kernel')         AS kernel,
    json_extract(host_json, '$.cpu_model')      AS cpu_model,
    json_extract(host_json, '$.smt_active')     AS smt_active,
    json_extract(host_json, '$.governor')       AS governor,
    json_extract(host_json, '$.thp')            AS thp,
    json_extract(host_json, '$.perf_event_paranoid') AS perf_event_paranoid,
    json_extract(host_json, '$.load_avg[0]')    AS load1,
    json_extract(host_json, '$.load_avg[1]')    AS load5,
    json_extract(host_json, '$.load_avg[2]')    AS load15,
    json_extract(host_json, '$.topology')       AS topology_json
FROM runs;

CREATE VIEW point_samples AS
SELECT
    p.run_id, p.idx, p.program, p.model, p.placement, p.workers, p.alloc,
    p.metric AS metric_name, p.unit,
    s.seq, s.warmup, s.status, s.reason, s.wall_s, s.ops, s.metric, s.outlier,
    s.user_s, s.sys_s, s.voluntary_cs, s.involuntary_cs,
    s.minor_faults, s.major_faults, s.migrations, s.peak_rss_kb, s.pss_kb,
    s.anon_huge_kb, s.id AS sample_id, p.id AS point_id
FROM samples s JOIN points p ON p.id = s.point_id;
"#,
    // 3: a workload's extra observations per sample (additive counts such
    // as an allocator probe's live and foreign objects), as a JSON object;
    // NULL when it observed nothing extra, as every older sample did.
    r#"
ALTER TABLE samples ADD COLUMN extras_json TEXT;
"#,
    // 4: a run's identity across stores, and where a merged run came from
    // (`smtlab merge`). Every run gets a `uid`, random when it is recorded,
    // which a merge copies: runs are matched by it, never by id (a merge
    // renumbers them), so merging a run twice adds nothing, and a store
    // file copied (an image cloned to many hosts) and measured into on
    // each host still keeps its runs apart. The runs of an older store get
    // a uid made of their id, start (µs) and seed, so two copies of one old
    // store name its runs alike whenever each is migrated. A store gets a
    // random `store_id`, once; a merged run records its first store and its
    // id there (`origin_*`, NULL for a run measured into this store).
    r#"
CREATE TABLE store_meta (
    -- always 1: the table has one row
    singleton       INTEGER PRIMARY KEY CHECK (singleton = 1),
    -- 32 hex digits, random
    store_id        TEXT NOT NULL
);
INSERT INTO store_meta (singleton, store_id) VALUES (1, lower(hex(randomblob(16))));
-- 32 hex digits, random (a run recorded from this version on)
ALTER TABLE runs ADD COLUMN uid TEXT;
UPDATE runs SET uid = 'pre4-' || id || '-' || CAST(started_at * 1000000 AS INTEGER) || '-' || seed;
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);
-- the store_id of the store the run was measured into, and its id there
ALTER TABLE runs ADD COLUMN origin_store TEXT;
ALTER TABLE runs ADD COLUMN origin_run_id INTEGER;
"#,
    // 5: the process measuring a run now (`run`, `run --resume`), one row
    // per run being measured: made in the transaction that records or
    // resumes the run, deleted when it ends. A second `--resume` of a run
    // whose owner lives is refused; one whose owner died is taken over
    // (`owner.rs`). The store's own: a merge does not copy it (the process
    // writes into its store, not into the fleet's).
    r#"
CREATE TABLE run_owners (
    run_id      INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    pid         INTEGER NOT NULL,
    -- the host name as smtlab records it (SMTLAB_HOSTNAME, or the kernel's)
    host        TEXT,
    -- /proc/sys/kernel/random/boot_id: the same machine, since its boot
    boot_id     TEXT,
    -- /proc/self/ns/pid: a pid means one process only in its namespace
    pid_ns      TEXT,
    -- the process's start, clock ticks after boot (/proc/PID/stat field
    -- 22): a pid reused by another process has another start
    start_ticks INTEGER,
    -- Unix seconds
    since       REAL NOT NULL
);
"#,
];

/// The schema version this build writes: the number of migrations.
pub fn latest_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Bring the database from whatever version it has up to `target` in one
/// IMMEDIATE transaction, re-reading the version under the write lock so two
/// processes opening the same old file do not both migrate it. Returns the
/// version found. The caller has already refused newer versions and foreign
/// files; `target` above the found version is applied step by step.
pub fn migrate(conn: &Connection, target: i64) -> rusqlite::Result<i64> {
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found < target {
        for step in &MIGRATIONS[found.max(0) as usize..target as usize] {
            tx.execute_batch(step)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.pragma_update(None, "user_version", target)?;
    }
    tx.commit()?;
    Ok(found)
}
