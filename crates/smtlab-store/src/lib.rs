//! The store: every run, its host facts, its points and every sample, in one
//! SQLite file (`./smtlab.db` unless `--db PATH`).
//!
//! Owns the file format (`schema.rs`: versioned migrations) and the mapping
//! between the record types of `smtlab-types` (runs, points, samples) and
//! rows, one file per kind of record (`runs.rs`, `points.rs`,
//! `samples.rs`). Written by the CLI (a run's record and its points) and
//! by the measurement loop, through the [`SampleLog`](smtlab_measure::SampleLog)
//! it implements (`sample_log.rs`: a sample as soon as it is measured);
//! read by the analysis, the studies' reports and the CLI's `runs` and
//! `show`. It knows nothing of how samples are measured.
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
//! [`Store::samples`] returns exactly the [`Sample`](smtlab_types::Sample)s that were added: REAL
//! columns hold IEEE doubles bit for bit, and vectors come back in insertion
//! order. Two limits of SQLite itself: a NaN is stored as NULL (it reads back
//! as `None`, or NaN where the field is not optional), and an integer above
//! `i64::MAX` is refused rather than rounded.

mod columns;
mod error;
mod host;
mod points;
mod runs;
mod sample_log;
mod samples;
mod schema;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

pub use error::StoreError;
pub use host::{collect_host_facts, collect_host_facts_from};
pub use runs::NewRun;
pub use schema::{latest_version as schema_version, APPLICATION_ID};
pub use smtlab_types::{HostFacts, RunRecord, RunStatus, RunSummary};

/// How long a statement waits for another connection's lock before failing
/// with "database is locked". Writers hold the lock for one sample (well
/// under a millisecond) and checkpoints for a few milliseconds, so this is
/// only reached when something is wrong.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// An open smtlab database. Its operations are in one file per kind of
/// record: `runs.rs`, `points.rs`, `samples.rs`.
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
}
