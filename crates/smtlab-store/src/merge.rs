//! Merging stores (`smtlab merge A.db B.db -o fleet.db`): the runs of other
//! stores copied into one, with everything they hold (host facts, points,
//! samples with their workers, counters and extras), each run keeping where
//! it came from. Uses `store` and `error`.
//!
//! # Identity
//!
//! A run is matched across stores by its `uid` (random, made when it is
//! recorded; schema version 4), never by its id: the output numbers the
//! runs it receives after its own. So merging is idempotent: the same
//! store merged twice adds nothing, A then A and B adds only B's runs, a
//! store merged into a store that is merged again brings its runs once, and
//! a run of the output that comes back through another store is the
//! output's own. A merged run also records its *first* origin, the
//! `store_id` of the store it was measured into and its id there
//! (`origin_store`, `origin_run_id`; NULL for a run measured into this
//! store); its host is in its host facts, copied as they are.
//!
//! # A run that goes on
//!
//! A run merged while it was still being measured is brought up to date by
//! merging its store again. A committed sample never changes, so what the
//! output lacks is added: points by index, samples by (point, seq), each
//! with its workers and counters. The run's status and end are taken from
//! an input whose copy holds every sample the output has of the run (so it
//! is the newer copy) when it brought samples or ends a run the output
//! still has `running`: an older copy never turns a finished run back. The
//! outlier flags of a point are taken, likewise, from an input that holds
//! every sample the output has of the point (flags are computed over all of
//! them). A run measured into the output itself is never changed by a copy
//! of it that comes back. The one host fact that changes after a run is
//! recorded, that it shared its host with other tasks of a launcher's job
//! (`run --resume --shared-host`), is taken from whichever copy counts the
//! most tasks, as the store itself keeps it, so it arrives whatever the
//! order of the merges.
//!
//! # Checks first, then one transaction, briefly
//!
//! Every input is checked before anything is written anywhere: missing, not
//! a file, the output itself (by device and inode, so another path or a
//! symlink is caught), not an smtlab store (text, an empty file, another
//! program's SQLite file), a newer schema, damaged pages (SQLite's
//! `quick_check`); then the output (not another program's file, not
//! newer). Inputs are only read: an older one is read from a copy brought
//! up to date in memory, as every reader of a store reads it, and no input
//! is left with files beside it (`Store::open_unmigrated`). A failure
//! while an input is read (damage `quick_check` did not see) names that
//! input, never as a `--db`.
//!
//! An output that exists is written in the one transaction below, so a
//! failed merge leaves it as it was. One that does not is built under a
//! temporary name beside it (`fleet.db.merging-XXXXXX`) and moved into
//! place only when whole, never over a file another process made there
//! meanwhile: a failed merge leaves no output at all.
//!
//! The copy is made in two steps so the output's write lock is held only
//! while rows are inserted: first each input's runs that the output lacks
//! or holds in an older state are staged, from one snapshot of the input,
//! into temporary tables of the output's connection (which take no lock on
//! the output); then one IMMEDIATE transaction inserts them all, set by
//! set, in SQLite. A `smtlab run` writing the same store waits for that
//! transaction as for another run's sample (the store's busy timeout, 10
//! s), and the merge waits for its samples the same way. The transaction
//! grows with what is new: about half a second for 10,000 samples of two
//! workers and nine counters each on the 2-vCPU development VM, so a merge
//! of millions of samples is best made while no run writes the output. A
//! merge either adds everything or, on an error, nothing.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};
use rusqlite::{Transaction, TransactionBehavior};
use serde::Serialize;

use crate::error::{StoreError, TableCheckError};
use crate::store::{check_path, Store};

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

/// Where a merged run was measured: its first store and its id there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunOrigin {
    pub store_id: String,
    pub run_id: i64,
}

/// Why a merge did not happen. All but [`MergeError::Store`] are refusals
/// of a file the user named, found before anything was written.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// An input that is the output file, by whatever path.
    #[error(
        "{}: it is the output store (-o {}); a store cannot be merged into itself",
        input.display(),
        output.display()
    )]
    IntoItself { input: PathBuf, output: PathBuf },
    /// A file that cannot be merged from (`flag` empty) or into (`-o `),
    /// and why.
    #[error("{flag}{}: {why}", path.display())]
    Refused {
        flag: &'static str,
        path: PathBuf,
        why: String,
    },
    /// Reading an input (`flag` empty) or writing the output (`-o `)
    /// failed, not through a fault of the file: SQLite's reason.
    #[error("{flag}{}: {why}", path.display())]
    Failed {
        flag: &'static str,
        path: PathBuf,
        why: String,
    },
    /// A store failed otherwise.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl MergeError {
    /// A file the user named cannot be merged (a usage error); nothing was
    /// written.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, MergeError::Store(_) | MergeError::Failed { .. })
    }
}

impl Store {
    /// This store's identity: random, made once (when the store was made or
    /// reached schema version 4).
    pub fn store_id(&self) -> Result<String, StoreError> {
        self.conn
            .query_row("SELECT store_id FROM store_meta", [], |r| r.get(0))
            .map_err(|e| self.err("reading the store's identity", e))
    }

    /// Where a run was measured, if it was merged into this store; `None`
    /// for a run measured into it.
    pub fn run_origin(&self, run_id: i64) -> Result<Option<RunOrigin>, StoreError> {
        let row: Option<(Option<String>, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT origin_store, origin_run_id FROM runs WHERE id = ?1",
                [run_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| self.err(format!("reading the origin of run {run_id}"), e))?;
        match row {
            None => Err(self.no_run(run_id)),
            Some((Some(store_id), Some(run_id))) => Ok(Some(RunOrigin { store_id, run_id })),
            Some(_) => Ok(None),
        }
    }

    /// Merge the stores `inputs` into `output` (created if missing): check
    /// every file, then copy what the output lacks in one transaction. One
    /// summary per input, in order. See the module's documentation.
    pub fn merge<P: AsRef<Path>>(
        inputs: &[P],
        output: &Path,
    ) -> Result<Vec<MergeSummary>, MergeError> {
        let inputs: Vec<&Path> = inputs.iter().map(|p| p.as_ref()).collect();
        // 1. Every file checked; nothing written anywhere.
        let output_file = std::fs::metadata(output).ok().map(|m| (m.dev(), m.ino()));
        for input in &inputs {
            check_input(input, output, output_file)?;
        }
        let refused_output = |e: StoreError| refused("-o ", output, e);
        let exists = output.exists();
        if exists {
            Store::open_unmigrated(output).map_err(refused_output)?;
        } else {
            check_path(output).map_err(refused_output)?;
        }
        // 2. The inputs opened to be read, the output made or opened.
        let sources = inputs
            .iter()
            .map(|p| Store::open_read_only(p).map_err(|e| refused("", p, e)))
            .collect::<Result<Vec<Store>, MergeError>>()?;
        // 3. The copy.
        if exists {
            let out = Store::open(output).map_err(refused_output)?;
            let summaries = out
                .merge_from(&sources)
                .map_err(|e| named(e, &inputs, output))?;
            // Best effort, as at the end of a run: the checkpoint syncs the
            // WAL.
            let _ = out
                .conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            Ok(summaries)
        } else {
            merge_into_new(&sources, output).map_err(|e| named(e, &inputs, output))
        }
    }

    /// Stage each source's runs, then write them all in one transaction.
    fn merge_from(&self, sources: &[Store]) -> Result<Vec<MergeSummary>, MergeError> {
        let err = |e| self.err("merging", e);
        let staging = Staging::create(self)?;
        let plans = sources
            .iter()
            .enumerate()
            .map(|(k, src)| staging.stage(k as i64, src))
            .collect::<Result<Vec<Plan>, StoreError>>()?;
        // IMMEDIATE: the write lock now, waiting (busy_timeout) for a run
        // that is committing a sample, rather than failing on a lock
        // upgrade half-way.
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        let mut summaries = Vec::with_capacity(plans.len());
        for plan in plans {
            summaries.push(staging.write(plan)?);
        }
        tx.commit().map_err(err)?;
        Ok(summaries)
    }
}

/// A new output: built under a temporary name beside `output` (so the
/// rename stays on one filesystem), its WAL folded into it and closed (the
/// `-wal` and `-shm` files are named after the file, so none may remain),
/// then moved to `output` unless a file appeared there meanwhile. On any
/// failure the temporary file and its companions are removed: nobody else
/// knows their name.
fn merge_into_new(sources: &[Store], output: &Path) -> Result<Vec<MergeSummary>, MergeError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merge".into());
    let cannot = |why: String| MergeError::Failed {
        flag: "-o ",
        path: output.to_path_buf(),
        why,
    };
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{name}.merging-"))
        // What SQLite gives a file it creates, before the umask.
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|e| cannot(format!("cannot create a file in {}: {e}", dir.display())))?
        .into_temp_path();
    let (wal, shm) = crate::store::wal_files(&tmp);
    let built = (|| {
        let out = Store::open(&tmp)?;
        let summaries = out.merge_from(sources)?;
        let busy: i64 = out
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))
            .map_err(|e| out.err("folding the WAL into the file", e))?;
        drop(out);
        if busy != 0 || wal.exists() {
            return Err(cannot("its WAL could not be folded into it".into()));
        }
        Ok(summaries)
    })();
    let summaries = match built {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&wal);
            let _ = std::fs::remove_file(&shm);
            // `tmp` itself is removed when dropped.
            return Err(e);
        }
    };
    tmp.persist_noclobber(output).map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            cannot(
                "another process created it during the merge, which wrote nothing to it; \
                 merge again"
                    .into(),
            )
        } else {
            cannot(format!(
                "cannot move the merged store into place: {}",
                e.error
            ))
        }
    })?;
    Ok(summaries)
}

/// A store's failure during a merge said of the file the user named, not
/// as a `--db` (neither is one): an input by its path, a refusal (exit 2)
/// if its pages are damaged; the output (or the temporary file it is built
/// in) as `-o PATH`.
fn named(e: MergeError, inputs: &[&Path], output: &Path) -> MergeError {
    let MergeError::Store(e) = e else {
        return e;
    };
    let path = e.path().to_path_buf();
    if let Some(input) = inputs.iter().find(|i| **i == path) {
        if e.is_corrupt() {
            return MergeError::Refused {
                flag: "",
                path: input.to_path_buf(),
                why: corrupt(&e),
            };
        }
        let why = without_db(&e, &path);
        return MergeError::Failed {
            flag: "",
            path: input.to_path_buf(),
            why,
        };
    }
    let why = without_db(&e, &path);
    let shown = path.display().to_string();
    MergeError::Failed {
        flag: "-o ",
        path: output.to_path_buf(),
        // The temporary file's name means nothing to the user.
        why: why.replace(&shown, &output.display().to_string()),
    }
}

/// A store's message without the `--db PATH: ` it starts with.
fn without_db(e: &StoreError, path: &Path) -> String {
    let text = e.to_string();
    let prefix = format!("--db {}: ", path.display());
    text.strip_prefix(&prefix).unwrap_or(&text).to_string()
}

/// Why a damaged input cannot be merged, with SQLite's words.
fn corrupt(e: &StoreError) -> String {
    let reason = match e {
        StoreError::Sqlite { error, .. } => error.to_string(),
        other => other.to_string(),
    };
    format!(
        "its pages are damaged ({}); nothing was merged (restore it from a copy, or merge \
         the others)",
        reason.lines().next().unwrap_or_default()
    )
}

/// An input checked without writing anything: there, not the output, an
/// smtlab store (not an empty file), not newer than this smtlab, its pages
/// whole.
fn check_input(
    path: &Path,
    output: &Path,
    output_file: Option<(u64, u64)>,
) -> Result<(), MergeError> {
    let refuse = |why: &str| MergeError::Refused {
        flag: "",
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse("no such file"));
        }
        Err(e) => return Err(refuse(&format!("cannot read it: {e}"))),
    };
    if output_file == Some((meta.dev(), meta.ino())) {
        return Err(MergeError::IntoItself {
            input: path.to_path_buf(),
            output: output.to_path_buf(),
        });
    }
    let (store, version) = Store::open_unmigrated(path).map_err(|e| refused("", path, e))?;
    // An empty SQLite file (or a file of no bytes) would become a store if
    // opened as one: as an input it holds nothing, and was surely not meant.
    if version == 0 {
        return Err(refuse(&format!(
            "not an smtlab database ({})",
            crate::store::empty_detail(path)
        )));
    }
    // Every page read once (b-trees, free list; not index contents): a
    // store with damaged pages is refused before anything is written, not
    // half-way through the copy. It reads what the copy would read anyway.
    let checked: rusqlite::Result<Vec<String>> = store
        .conn
        .prepare("PRAGMA quick_check(3)")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
    match checked {
        Ok(found) if found == ["ok"] => Ok(()),
        Ok(found) => {
            // Its problems, without the `*** in database main ***` heading.
            let problems: Vec<&String> = found.iter().filter(|f| !f.starts_with("***")).collect();
            let more = match problems.len() {
                0 | 1 => String::new(),
                n => format!(", and {} more", n - 1),
            };
            Err(refuse(&format!(
                "its pages are damaged (SQLite's quick_check: {}{more}); nothing was merged \
                 (restore it from a copy, or merge the others)",
                problems.first().map_or("?", |p| p.as_str())
            )))
        }
        Err(e) => Err(refuse(&corrupt(&store.err("checking its pages", e)))),
    }
}

/// A store's refusal of `path` as a merge's: its reason without the
/// `--db PATH: ` it starts with (the file is not a `--db` here), after the
/// flag that named the file (`-o `, or none for an input).
fn refused(flag: &'static str, path: &Path, e: StoreError) -> MergeError {
    let why = match &e {
        StoreError::Missing { .. } => "no such file".to_string(),
        _ => {
            let text = e.to_string();
            let prefix = format!("--db {}: ", path.display());
            text.strip_prefix(&prefix).unwrap_or(&text).to_string()
        }
    };
    MergeError::Refused {
        flag,
        path: path.to_path_buf(),
        why,
    }
}

/// One input's runs to write, staged under its number `src`.
struct Plan {
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
struct Staging<'a> {
    out: &'a Store,
    /// The columns of each copied table, from the output's schema (an input
    /// has the same once migrated).
    columns: Vec<Vec<String>>,
}

impl<'a> Staging<'a> {
    fn create(out: &'a Store) -> Result<Staging<'a>, StoreError> {
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
    fn stage(&self, src: i64, input: &Store) -> Result<Plan, StoreError> {
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
    fn write(&self, plan: Plan) -> Result<MergeSummary, StoreError> {
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
fn check_tables(conn: &Connection) -> Result<(), TableCheckError> {
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
    use crate::schema::{APPLICATION_ID, MIGRATIONS};

    /// A store of schema version 3 (before uids) holding one run, written
    /// as that version wrote it.
    fn v3_store(path: &Path, started_at: f64) {
        let c = Connection::open(path).unwrap();
        for step in &MIGRATIONS[..3] {
            c.execute_batch(step).unwrap();
        }
        c.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        c.pragma_update(None, "user_version", 3).unwrap();
        c.execute(
            "INSERT INTO runs (started_at, status, command_line, smtlab_version, seed, \
             config_json, host_json) VALUES (?1, 'complete', '[\"smtlab\"]', '0.0.9', \
             '18446744073709551615', '{}', '{\"hostname\": \"old\"}')",
            [started_at],
        )
        .unwrap();
    }

    /// An older input is read from a copy brought up to date in memory, as
    /// every reader reads one, and merged without being changed; two copies
    /// of one old store name their runs alike, so the run is merged once.
    #[test]
    fn an_older_input_is_merged_unchanged_and_its_copies_agree() {
        let dir = tempfile::tempdir().unwrap();
        let (old, copy, out) = (
            dir.path().join("old.db"),
            dir.path().join("copy.db"),
            dir.path().join("out.db"),
        );
        v3_store(&old, 1.7e9 + 0.123_456_7);
        std::fs::copy(&old, &copy).unwrap();
        let bytes = std::fs::read(&old).unwrap();

        let s = Store::merge(&[&old], &out).unwrap();
        assert_eq!(
            (s[0].runs_added, s[0].hosts.clone()),
            (1, vec!["old".to_string()])
        );
        assert_eq!(
            std::fs::read(&old).unwrap(),
            bytes,
            "the input is as it was"
        );
        let version: i64 = Connection::open(&old)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, 3);
        let output = Store::open(&out).unwrap();
        let uid: String = output
            .conn
            .query_row("SELECT uid FROM runs WHERE id = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(uid, "pre4-1-1700000000123456-18446744073709551615");
        // The store_id of a store too old to have one is its copy's, made
        // for this merge.
        let origin = output.run_origin(1).unwrap().unwrap();
        assert_eq!((origin.store_id, origin.run_id), (s[0].store_id.clone(), 1));
        drop(output);

        let s = Store::merge(&[&copy, &old], &out).unwrap();
        assert_eq!((s[0].runs_added, s[0].runs_present), (0, 1));
        assert_eq!((s[1].runs_added, s[1].runs_present), (0, 1));
    }

    fn sqlite(path: &str, code: std::ffi::c_int, msg: &str) -> MergeError {
        MergeError::Store(StoreError::Sqlite {
            path: path.into(),
            context: "reading it for the merge".into(),
            error: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                Some(msg.into()),
            ),
        })
    }

    /// A failure while the stores are read or written names the file as
    /// the user gave it, never as a `--db`: damage of an input is its
    /// refusal (exit 2), anything else a failure; the temporary output is
    /// the output.
    #[test]
    fn a_failure_during_the_copy_names_the_file_the_user_gave() {
        let inputs = [Path::new("a.db"), Path::new("c.db")];
        let out = Path::new("out.db");
        let e = named(
            sqlite(
                "c.db",
                rusqlite::ffi::SQLITE_CORRUPT,
                "database disk image is malformed",
            ),
            &inputs,
            out,
        );
        assert!(e.is_refusal());
        let text = e.to_string();
        assert!(
            text.starts_with("c.db: its pages are damaged (database disk image is malformed)"),
            "{text}"
        );
        let e = named(
            sqlite("a.db", rusqlite::ffi::SQLITE_IOERR, "disk I/O error"),
            &inputs,
            out,
        );
        assert!(!e.is_refusal());
        assert_eq!(
            e.to_string(),
            "a.db: reading it for the merge: disk I/O error"
        );
        let e = named(
            sqlite(
                "dir/out.db.merging-x1",
                rusqlite::ffi::SQLITE_FULL,
                "database or disk is full",
            ),
            &inputs,
            out,
        );
        assert!(!e.is_refusal());
        assert_eq!(
            e.to_string(),
            "-o out.db: reading it for the merge: database or disk is full"
        );
    }

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
