//! Points: each point of a run's plan recorded once (idempotently, so a
//! resumed run replays its plan) and read back in plan order.

use rusqlite::{ffi, params};

use smtlab_types::{Mode, Point, Program, Spawn};

use crate::columns::{extended_code, json_col};
use crate::error::StoreError;
use crate::store::Store;

impl Store {
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
            // A server stores as the workload it is (`web`, `nginx`).
            // Its parameters as they always were stored, `client_cpus`
            // among them.
            Program::Server { server, .. } => (
                Some(server.as_str()),
                Some(self.to_json(&p.program.stored_params(), "server parameters")?),
                None,
            ),
            // The parts are in `point_json`; the columns name the co-run.
            Program::CoRun { .. } => (None, None, None),
            // DSM ranks store as their application (`sor`); the mechanism
            // is in the program's label and in `point_json`.
            Program::Ranks { app, params, .. } => (
                Some(app.as_str()),
                Some(self.to_json(params, "DSM parameters")?),
                None,
            ),
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
