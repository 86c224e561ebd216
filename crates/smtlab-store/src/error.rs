//! What the store can fail with, each message naming the database file
//! (the store builds them: `store.rs`). Uses no other module of this crate.

use std::path::PathBuf;

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
    /// A run another process is measuring (`--resume` of a run in
    /// progress): its owner, and what to do.
    #[error("--db {}: run {run_id} is being measured by {owner}; {why}", path.display())]
    RunOwned {
        path: PathBuf,
        run_id: i64,
        owner: String,
        why: String,
    },
    /// A run resumed once it is complete.
    #[error("--db {}: run {run_id} is already complete", path.display())]
    RunComplete { path: PathBuf, run_id: i64 },
    /// A value the store cannot hold, or a request that does not fit the data.
    #[error("--db {}: {detail}", path.display())]
    Invalid { path: PathBuf, detail: String },
    /// A `--db` that cannot be a database file: a directory, a device, a
    /// name ending in `/`, a path under something that is not a directory.
    #[error("--db {}: {why}; give the path of a database file (e.g. smtlab.db)", path.display())]
    BadPath { path: PathBuf, why: String },
    /// A migration that failed: the versions, and SQLite's reason in short
    /// (never the schema's SQL).
    #[error("--db {}: cannot bring the schema from version {from} to {to}: {reason}", path.display())]
    Migration {
        path: PathBuf,
        from: i64,
        to: i64,
        reason: String,
    },
    /// A failure of the file system around the database (creating it).
    #[error("--db {}: {context}: {error}", path.display())]
    Io {
        path: PathBuf,
        context: String,
        error: std::io::Error,
    },
    /// Any other SQLite failure, with what the store was doing.
    #[error("--db {}: {context}: {error}", path.display())]
    Sqlite {
        path: PathBuf,
        context: String,
        error: rusqlite::Error,
    },
}

impl StoreError {
    /// The database file the error is about.
    pub fn path(&self) -> &std::path::Path {
        match self {
            StoreError::NotSmtlab { path, .. }
            | StoreError::Missing { path }
            | StoreError::TooNew { path, .. }
            | StoreError::NoRun { path, .. }
            | StoreError::NoPoint { path, .. }
            | StoreError::PointMismatch { path, .. }
            | StoreError::DuplicateSample { path, .. }
            | StoreError::RunOwned { path, .. }
            | StoreError::RunComplete { path, .. }
            | StoreError::Invalid { path, .. }
            | StoreError::BadPath { path, .. }
            | StoreError::Migration { path, .. }
            | StoreError::Io { path, .. }
            | StoreError::Sqlite { path, .. } => path,
        }
    }

    /// SQLite found the file damaged (corrupt pages, or not a database
    /// where it expected one).
    pub fn is_corrupt(&self) -> bool {
        matches!(
            self,
            StoreError::Sqlite { error, .. } if matches!(
                error.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            )
        )
    }
}

/// Why a store's tables cannot be merged: the merge copies or keeps every
/// table it knows, so one it does not know would lose its rows. The merge
/// turns it into [`StoreError::Invalid`] on the output.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TableCheckError {
    /// SQLite could not list the tables.
    #[error("cannot list its tables: {0}")]
    List(rusqlite::Error),
    /// Tables a later migration added that the merge has not been told of.
    #[error("merge does not know table(s) {0:?} of this schema; nothing was merged")]
    Unknown(Vec<String>),
}
