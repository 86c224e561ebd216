//! Runs: a new run recorded with its configuration and host facts, its
//! status as it goes (running, complete, interrupted), and the runs read
//! back for `runs`, `show`, `report` and `--resume`.

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, OptionalExtension};

use smtlab_types::{HostFacts, RunRecord, RunStatus, RunSummary, SharedHost};

use crate::columns::{json_col, parse_col};
use crate::error::StoreError;
use crate::owner::Owner;
use crate::store::Store;

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
    /// When the run began, if before it is recorded (Unix seconds): rank 0
    /// records a launcher's job at its end. `None`: now.
    pub started_at: Option<f64>,
}

impl Store {
    /// Record a new run (status `running`, started at `new.started_at` or
    /// now), measured by this process until it is finished (its owner:
    /// `owner.rs`); returns its id.
    pub fn create_run(&self, new: &NewRun) -> Result<i64, StoreError> {
        let err = |e| self.err("recording a new run", e);
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(err)?;
        let run_id = self.insert_run(new)?;
        self.own_run(run_id, &Owner::this_process())?;
        tx.commit().map_err(err)?;
        Ok(run_id)
    }

    fn insert_run(&self, new: &NewRun) -> Result<i64, StoreError> {
        let command_line = self.to_json(&new.command_line, "command line")?;
        let config = self.to_json(&new.config_json, "configuration")?;
        let host = self.to_json(&new.host, "host facts")?;
        let mut st = self
            .conn
            .prepare_cached(
                "INSERT INTO runs (started_at, status, command_line, smtlab_version, \
                 git_commit, seed, config_json, host_json, uid) \
                 VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, lower(hex(randomblob(16))))",
            )
            .map_err(|e| self.err("recording a new run", e))?;
        st.execute(params![
            new.started_at.unwrap_or_else(unix_now),
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

    /// End a run: its final status, finished now, and this process no
    /// longer its owner. Then checkpoint the WAL, which fsyncs it: the run
    /// survives a power loss from here on.
    pub fn finish_run(&self, run_id: i64, status: RunStatus) -> Result<(), StoreError> {
        let err = |e| self.err(format!("finishing run {run_id}"), e);
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )
        .map_err(err)?;
        let n = self
            .conn
            .prepare_cached("UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3")
            .and_then(|mut st| st.execute(params![status.as_str(), unix_now(), run_id]))
            .map_err(err)?;
        if n == 0 {
            return Err(self.no_run(run_id));
        }
        self.release_run(run_id, &Owner::this_process())?;
        tx.commit().map_err(err)?;
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

    /// Record in a run's host facts that other tasks of a launcher's job
    /// shared its host: a run resumed with `--shared-host` measured part of
    /// its samples beside them, whatever its first part did. The larger
    /// task count of the two is kept.
    pub fn set_shared_host(&self, run_id: i64, shared: &SharedHost) -> Result<(), StoreError> {
        let err = |e| self.err(format!("recording the shared host of run {run_id}"), e);
        let rec = self.run(run_id)?;
        if rec
            .host
            .shared_host
            .as_ref()
            .is_some_and(|old| old.tasks >= shared.tasks)
        {
            return Ok(());
        }
        let json = serde_json::to_string(shared).expect("a SharedHost serialises");
        self.conn
            .prepare_cached(
                "UPDATE runs SET host_json = json_set(host_json, '$.shared_host', json(?1)) \
                 WHERE id = ?2",
            )
            .and_then(|mut st| st.execute(params![json, run_id]))
            .map_err(err)?;
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
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
