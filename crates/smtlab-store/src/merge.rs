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
//! The copy is made in two steps (`merge_staging.rs`) so the output's
//! write lock is held only
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

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rusqlite::OptionalExtension;
use rusqlite::{Transaction, TransactionBehavior};
use serde::Serialize;

use crate::error::StoreError;
pub use crate::merge_staging::MergeSummary;
use crate::merge_staging::{Plan, Staging};
use crate::store::{check_path, Store};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{APPLICATION_ID, MIGRATIONS};
    use rusqlite::Connection;

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
}
