//! The copy a merge makes, in two steps so the output's write lock is held
//! only while rows are inserted: first each input's runs that the output
//! lacks or holds in an older state are staged ([`Staging::stage`]), from
//! one snapshot of the input, into temporary tables of the output's
//! connection (which take no lock on the output); then, inside the one
//! IMMEDIATE transaction `merge` opens, [`Staging::write`] inserts them
//! all, set by set, in SQLite. Also which tables a merge copies and which
//! are a store's own (`check_tables`).

use std::collections::BTreeSet;
use std::path::PathBuf;

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use rusqlite::{Transaction, TransactionBehavior};
use serde::Serialize;

use crate::error::{StoreError, TableCheckError};
use crate::store::Store;

/// The tables a merge copies, parents first. Every other table of a store
/// is the store's own (the views are derived): a new table is added here,
/// or to [`OWN_TABLES`], by the migration that makes it (`check_tables`
/// refuses a schema with a table in neither, and a test makes sure).
const COPIED_TABLES: [&str; 5] = ["runs", "points", "samples", "worker_samples", "counters"];

/// Tables that describe the store itself, not its runs: its identity, and
/// the processes measuring into it now.
const OWN_TABLES: [&str; 2] = ["store_meta", "run_owners"];

/// What a merge did with one input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeSummary {
    /// The input as given.
    pub path: PathBuf,
    /// Its `store_id`.
    pub store_id: String,
    /// The host names of its runs, sorted (from their host facts).
    pub hosts: Vec<String>,
    /// Runs the output did not have.
    pub runs_added: u64,
    /// Runs the output had already (merged before, or its own).
    pub runs_present: u64,
    /// Of those, runs the input brought up to date (samples measured
    /// since, a status, outlier flags).
    pub runs_updated: u64,
    /// Points added (of new runs and of runs brought up to date).
    pub points: u64,
    /// Samples added, each with its workers and counters.
    pub samples: u64,
}

/// One input's runs to write, staged under its number `src`.
pub(crate) struct Plan {
    src: i64,
    summary: MergeSummary,
    runs: Vec<StagedRun>,
}

/// A run of an input staged with its points and samples, by its id there.
struct StagedRun {
    id: i64,
    uid: String,
}

/// A run's state, compared between an input and the output to leave alone
/// a run the output holds as the input does: status, end, points, samples,
/// every sample's outlier flag in order (`-` unset), a character each, and
/// the tasks it shared its host with.
type Digest = (String, Option<f64>, i64, i64, Option<String>, Option<i64>);

const DIGEST: &str = "SELECT r.status, r.finished_at, count(DISTINCT p.id), count(s.id), \
     group_concat(coalesce(s.outlier, '-'), '' ORDER BY p.idx, s.seq), \
     json_extract(r.host_json, '$.shared_host.tasks') \
     FROM runs r LEFT JOIN points p ON p.run_id = r.id LEFT JOIN samples s ON s.point_id = p.id \
     WHERE r.id = ?1 GROUP BY r.id";

fn digest(conn: &Connection, run_id: i64) -> rusqlite::Result<Digest> {
    conn.prepare_cached(DIGEST)?
        .query_row([run_id], |r| Digest::try_from(r))
}

/// The output's run with a uid, as a merge sees it.
struct OutputRun {
    id: i64,
    status: String,
    /// Measured into the output (no origin): the output's own, which no
    /// copy of it elsewhere may change.
    own: bool,
}

/// The output's temporary tables `merge_<table>`: every column of the table
/// and `src`, the input's number, without types (a value is kept exactly as
/// read, and the output's columns give it their affinity when it is
/// written, as the input's did). They live on the output's connection but
/// in its temporary database, so staging takes no lock on the output.
/// Dropped when done.
pub(crate) struct Staging<'a> {
    out: &'a Store,
    /// The columns of each copied table, from the output's schema (an input
    /// has the same once migrated).
    columns: Vec<Vec<String>>,
}

impl<'a> Staging<'a> {
    pub(crate) fn create(out: &'a Store) -> Result<Staging<'a>, StoreError> {
        let err = |e| out.err("preparing the merge", e);
        check_tables(&out.conn).map_err(|e| out.invalid(e.to_string()))?;
        let mut columns = Vec::new();
        let mut ddl = String::new();
        for table in COPIED_TABLES {
            let cols: Vec<String> = out
                .conn
                .prepare(&format!(
                    "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
                ))
                .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
                .map_err(err)?;
            ddl.push_str(&format!(
                "DROP TABLE IF EXISTS temp.merge_{table};\n\
                 CREATE TEMP TABLE merge_{table} (src, {});\n",
                list(&cols, "")
            ));
            columns.push(cols);
        }
        // The lookups of the write step: a run by its id, the rows of a
        // parent (points by run and index, samples by point and seq), a
        // point or sample by its id.
        ddl.push_str(
            "CREATE INDEX temp.merge_runs_id ON merge_runs (src, id);\n\
             CREATE INDEX temp.merge_points_run ON merge_points (src, run_id, idx);\n\
             CREATE INDEX temp.merge_points_id ON merge_points (src, id);\n\
             CREATE INDEX temp.merge_samples_point ON merge_samples (src, point_id, seq);\n\
             CREATE INDEX temp.merge_worker_samples_sample ON merge_worker_samples (src, sample_id);\n\
             CREATE INDEX temp.merge_counters_sample ON merge_counters (src, sample_id);\n",
        );
        out.conn.execute_batch(&ddl).map_err(err)?;
        Ok(Staging { out, columns })
    }

    fn cols(&self, table: &str) -> &[String] {
        let i = COPIED_TABLES
            .iter()
            .position(|t| *t == table)
            .expect("a copied table");
        &self.columns[i]
    }

    /// Stage the runs of input `src` the output lacks or holds in another
    /// state; the output is only read.
    pub(crate) fn stage(&self, src: i64, input: &Store) -> Result<Plan, StoreError> {
        let err = |e| input.err("reading it for the merge", e);
        let store_id = input.store_id()?;
        let runs: Vec<(i64, Option<String>, Option<String>)> = input
            .conn
            .prepare("SELECT id, uid, json_extract(host_json, '$.hostname') FROM runs ORDER BY id")
            .and_then(|mut st| {
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect()
            })
            .map_err(err)?;
        let mut plan = Plan {
            src,
            summary: MergeSummary {
                path: input.path.clone(),
                store_id,
                hosts: Vec::new(),
                runs_added: 0,
                runs_present: 0,
                runs_updated: 0,
                points: 0,
                samples: 0,
            },
            runs: Vec::new(),
        };
        let mut hosts = BTreeSet::new();
        for (id, uid, host) in runs {
            hosts.extend(host);
            let Some(uid) = uid else {
                return Err(input.invalid(format!(
                    "run {id} has no uid (was it written by hand?); it cannot be merged"
                )));
            };
            let theirs = digest(&input.conn, id).map_err(err)?;
            if let Some(ours) = self.output_run(&uid)? {
                let same = || {
                    digest(&self.out.conn, ours.id)
                        .map(|d| d == theirs)
                        .map_err(|e| self.out.err("reading it for the merge", e))
                };
                if ours.own || same()? {
                    plan.summary.runs_present += 1;
                    continue;
                }
            }
            self.stage_run(src, input, id)?;
            plan.runs.push(StagedRun { id, uid });
        }
        plan.summary.hosts = hosts.into_iter().collect();
        Ok(plan)
    }

    /// The output's run with this uid.
    fn output_run(&self, uid: &str) -> Result<Option<OutputRun>, StoreError> {
        self.out
            .conn
            .prepare_cached("SELECT id, status, origin_store IS NULL FROM main.runs WHERE uid = ?1")
            .and_then(|mut st| {
                st.query_row([uid], |r| {
                    Ok(OutputRun {
                        id: r.get(0)?,
                        status: r.get(1)?,
                        own: r.get(2)?,
                    })
                })
                .optional()
            })
            .map_err(|e| self.out.err("looking up a run to merge", e))
    }

    /// Copy one run of the input with its points, samples, workers and
    /// counters into the staging tables, every column as it is, from one
    /// snapshot of the input. A transaction per run: where the input is
    /// not in WAL mode (a filesystem without shared memory), reading it
    /// holds back a run writing to it, for one run at a time. The output's
    /// transaction writes only its temporary tables: no lock on the output.
    fn stage_run(&self, src: i64, input: &Store, run_id: i64) -> Result<(), StoreError> {
        let context = || format!("staging run {run_id}");
        let snapshot = Transaction::new_unchecked(&input.conn, TransactionBehavior::Deferred)
            .map_err(|e| input.err(context(), e))?;
        let staged = Transaction::new_unchecked(&self.out.conn, TransactionBehavior::Deferred)
            .map_err(|e| self.out.err(context(), e))?;
        const OF_RUN: &str = "IN (SELECT s.id FROM samples s JOIN points p ON p.id = s.point_id \
                              WHERE p.run_id = ?1)";
        for (table, filter) in [
            ("runs", "t.id = ?1".to_string()),
            ("points", "t.run_id = ?1".to_string()),
            (
                "samples",
                "t.point_id IN (SELECT id FROM points WHERE run_id = ?1)".to_string(),
            ),
            ("worker_samples", format!("t.sample_id {OF_RUN}")),
            ("counters", format!("t.sample_id {OF_RUN}")),
        ] {
            let cols = self.cols(table);
            let read = format!(
                "SELECT {} FROM main.{table} t WHERE {filter} ORDER BY t.id",
                list(cols, "t.")
            );
            let write = format!(
                "INSERT INTO temp.merge_{table} (src, {}) VALUES (?1, {})",
                list(cols, ""),
                (2..cols.len() + 2)
                    .map(|i| format!("?{i}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let what = || format!("staging the {table} of run {run_id}");
            let mut reader = input
                .conn
                .prepare_cached(&read)
                .map_err(|e| input.err(what(), e))?;
            let mut writer = self
                .out
                .conn
                .prepare_cached(&write)
                .map_err(|e| self.out.err(what(), e))?;
            let mut rows = reader.query([run_id]).map_err(|e| input.err(what(), e))?;
            let mut values: Vec<Value> = Vec::with_capacity(cols.len() + 1);
            while let Some(row) = rows.next().map_err(|e| input.err(what(), e))? {
                values.clear();
                values.push(Value::Integer(src));
                for i in 0..cols.len() {
                    values.push(row.get(i).map_err(|e| input.err(what(), e))?);
                }
                writer
                    .execute(params_from_iter(values.iter()))
                    .map_err(|e| self.out.err(what(), e))?;
            }
        }
        staged.commit().map_err(|e| self.out.err(context(), e))?;
        snapshot.commit().map_err(|e| input.err(context(), e))
    }

    /// Write one input's staged runs into the output, inside the merge's
    /// transaction.
    pub(crate) fn write(&self, plan: Plan) -> Result<MergeSummary, StoreError> {
        let mut summary = plan.summary;
        for run in &plan.runs {
            let written = self.write_run(plan.src, &summary.store_id, run)?;
            summary.points += written.points;
            summary.samples += written.samples;
            if written.added {
                summary.runs_added += 1;
            } else {
                summary.runs_present += 1;
                summary.runs_updated += u64::from(written.changed);
            }
        }
        Ok(summary)
    }

    /// One staged run into the output: the run if it is new, the points and
    /// samples it lacks, then the status and outlier flags of a run it had
    /// from an input as complete as it.
    fn write_run(&self, src: i64, store_id: &str, run: &StagedRun) -> Result<Written, StoreError> {
        let out = self.out;
        let err = |e| out.err(format!("merging run {} of input {}", run.id, src + 1), e);
        let exec = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> Result<u64, StoreError> {
            out.conn
                .prepare_cached(sql)
                .and_then(|mut st| st.execute(p))
                .map(|n| n as u64)
                .map_err(err)
        };

        // Looked up again under the write lock: another merge may have
        // brought the run since it was staged.
        let found = self.output_run(&run.uid)?;
        if found.as_ref().is_some_and(|f| f.own) {
            return Ok(Written::default());
        }
        let run_id = match &found {
            Some(f) => f.id,
            None => {
                exec(&self.insert_run_sql(), params![src, run.id, store_id])?;
                out.conn.last_insert_rowid()
            }
        };
        let points = exec(&self.insert_sql("points"), params![src, run.id, run_id])?;
        let max_before: i64 = out
            .conn
            .query_row("SELECT coalesce(max(id), 0) FROM main.samples", [], |r| {
                r.get(0)
            })
            .map_err(err)?;
        let samples = exec(&self.insert_sql("samples"), params![src, run.id, run_id])?;
        if samples > 0 {
            for table in ["worker_samples", "counters"] {
                exec(
                    &self.insert_sql(table),
                    params![src, run.id, run_id, max_before],
                )?;
            }
        }
        let Some(found) = found else {
            return Ok(Written {
                added: true,
                changed: true,
                points,
                samples,
            });
        };

        let mut changed = points + samples > 0;
        // The input's status and end (as staged, with its samples) when its
        // copy holds every sample the output has of the run (so it is the
        // newer copy) and it brought samples or ended the run.
        let (status, finished_at, complete): (String, Option<f64>, bool) = out
            .conn
            .prepare_cached(
                "SELECT r.status, r.finished_at, \
                 (SELECT count(*) FROM temp.merge_samples s \
                   JOIN temp.merge_points p ON p.src = s.src AND p.id = s.point_id \
                   WHERE p.src = ?1 AND p.run_id = ?2) \
                 = (SELECT count(*) FROM main.samples s \
                   JOIN main.points p ON p.id = s.point_id WHERE p.run_id = ?3) \
                 FROM temp.merge_runs r WHERE r.src = ?1 AND r.id = ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![src, run.id, run_id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
            })
            .map_err(err)?;
        let ends_it = found.status == "running" && status != "running";
        if complete && (samples > 0 || ends_it) {
            changed |= exec(
                "UPDATE main.runs SET status = ?1, finished_at = ?2 \
                 WHERE id = ?3 AND (status IS NOT ?1 OR finished_at IS NOT ?2)",
                params![status, finished_at, run_id],
            )? > 0;
        }
        changed |= exec(OUTLIERS, params![src, run.id, run_id])? > 0;
        changed |= exec(SHARED_HOST, params![src, run.id, run_id])? > 0;
        Ok(Written {
            added: false,
            changed,
            points,
            samples,
        })
    }

    /// `INSERT INTO main.runs` of staged run (?1 src, ?2 id), its origin
    /// kept if it has one, else its input's store (?3) and its id there.
    fn insert_run_sql(&self) -> String {
        let cols: Vec<String> = self
            .cols("runs")
            .iter()
            .filter(|c| *c != "id")
            .cloned()
            .collect();
        let values: Vec<String> = cols
            .iter()
            .map(|c| match c.as_str() {
                "origin_store" => "coalesce(t.origin_store, ?3)".to_string(),
                "origin_run_id" => "coalesce(t.origin_run_id, t.id)".to_string(),
                c => format!("t.{}", quote(c)),
            })
            .collect();
        format!(
            "INSERT INTO main.runs ({}) SELECT {} FROM temp.merge_runs t \
             WHERE t.src = ?1 AND t.id = ?2",
            list(&cols, ""),
            values.join(", ")
        )
    }

    /// `INSERT INTO main.<table>` of the staged rows of run (?1 src, ?2 id)
    /// that the output's run ?3 lacks, each row's parent remapped to the
    /// output's id, in the input's order. The workers and counters are those
    /// of the samples just added: the output's sample ids above ?4.
    fn insert_sql(&self, table: &str) -> String {
        let (parent, new_parent, from) = match table {
            "points" => (
                "run_id",
                "?3",
                "temp.merge_points t \
                 WHERE t.src = ?1 AND t.run_id = ?2 AND NOT EXISTS \
                 (SELECT 1 FROM main.points x WHERE x.run_id = ?3 AND x.idx = t.idx)"
                    .to_string(),
            ),
            "samples" => (
                "point_id",
                "np.id",
                "temp.merge_points p \
                 JOIN main.points np ON np.run_id = ?3 AND np.idx = p.idx \
                 JOIN temp.merge_samples t ON t.src = p.src AND t.point_id = p.id \
                 WHERE p.src = ?1 AND p.run_id = ?2 AND NOT EXISTS \
                 (SELECT 1 FROM main.samples x WHERE x.point_id = np.id AND x.seq = t.seq)"
                    .to_string(),
            ),
            _ => (
                "sample_id",
                "ns.id",
                format!(
                    "main.samples ns \
                     JOIN main.points np ON np.id = ns.point_id AND np.run_id = ?3 \
                     JOIN temp.merge_points p ON p.src = ?1 AND p.run_id = ?2 AND p.idx = np.idx \
                     JOIN temp.merge_samples s \
                       ON s.src = ?1 AND s.point_id = p.id AND s.seq = ns.seq \
                     JOIN temp.merge_{table} t ON t.src = ?1 AND t.sample_id = s.id \
                     WHERE ns.id > ?4"
                ),
            ),
        };
        let cols: Vec<String> = self
            .cols(table)
            .iter()
            .filter(|c| *c != "id" && *c != parent)
            .cloned()
            .collect();
        format!(
            "INSERT INTO main.{table} ({parent}, {}) SELECT {new_parent}, {} FROM {from} \
             ORDER BY t.id",
            list(&cols, ""),
            list(&cols, "t.")
        )
    }
}

/// Outlier flags of staged run (?1 src, ?2 id) onto the output's run ?3,
/// point by point, from an input that holds every sample the output has of
/// the point; a flag the input has not set yet (NULL) leaves the output's.
const OUTLIERS: &str = "WITH whole AS MATERIALIZED ( \
       SELECT p.id AS staged, np.id AS point FROM temp.merge_points p \
       JOIN main.points np ON np.run_id = ?3 AND np.idx = p.idx \
       WHERE p.src = ?1 AND p.run_id = ?2 \
       AND (SELECT count(*) FROM temp.merge_samples c WHERE c.src = ?1 AND c.point_id = p.id) \
         = (SELECT count(*) FROM main.samples c WHERE c.point_id = np.id)) \
     UPDATE main.samples AS x SET outlier = t.outlier \
     FROM whole w JOIN temp.merge_samples t ON t.src = ?1 AND t.point_id = w.staged \
     WHERE x.point_id = w.point AND x.seq = t.seq \
     AND t.outlier IS NOT NULL AND x.outlier IS NOT t.outlier";

/// The shared host of staged run (?1 src, ?2 id) onto the output's run ?3
/// when it counts more tasks than the output's (none counts 0): the larger
/// count is the store's own rule (`Store::set_shared_host`), so the copies
/// agree in the end whatever order they are merged in.
const SHARED_HOST: &str = "UPDATE main.runs AS x \
     SET host_json = json_set(x.host_json, '$.shared_host', json_extract(r.host_json, '$.shared_host')) \
     FROM temp.merge_runs r WHERE r.src = ?1 AND r.id = ?2 AND x.id = ?3 \
     AND coalesce(json_extract(r.host_json, '$.shared_host.tasks'), 0) \
       > coalesce(json_extract(x.host_json, '$.shared_host.tasks'), 0)";

/// What writing one run did.
#[derive(Default)]
struct Written {
    added: bool,
    /// A run the output had: anything of it changed.
    changed: bool,
    points: u64,
    samples: u64,
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        // Best effort: the tables are temporary and go with the connection.
        let drops: String = COPIED_TABLES
            .iter()
            .map(|t| format!("DROP TABLE IF EXISTS temp.merge_{t};"))
            .collect();
        let _ = self.out.conn.execute_batch(&drops);
    }
}

/// Every table of the store is copied or the store's own: a table a later
/// migration adds must be placed here, or a merge would drop its rows.
pub(crate) fn check_tables(conn: &Connection) -> Result<(), TableCheckError> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM main.sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .map_err(TableCheckError::List)?;
    let unknown: Vec<String> = tables
        .into_iter()
        .filter(|t| !COPIED_TABLES.contains(&t.as_str()) && !OWN_TABLES.contains(&t.as_str()))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(TableCheckError::Unknown(unknown))
    }
}

/// An identifier in double quotes.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Columns as a list, quoted, each after `prefix` (`t.`).
fn list(cols: &[String], prefix: &str) -> String {
    cols.iter()
        .map(|c| format!("{prefix}{}", quote(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store of the current schema has only tables a merge knows.
    #[test]
    fn merge_knows_every_table_of_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        check_tables(&store.conn).unwrap();
        store.conn.execute_batch("CREATE TABLE notes (x)").unwrap();
        let e = check_tables(&store.conn).unwrap_err();
        assert!(e.to_string().contains("notes"), "{e}");
    }

    /// The typed error of an unknown table says what the `String` said,
    /// word for word, and names the tables (not a list of references).
    #[test]
    fn unknown_table_error_names_the_tables_in_the_same_words() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db")).unwrap();
        store
            .conn
            .execute_batch("CREATE TABLE notes (x); CREATE TABLE extra (y)")
            .unwrap();
        match check_tables(&store.conn).unwrap_err() {
            e @ TableCheckError::Unknown(_) => assert_eq!(
                e.to_string(),
                "merge does not know table(s) [\"extra\", \"notes\"] of this schema; \
                 nothing was merged"
            ),
            e => panic!("not an unknown table: {e}"),
        }
    }
}
