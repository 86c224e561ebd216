//! What the store can fail with, each message naming the database file,
//! and the helpers that build those errors from SQLite's.

use std::path::PathBuf;

use serde::Serialize;

use crate::schema;
use crate::Store;

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
