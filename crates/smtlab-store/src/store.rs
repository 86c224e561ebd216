//! An open database ([`Store`]): opening it (checking the file is ours and
//! not from the future, WAL, migrations) and building its errors. Its
//! operations are in one file per kind of record. Uses `error` and
//! `schema`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use serde::Serialize;

use crate::error::StoreError;
use crate::schema::{self, APPLICATION_ID};

/// How long a statement waits for another connection's lock before failing
/// with "database is locked". Writers hold the lock for one sample (well
/// under a millisecond) and checkpoints for a few milliseconds, so this is
/// only reached when something is wrong.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// An open smtlab database. Its operations are in one file per kind of
/// record: `runs.rs`, `points.rs`, `samples.rs`.
pub struct Store {
    // Crate-visible: the files of each kind of record query it directly.
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
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

/// The errors a store builds, naming its file.
impl Store {
    pub(crate) fn err(&self, context: impl Into<String>, error: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            context: context.into(),
            error,
        }
    }

    pub(crate) fn invalid(&self, detail: String) -> StoreError {
        StoreError::Invalid {
            path: self.path.clone(),
            detail,
        }
    }

    pub(crate) fn not_smtlab(&self, detail: String) -> StoreError {
        StoreError::NotSmtlab {
            path: self.path.clone(),
            detail,
        }
    }

    pub(crate) fn too_new(&self, found: i64) -> StoreError {
        StoreError::TooNew {
            path: self.path.clone(),
            found,
            known: schema::latest_version(),
        }
    }

    pub(crate) fn no_run(&self, run_id: i64) -> StoreError {
        StoreError::NoRun {
            path: self.path.clone(),
            run_id,
        }
    }

    pub(crate) fn to_json<T: Serialize + ?Sized>(
        &self,
        v: &T,
        what: &str,
    ) -> Result<String, StoreError> {
        serde_json::to_string(v).map_err(|e| self.invalid(format!("cannot encode the {what}: {e}")))
    }

    /// SQLite's INTEGER is signed: a u64 above `i64::MAX` is refused, not
    /// wrapped into a negative number.
    pub(crate) fn int(&self, v: u64, what: &str) -> Result<i64, StoreError> {
        i64::try_from(v)
            .map_err(|_| self.invalid(format!("{what} = {v} exceeds SQLite's INTEGER range")))
    }

    pub(crate) fn opt_int(&self, v: Option<u64>, what: &str) -> Result<Option<i64>, StoreError> {
        v.map(|v| self.int(v, what)).transpose()
    }
}
