//! The store: every run, its host facts, its points and every sample, in one
//! SQLite file (`./smtlab.db` unless `--db PATH`).
//!
//! Owns the file format ([`schema`]: versioned migrations) and the mapping
//! between the record types of `smtlab-types` (points, samples, runs) and
//! rows. Called by `run` (writes, as it measures), `analyse` and `report`
//! (reads), and the CLI's `runs` and `show`. It knows nothing of how samples
//! are measured.
//!
//! # Durability
//!
//! The promise is "every sample is committed as soon as it is measured;
//! `kill -9` loses nothing committed": [`Store::add_sample`] writes a sample
//! with its workers and counters in one transaction, so a sample is either
//! wholly there or absent. The file is in WAL mode with `synchronous=NORMAL`:
//! a commit has written the transaction to the `-wal` file (the kernel's page
//! cache) before it returns, so a killed or crashed process loses nothing
//! committed, and the next open recovers from the WAL. What NORMAL gives up
//! against FULL is the fsync per commit: a power loss or kernel crash may roll
//! back the last few commits (never corrupt the file). An fsync per sample
//! would cost milliseconds of disk traffic between measurements, on the
//! machine being measured; [`Store::finish_run`] checkpoints instead, which
//! syncs the WAL once per run.
//!
//! WAL also lets `smtlab runs` read while a run writes: readers never block
//! the writer nor see half a sample, and `busy_timeout` covers the short
//! waits that remain (checkpoints, two runs writing the same file).
//!
//! # Exactness
//!
//! [`Store::samples`] returns exactly the [`Sample`]s that were added: REAL
//! columns hold IEEE doubles bit for bit, and vectors come back in insertion
//! order. Two limits of SQLite itself: a NaN is stored as NULL (it reads back
//! as `None`, or NaN where the field is not optional), and an integer above
//! `i64::MAX` is refused rather than rounded.

mod host;
mod schema;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::Type;
use rusqlite::{ffi, params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::Serialize;

pub use host::{collect_host_facts, collect_host_facts_from};
pub use schema::{latest_version as schema_version, APPLICATION_ID};
pub use smtlab_types::{HostFacts, RunRecord, RunStatus, RunSummary};

use smtlab_types::{
    CounterScope, CounterStatus, CounterValue, ResourceUsage, Sample, SampleStatus, WorkerSample,
};
use smtlab_types::{Mode, Point, Program, Spawn};

/// How long a statement waits for another connection's lock before failing
/// with "database is locked". Writers hold the lock for one sample (well
/// under a millisecond) and checkpoints for a few milliseconds, so this is
/// only reached when something is wrong.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// What the store can fail with; every message names the database file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("--db {}: not an smtlab database ({detail})", path.display())]
    NotSmtlab { path: PathBuf, detail: String },
    #[error(
        "--db {}: no such database (nothing was run with this --db; \
         `smtlab run` creates it)",
        path.display()
    )]
    Missing { path: PathBuf },
    #[error(
        "--db {}: schema version {found} is newer than this smtlab's ({known}); \
         read it with a newer smtlab",
        path.display()
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no run {run_id} in {}", path.display())]
    NoRun { path: PathBuf, run_id: i64 },
    #[error("no point {point_id} in {}", path.display())]
    NoPoint { path: PathBuf, point_id: i64 },
    #[error(
        "--db {}: run {run_id} already has a different point {idx} \
         (was the plan changed since the run started?)",
        path.display()
    )]
    PointMismatch {
        path: PathBuf,
        run_id: i64,
        idx: usize,
    },
    #[error("--db {}: point {point_id} already has sample {seq}", path.display())]
    DuplicateSample {
        path: PathBuf,
        point_id: i64,
        seq: usize,
    },
    /// A value the store cannot hold, or a request that does not fit the data.
    #[error("--db {}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    /// Any other SQLite failure, with what the store was doing.
    #[error("--db {}: {context}: {error}", path.display())]
    Sqlite {
        path: PathBuf,
        context: String,
        error: rusqlite::Error,
    },
}

/// What [`Store::create_run`] records about a new run.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// argv as given.
    pub command_line: Vec<String>,
    /// smtlab's version.
    pub version: String,
    pub git_commit: Option<String>,
    pub seed: u64,
    /// The run's full configuration, opaque to the store; `--resume`
    /// rebuilds the plan from it.
    pub config_json: serde_json::Value,
    pub host: HostFacts,
}

/// An open smtlab database.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Open the database at `path`, creating it if missing and bringing an
    /// older schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open(path).map_err(|error| StoreError::Sqlite {
            path: path.to_path_buf(),
            context: "cannot open".into(),
            error,
        })?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.init()?;
        Ok(store)
    }

    /// Open a database that must already exist (`smtlab runs`, `show`):
    /// a mistyped `--db` is an error, not a new empty file.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        Store::open(path)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Check the file is ours and not from the future, set the connection up,
    /// migrate.
    fn init(&self) -> Result<(), StoreError> {
        let conn = &self.conn;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| self.err("setting busy_timeout", e))?;
        conn.set_prepared_statement_cache_capacity(32);

        // The first read of the header: where a file that is not SQLite
        // fails (SQLITE_NOTADB).
        let identity = conn
            .pragma_query_value(None, "application_id", |r| r.get::<_, i32>(0))
            .and_then(|app| {
                conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
                    .map(|v| (app, v))
            });
        let (app_id, version) = match identity {
            Ok(v) => v,
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
                return Err(self.not_smtlab(e.to_string()));
            }
            Err(e) => return Err(self.err("reading the schema version", e)),
        };
        if app_id != 0 && app_id != APPLICATION_ID {
            return Err(self.not_smtlab(format!(
                "its application_id {app_id:#x} belongs to another program"
            )));
        }
        if app_id == 0 && version != 0 {
            return Err(self.not_smtlab(format!(
                "user_version {version} without smtlab's application_id"
            )));
        }
        if version == 0 {
            // A fresh or empty file becomes an smtlab database; a SQLite file
            // holding something else is left alone.
            let mut st = conn
                .prepare(
                    "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
                )
                .map_err(|e| self.err("reading the schema", e))?;
            let names = st
                .query_map([], |r| r.get::<_, String>(0))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
                .map_err(|e| self.err("reading the schema", e))?;
            if !names.is_empty() {
                return Err(self.not_smtlab(format!("it holds other tables: {}", names.join(", "))));
            }
        }
        let known = schema::latest_version();
        if version > known {
            return Err(self.too_new(version));
        }

        // WAL persists in the file; setting it again is a no-op. Where WAL
        // is impossible (a filesystem without shared memory), the rollback
        // journal with synchronous=FULL keeps the same kill -9 promise.
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(|e| self.err("setting journal_mode=WAL", e))?;
        let sync = if mode.eq_ignore_ascii_case("wal") {
            "NORMAL"
        } else {
            "FULL"
        };
        conn.pragma_update(None, "synchronous", sync)
            .map_err(|e| self.err("setting synchronous", e))?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(|e| self.err("enabling foreign keys", e))?;

        if version < known {
            let found = schema::migrate(conn, known).map_err(|e| {
                self.err(
                    format!("migrating the schema from version {version} to {known}"),
                    e,
                )
            })?;
            // Another, newer smtlab may have migrated it meanwhile.
            if found > known {
                return Err(self.too_new(found));
            }
        }
        Ok(())
    }

    /// Record a new run (status `running`, started now); returns its id.
    pub fn create_run(&self, new: &NewRun) -> Result<i64, StoreError> {
        let command_line = self.to_json(&new.command_line, "command line")?;
        let config = self.to_json(&new.config_json, "configuration")?;
        let host = self.to_json(&new.host, "host facts")?;
        let mut st = self
            .conn
            .prepare_cached(
                "INSERT INTO runs (started_at, status, command_line, smtlab_version, \
                 git_commit, seed, config_json, host_json) \
                 VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(|e| self.err("recording a new run", e))?;
        st.execute(params![
            unix_now(),
            command_line,
            new.version,
            new.git_commit,
            new.seed.to_string(),
            config,
            host
        ])
        .map_err(|e| self.err("recording a new run", e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Record a point of a run; returns its id. Idempotent on
    /// `(run_id, p.index)`, so `--resume` can replay the plan: an identical
    /// point already stored returns the existing id, a different one is
    /// [`StoreError::PointMismatch`].
    pub fn add_point(&self, run_id: i64, p: &Point) -> Result<i64, StoreError> {
        let context = || format!("recording point {} of run {run_id}", p.index);
        let (workload, params_json, command) = match &p.program {
            Program::Builtin { workload, params } => (
                Some(workload.as_str()),
                Some(self.to_json(params, "workload parameters")?),
                None,
            ),
            Program::Command { template } => (None, None, Some(template.as_str())),
        };
        let (processes, threads) = p.model.shape(p.workers);
        let cpus_json = match &p.cpus {
            Some(cpus) => Some(self.to_json(cpus, "CPU list")?),
            None => None,
        };
        let (mode, mode_value) = match p.mode {
            Mode::FixedTime { seconds } => ("fixed_time", rusqlite::types::Value::Real(seconds)),
            Mode::FixedWork { work } => (
                "fixed_work",
                rusqlite::types::Value::Integer(self.int(work, "--work")?),
            ),
        };
        let spawn = match p.spawn {
            Spawn::Exec => "exec",
            Spawn::Fork => "fork",
        };
        let point_json = self.to_json(p, "point")?;

        let mut st = self
            .conn
            .prepare_cached(
                "INSERT INTO points (run_id, idx, program, workload, params_json, command, \
                 model, processes, threads_per_process, workers, spawn, placement, cpus_json, \
                 oversubscription, alloc, mode, mode_value, metric, unit, higher_is_better, \
                 point_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
                 ?16, ?17, ?18, ?19, ?20, ?21) \
                 ON CONFLICT (run_id, idx) DO NOTHING",
            )
            .map_err(|e| self.err(context(), e))?;
        let inserted = st
            .execute(params![
                run_id,
                p.index,
                p.program.label(),
                workload,
                params_json,
                command,
                p.model.to_string(),
                processes,
                threads,
                p.workers,
                spawn,
                p.placement,
                cpus_json,
                p.oversubscription,
                p.alloc,
                mode,
                mode_value,
                p.metric.name,
                p.metric.unit,
                p.metric.higher_is_better,
                point_json,
            ])
            .map_err(|e| {
                if extended_code(&e) == Some(ffi::SQLITE_CONSTRAINT_FOREIGNKEY) {
                    self.no_run(run_id)
                } else {
                    self.err(context(), e)
                }
            })?;
        if inserted == 1 {
            return Ok(self.conn.last_insert_rowid());
        }

        // Already there (a resumed run): it must be the same point, or
        // samples of two different configurations would mix.
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, point_json, oversubscription, mode_value \
                 FROM points WHERE run_id = ?1 AND idx = ?2",
            )
            .map_err(|e| self.err(context(), e))?;
        let (id, stored) = st
            .query_row(params![run_id, p.index], |r| {
                Ok((r.get(0)?, decode_point(r, 1)?))
            })
            .map_err(|e| self.err(context(), e))?;
        if stored != *p {
            return Err(StoreError::PointMismatch {
                path: self.path.clone(),
                run_id,
                idx: p.index,
            });
        }
        Ok(id)
    }

    /// Commit one sample of a point with its workers and all counters, in one
    /// transaction: after a crash it is either wholly stored or absent.
    /// Returns the sample's id.
    pub fn add_sample(&self, point_id: i64, s: &Sample) -> Result<i64, StoreError> {
        let context = || format!("storing sample {} of point {point_id}", s.seq);
        let err = |e| self.err(context(), e);
        // IMMEDIATE takes the write lock now: a deferred transaction that
        // finds another writer when it first writes fails at once instead
        // of waiting out busy_timeout.
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        let u = &s.usage;
        // NULL rather than `{}` when there is nothing extra, like every
        // sample stored before the column existed.
        let extras_json = if s.extras.is_empty() {
            None
        } else {
            Some(self.to_json(&s.extras, "extras")?)
        };
        let sample_id = {
            let mut st = self
                .conn
                .prepare_cached(
                    "INSERT INTO samples (point_id, seq, warmup, status, reason, started_at, \
                     wall_s, ops, metric, user_s, sys_s, voluntary_cs, involuntary_cs, \
                     minor_faults, major_faults, migrations, peak_rss_kb, pss_kb, anon_huge_kb, \
                     extras_json) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, \
                     ?16, ?17, ?18, ?19, ?20)",
                )
                .map_err(err)?;
            st.execute(params![
                point_id,
                s.seq,
                s.warmup,
                s.status.as_str(),
                s.reason,
                s.started_at,
                s.wall_s,
                self.opt_int(s.ops, "ops")?,
                s.metric,
                u.user_s,
                u.sys_s,
                self.opt_int(u.voluntary_cs, "voluntary_cs")?,
                self.opt_int(u.involuntary_cs, "involuntary_cs")?,
                self.opt_int(u.minor_faults, "minor_faults")?,
                self.opt_int(u.major_faults, "major_faults")?,
                self.opt_int(u.migrations, "migrations")?,
                self.opt_int(u.peak_rss_kb, "peak_rss_kb")?,
                self.opt_int(u.pss_kb, "pss_kb")?,
                self.opt_int(u.anon_huge_kb, "anon_huge_kb")?,
                extras_json,
            ])
            .map_err(|e| match extended_code(&e) {
                Some(ffi::SQLITE_CONSTRAINT_UNIQUE) => StoreError::DuplicateSample {
                    path: self.path.clone(),
                    point_id,
                    seq: s.seq,
                },
                Some(ffi::SQLITE_CONSTRAINT_FOREIGNKEY) => StoreError::NoPoint {
                    path: self.path.clone(),
                    point_id,
                },
                _ => self.err(context(), e),
            })?;
            self.conn.last_insert_rowid()
        };
        {
            let mut workers = self
                .conn
                .prepare_cached(
                    "INSERT INTO worker_samples (sample_id, worker, rank, thread, pid, tid, \
                     cpu, last_cpu, ops, start_s, end_s) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                )
                .map_err(err)?;
            for w in &s.workers {
                workers
                    .execute(params![
                        sample_id,
                        w.worker,
                        w.rank,
                        w.thread,
                        w.pid,
                        w.tid,
                        w.cpu,
                        w.last_cpu,
                        self.int(w.ops, "worker ops")?,
                        w.start_s,
                        w.end_s,
                    ])
                    .map_err(|e| {
                        if extended_code(&e) == Some(ffi::SQLITE_CONSTRAINT_UNIQUE) {
                            self.invalid(format!(
                                "sample {} of point {point_id} has two workers numbered {}",
                                s.seq, w.worker
                            ))
                        } else {
                            self.err(context(), e)
                        }
                    })?;
                for c in &w.counters {
                    self.insert_counter(sample_id, Some(w.worker), c)
                        .map_err(|e| self.counter_err(e, c, &context))?;
                }
            }
            for c in &s.counters {
                self.insert_counter(sample_id, None, c)
                    .map_err(|e| self.counter_err(e, c, &context))?;
            }
        }
        tx.commit().map_err(err)?;
        Ok(sample_id)
    }

    fn insert_counter(
        &self,
        sample_id: i64,
        worker: Option<usize>,
        c: &CounterValue,
    ) -> Result<(), CounterInsertError> {
        let raw = c
            .raw
            .map(i64::try_from)
            .transpose()
            .map_err(|_| CounterInsertError::Range)?;
        let mut st = self.conn.prepare_cached(
            "INSERT INTO counters (sample_id, worker, name, scope, status, raw, value, \
             fraction_running, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        st.execute(params![
            sample_id,
            worker,
            c.name,
            c.scope.as_str(),
            counter_status_str(c.status),
            raw,
            c.value,
            c.fraction_running,
            c.reason,
        ])?;
        Ok(())
    }

    fn counter_err(
        &self,
        e: CounterInsertError,
        c: &CounterValue,
        context: &dyn Fn() -> String,
    ) -> StoreError {
        match e {
            CounterInsertError::Range => self.invalid(format!(
                "{}: counter {} raw count {} exceeds SQLite's INTEGER range",
                context(),
                c.name,
                c.raw.unwrap_or_default()
            )),
            CounterInsertError::Sqlite(e) => self.err(context(), e),
        }
    }

    /// Flag outliers among a point's measured samples: the listed seqs get
    /// `outlier = 1`, every other non-warm-up `ok` sample `0`, the rest
    /// (warm-ups, failures) NULL. Replaces any earlier flags.
    pub fn set_outliers(&self, point_id: i64, outlier_seqs: &[usize]) -> Result<(), StoreError> {
        let context = || format!("flagging outliers of point {point_id}");
        let err = |e| self.err(context(), e);
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        self.conn
            .prepare_cached(
                "UPDATE samples SET outlier = \
                 CASE WHEN warmup = 0 AND status = 'ok' THEN 0 ELSE NULL END \
                 WHERE point_id = ?1",
            )
            .and_then(|mut st| st.execute([point_id]))
            .map_err(err)?;
        let mut st = self
            .conn
            .prepare_cached(
                "UPDATE samples SET outlier = 1 \
                 WHERE point_id = ?1 AND seq = ?2 AND warmup = 0 AND status = 'ok'",
            )
            .map_err(err)?;
        for &seq in outlier_seqs {
            if st.execute(params![point_id, seq]).map_err(err)? == 0 {
                return Err(self.invalid(format!(
                    "point {point_id} has no measured ok sample {seq} to flag as an outlier"
                )));
            }
        }
        drop(st);
        tx.commit().map_err(err)
    }

    /// The outlier flag of each of a point's samples, by seq: `None` for
    /// warm-ups, failures, and samples not yet analysed.
    pub fn outlier_flags(&self, point_id: i64) -> Result<Vec<(usize, Option<bool>)>, StoreError> {
        let context = || format!("reading outlier flags of point {point_id}");
        let mut st = self
            .conn
            .prepare_cached("SELECT seq, outlier FROM samples WHERE point_id = ?1 ORDER BY seq")
            .map_err(|e| self.err(context(), e))?;
        let rows = st
            .query_map([point_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(context(), e));
        rows
    }

    /// End a run: its final status, finished now. Then checkpoint the WAL,
    /// which fsyncs it: the run survives a power loss from here on.
    pub fn finish_run(&self, run_id: i64, status: RunStatus) -> Result<(), StoreError> {
        let n = self
            .conn
            .prepare_cached("UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3")
            .and_then(|mut st| st.execute(params![status.as_str(), unix_now(), run_id]))
            .map_err(|e| self.err(format!("finishing run {run_id}"), e))?;
        if n == 0 {
            return Err(self.no_run(run_id));
        }
        // Best effort: everything is committed already; a checkpoint that a
        // reader holds back only delays the fsync to a later checkpoint.
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        Ok(())
    }

    /// Change a run's status without finishing it, e.g. back to `running`
    /// on `--resume` (which clears `finished_at`).
    pub fn set_run_status(&self, run_id: i64, status: RunStatus) -> Result<(), StoreError> {
        let n = self
            .conn
            .prepare_cached(
                "UPDATE runs SET status = ?1, \
                 finished_at = CASE WHEN ?1 = 'running' THEN NULL ELSE finished_at END \
                 WHERE id = ?2",
            )
            .and_then(|mut st| st.execute(params![status.as_str(), run_id]))
            .map_err(|e| self.err(format!("setting the status of run {run_id}"), e))?;
        if n == 0 {
            return Err(self.no_run(run_id));
        }
        Ok(())
    }

    /// Every run, oldest first, with its point and sample counts.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let err = |e| self.err("listing runs", e);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT r.id, r.started_at, r.finished_at, r.status, r.command_line, \
                 json_extract(r.host_json, '$.hostname'), \
                 (SELECT count(*) FROM points p WHERE p.run_id = r.id), \
                 (SELECT count(*) FROM samples s JOIN points p ON p.id = s.point_id \
                  WHERE p.run_id = r.id), \
                 (SELECT count(*) FROM samples s JOIN points p ON p.id = s.point_id \
                  WHERE p.run_id = r.id AND s.status <> 'ok') \
                 FROM runs r ORDER BY r.id",
            )
            .map_err(err)?;
        let rows = st
            .query_map([], |r| {
                Ok(RunSummary {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    finished_at: r.get(2)?,
                    status: parse_col(r, 3, RunStatus::parse, "run status")?,
                    command_line: json_col(r, 4)?,
                    hostname: r.get(5)?,
                    points: r.get(6)?,
                    samples: r.get(7)?,
                    failed_samples: r.get(8)?,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(err);
        rows
    }

    /// One run; [`StoreError::NoRun`] if there is none with that id.
    pub fn run(&self, run_id: i64) -> Result<RunRecord, StoreError> {
        let err = |e| self.err(format!("reading run {run_id}"), e);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, started_at, finished_at, status, command_line, smtlab_version, \
                 git_commit, seed, config_json, host_json FROM runs WHERE id = ?1",
            )
            .map_err(err)?;
        st.query_row([run_id], |r| {
            Ok(RunRecord {
                id: r.get(0)?,
                started_at: r.get(1)?,
                finished_at: r.get(2)?,
                status: parse_col(r, 3, RunStatus::parse, "run status")?,
                command_line: json_col(r, 4)?,
                version: r.get(5)?,
                git_commit: r.get(6)?,
                seed: parse_col(r, 7, |s| s.parse().ok(), "seed")?,
                config_json: json_col(r, 8)?,
                host: json_col(r, 9)?,
            })
        })
        .optional()
        .map_err(err)?
        .ok_or_else(|| self.no_run(run_id))
    }

    /// The most recent run's id, if any.
    pub fn latest_run_id(&self) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row("SELECT max(id) FROM runs", [], |r| r.get(0))
            .map_err(|e| self.err("finding the latest run", e))
    }

    /// A run's points with their ids, in plan order.
    pub fn points(&self, run_id: i64) -> Result<Vec<(i64, Point)>, StoreError> {
        let err = |e| self.err(format!("reading the points of run {run_id}"), e);
        let exists: bool = self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)")
            .and_then(|mut st| st.query_row([run_id], |r| r.get(0)))
            .map_err(err)?;
        if !exists {
            return Err(self.no_run(run_id));
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT id, point_json, oversubscription, mode_value \
                 FROM points WHERE run_id = ?1 ORDER BY idx",
            )
            .map_err(err)?;
        let rows = st
            .query_map([run_id], |r| Ok((r.get(0)?, decode_point(r, 1)?)))
            .and_then(|rows| rows.collect())
            .map_err(err);
        rows
    }

    /// A point's samples, ordered by seq, exactly as they were added
    /// (workers and counters included, in their original order).
    pub fn samples(&self, point_id: i64) -> Result<Vec<Sample>, StoreError> {
        let err = |e| self.err(format!("reading the samples of point {point_id}"), e);
        // Three queries per point rather than three per sample: the
        // workers and counters of all its samples at once, in insertion
        // (rowid) order, dealt out by sample id. One read transaction, so
        // the three see the same snapshot while a run goes on writing.
        let _snapshot =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Deferred).map_err(err)?;
        let mut samples: Vec<Sample> = Vec::new();
        let mut by_id: HashMap<i64, usize> = HashMap::new();
        {
            let mut st = self
                .conn
                .prepare_cached(
                    "SELECT id, seq, warmup, status, reason, started_at, wall_s, ops, metric, \
                     user_s, sys_s, voluntary_cs, involuntary_cs, minor_faults, major_faults, \
                     migrations, peak_rss_kb, pss_kb, anon_huge_kb, extras_json \
                     FROM samples WHERE point_id = ?1 ORDER BY seq",
                )
                .map_err(err)?;
            let mut rows = st.query([point_id]).map_err(err)?;
            while let Some(r) = rows.next().map_err(err)? {
                let sample = (|| {
                    Ok::<_, rusqlite::Error>(Sample {
                        seq: r.get(1)?,
                        warmup: r.get(2)?,
                        status: parse_col(r, 3, SampleStatus::parse, "sample status")?,
                        reason: r.get(4)?,
                        started_at: real_or_nan(r, 5)?,
                        wall_s: real_or_nan(r, 6)?,
                        ops: r.get(7)?,
                        metric: r.get(8)?,
                        usage: ResourceUsage {
                            user_s: r.get(9)?,
                            sys_s: r.get(10)?,
                            voluntary_cs: r.get(11)?,
                            involuntary_cs: r.get(12)?,
                            minor_faults: r.get(13)?,
                            major_faults: r.get(14)?,
                            migrations: r.get(15)?,
                            peak_rss_kb: r.get(16)?,
                            pss_kb: r.get(17)?,
                            anon_huge_kb: r.get(18)?,
                        },
                        counters: Vec::new(),
                        workers: Vec::new(),
                        extras: match r.get_ref(19)? {
                            rusqlite::types::ValueRef::Null => Default::default(),
                            _ => json_col(r, 19)?,
                        },
                    })
                })()
                .map_err(err)?;
                by_id.insert(r.get(0).map_err(err)?, samples.len());
                samples.push(sample);
            }
        }
        if samples.is_empty() {
            return Ok(samples);
        }

        // (sample index, worker number) → index in that sample's workers.
        let mut worker_at: HashMap<(usize, usize), usize> = HashMap::new();
        {
            let mut st = self
                .conn
                .prepare_cached(
                    "SELECT w.sample_id, w.worker, w.rank, w.thread, w.pid, w.tid, w.cpu, \
                     w.last_cpu, w.ops, w.start_s, w.end_s \
                     FROM worker_samples w JOIN samples s ON s.id = w.sample_id \
                     WHERE s.point_id = ?1 ORDER BY w.id",
                )
                .map_err(err)?;
            let mut rows = st.query([point_id]).map_err(err)?;
            while let Some(r) = rows.next().map_err(err)? {
                let sample_id: i64 = r.get(0).map_err(err)?;
                let worker = (|| {
                    Ok::<_, rusqlite::Error>(WorkerSample {
                        worker: r.get(1)?,
                        rank: r.get(2)?,
                        thread: r.get(3)?,
                        pid: r.get(4)?,
                        tid: r.get(5)?,
                        cpu: r.get(6)?,
                        last_cpu: r.get(7)?,
                        ops: r.get(8)?,
                        start_s: real_or_nan(r, 9)?,
                        end_s: real_or_nan(r, 10)?,
                        counters: Vec::new(),
                    })
                })()
                .map_err(err)?;
                let si = self.sample_index(&by_id, sample_id, point_id)?;
                let workers = &mut samples[si].workers;
                worker_at.insert((si, worker.worker), workers.len());
                workers.push(worker);
            }
        }
        {
            let mut st = self
                .conn
                .prepare_cached(
                    "SELECT c.sample_id, c.worker, c.name, c.scope, c.status, c.raw, c.value, \
                     c.fraction_running, c.reason \
                     FROM counters c JOIN samples s ON s.id = c.sample_id \
                     WHERE s.point_id = ?1 ORDER BY c.id",
                )
                .map_err(err)?;
            let mut rows = st.query([point_id]).map_err(err)?;
            while let Some(r) = rows.next().map_err(err)? {
                let (sample_id, worker, counter) = (|| {
                    Ok::<_, rusqlite::Error>((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<usize>>(1)?,
                        CounterValue {
                            name: r.get(2)?,
                            scope: parse_col(r, 3, parse_counter_scope, "counter scope")?,
                            status: parse_col(r, 4, parse_counter_status, "counter status")?,
                            raw: r.get(5)?,
                            value: r.get(6)?,
                            fraction_running: r.get(7)?,
                            reason: r.get(8)?,
                        },
                    ))
                })()
                .map_err(err)?;
                let si = self.sample_index(&by_id, sample_id, point_id)?;
                match worker {
                    None => samples[si].counters.push(counter),
                    Some(w) => match worker_at.get(&(si, w)) {
                        Some(&wi) => samples[si].workers[wi].counters.push(counter),
                        None => {
                            return Err(self.invalid(format!(
                                "corrupt record: a counter of sample {} of point {point_id} \
                                 names worker {w}, which the sample does not have",
                                samples[si].seq
                            )))
                        }
                    },
                }
            }
        }
        Ok(samples)
    }

    /// Where sample row `sample_id` went in [`Store::samples`]'s vector; the
    /// snapshot makes a miss impossible short of a damaged file.
    fn sample_index(
        &self,
        by_id: &HashMap<i64, usize>,
        sample_id: i64,
        point_id: i64,
    ) -> Result<usize, StoreError> {
        by_id.get(&sample_id).copied().ok_or_else(|| {
            self.invalid(format!(
                "corrupt record: sample row {sample_id} of point {point_id} vanished while read"
            ))
        })
    }

    // ----- errors -------------------------------------------------------

    fn err(&self, context: impl Into<String>, error: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            context: context.into(),
            error,
        }
    }

    fn invalid(&self, detail: String) -> StoreError {
        StoreError::Invalid {
            path: self.path.clone(),
            detail,
        }
    }

    fn not_smtlab(&self, detail: String) -> StoreError {
        StoreError::NotSmtlab {
            path: self.path.clone(),
            detail,
        }
    }

    fn too_new(&self, found: i64) -> StoreError {
        StoreError::TooNew {
            path: self.path.clone(),
            found,
            known: schema::latest_version(),
        }
    }

    fn no_run(&self, run_id: i64) -> StoreError {
        StoreError::NoRun {
            path: self.path.clone(),
            run_id,
        }
    }

    fn to_json<T: Serialize + ?Sized>(&self, v: &T, what: &str) -> Result<String, StoreError> {
        serde_json::to_string(v).map_err(|e| self.invalid(format!("cannot encode the {what}: {e}")))
    }

    /// SQLite's INTEGER is signed: a u64 above `i64::MAX` is refused, not
    /// wrapped into a negative number.
    fn int(&self, v: u64, what: &str) -> Result<i64, StoreError> {
        i64::try_from(v)
            .map_err(|_| self.invalid(format!("{what} = {v} exceeds SQLite's INTEGER range")))
    }

    fn opt_int(&self, v: Option<u64>, what: &str) -> Result<Option<i64>, StoreError> {
        v.map(|v| self.int(v, what)).transpose()
    }
}

enum CounterInsertError {
    Range,
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for CounterInsertError {
    fn from(e: rusqlite::Error) -> Self {
        CounterInsertError::Sqlite(e)
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn extended_code(e: &rusqlite::Error) -> Option<i32> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
        _ => None,
    }
}

/// A column that must hold one of a fixed set of names (or a number in
/// text); anything else is a conversion error naming the value.
fn parse_col<T>(
    r: &rusqlite::Row<'_>,
    idx: usize,
    parse: impl Fn(&str) -> Option<T>,
    what: &str,
) -> rusqlite::Result<T> {
    let text: String = r.get(idx)?;
    parse(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            Type::Text,
            format!("unknown {what} `{text}`").into(),
        )
    })
}

fn json_col<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<T> {
    let text: String = r.get(idx)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

/// A REAL that the record type does not make optional: SQLite stores NaN as
/// NULL, so NULL reads back as NaN.
fn real_or_nan(r: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<f64> {
    Ok(r.get::<_, Option<f64>>(idx)?.unwrap_or(f64::NAN))
}

/// A point from `point_json` (column `idx`), with its floating-point fields
/// from the REAL columns that follow it (`oversubscription`, `mode_value`):
/// serde_json's default float parsing may be one ulp off, the REAL columns
/// are exact.
fn decode_point(r: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Point> {
    let mut p: Point = json_col(r, idx)?;
    p.oversubscription = r.get(idx + 1)?;
    if let Mode::FixedTime { seconds } = &mut p.mode {
        *seconds = r.get(idx + 2)?;
    }
    Ok(p)
}

fn counter_status_str(s: CounterStatus) -> &'static str {
    match s {
        CounterStatus::Ok => "ok",
        CounterStatus::Unsupported => "unsupported",
        CounterStatus::NotPermitted => "not_permitted",
        CounterStatus::Error => "error",
    }
}

fn parse_counter_status(s: &str) -> Option<CounterStatus> {
    Some(match s {
        "ok" => CounterStatus::Ok,
        "unsupported" => CounterStatus::Unsupported,
        "not_permitted" => CounterStatus::NotPermitted,
        "error" => CounterStatus::Error,
        _ => return None,
    })
}

fn parse_counter_scope(s: &str) -> Option<CounterScope> {
    Some(match s {
        "user" => CounterScope::User,
        "kernel" => CounterScope::Kernel,
        "all" => CounterScope::All,
        _ => return None,
    })
}

/// The engine commits every sample here as it is measured, and a resumed
/// run finds the samples already committed.
impl smtlab_measure::SampleLog for Store {
    type Error = StoreError;

    fn samples(&self, point_id: i64) -> Result<Vec<Sample>, StoreError> {
        Store::samples(self, point_id)
    }

    fn add_sample(&self, point_id: i64, sample: &Sample) -> Result<(), StoreError> {
        Store::add_sample(self, point_id, sample).map(|_| ())
    }

    fn set_outliers(&self, point_id: i64, seqs: &[usize]) -> Result<(), StoreError> {
        Store::set_outliers(self, point_id, seqs)
    }
}
