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
    /// A read-only open that made the file's `-wal` and `-shm`: they are
    /// taken away once `conn` is closed (fields drop in order).
    _tidy: Option<WalTidy>,
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
        check_path(path)?;
        if !path.exists() {
            Store::create(path)?;
        }
        Store::connect(path, path, "cannot open")
    }

    /// A store on a new connection to `file`, named `path` in its errors
    /// (a temporary file is named after the store it becomes), its schema
    /// made or brought up to date; `context` says what failed when SQLite
    /// cannot open the file. What [`Store::open`] and [`Store::create`]
    /// both do.
    fn connect(file: &Path, path: &Path, context: &str) -> Result<Store, StoreError> {
        let conn = Connection::open(file).map_err(|error| StoreError::Sqlite {
            path: path.to_path_buf(),
            context: context.into(),
            error,
        })?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
            _tidy: None,
        };
        store.init()?;
        Ok(store)
    }

    /// A new store, made whole under a temporary name beside `path` and
    /// then linked to it: a reader never finds it half made (an empty
    /// SQLite file, the schema not yet written, which reading refuses as
    /// no store), so `smtlab runs` during a run's first moments sees no
    /// store or the whole of it. If another process made `path`
    /// meanwhile, that one is kept and this one dropped. A file of no bytes
    /// already there (`touch smtlab.db`) is made a store in place by
    /// [`Store::open`], as before.
    fn create(path: &Path) -> Result<(), StoreError> {
        use std::os::unix::fs::PermissionsExt;
        let io = |context: &str, error: std::io::Error| StoreError::Io {
            path: path.to_path_buf(),
            context: context.into(),
            error,
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}.new-"))
            // What SQLite gives a file it creates, before the umask.
            .permissions(std::fs::Permissions::from_mode(0o644))
            .tempfile_in(dir)
            .map_err(|e| io("cannot create it", e))?
            .into_temp_path();
        {
            // Named `path` in its errors: the temporary name means nothing.
            let store = Store::connect(&tmp, path, "cannot create it")?;
            // Its WAL's files are named after the temporary file: all of
            // it into the file, and (closing, the only connection) gone.
            store
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                .map_err(|e| store.err("creating it", e))?;
        }
        match tmp.persist_noclobber(path) {
            Ok(()) => Ok(()),
            // Made by another process meanwhile: theirs is the store.
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(io("cannot create it", e.error)),
        }
    }

    /// Open a database that must already exist (`smtlab run --resume`):
    /// a mistyped `--db` is an error, not a new empty file.
    pub fn open_existing(path: &Path) -> Result<Store, StoreError> {
        check_path(path)?;
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        Store::open(path)
    }

    /// Open an existing database only to read it (`runs`, `show`, `report`,
    /// `compare`, `merge`'s inputs): nothing is created or changed, the
    /// file nor its directory (see `Store::open_unmigrated`). A file of no
    /// bytes, or an empty SQLite database, is not a store: reading it must
    /// not turn it into one. A schema older than this smtlab's is read
    /// from a copy in memory brought up to date there (reading needs the new
    /// columns); the file keeps its version until a run writes into it.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let (store, version) = Store::open_unmigrated(path)?;
        if version == 0 {
            return Err(store.not_smtlab(empty_detail(path)));
        }
        if version < schema::latest_version() {
            return store.migrated_in_memory(version);
        }
        Ok(store)
    }

    /// This store's content copied into memory (SQLite's backup, which
    /// reads through the WAL) and migrated there from `version`.
    fn migrated_in_memory(self, version: i64) -> Result<Store, StoreError> {
        let known = schema::latest_version();
        let failed = |e: rusqlite::Error| StoreError::Migration {
            path: self.path.clone(),
            from: version,
            to: known,
            reason: short_reason(&e),
        };
        let mut copy = Connection::open_in_memory().map_err(failed)?;
        rusqlite::backup::Backup::new(&self.conn, &mut copy)
            .and_then(|b| b.run_to_completion(i32::MAX, Duration::from_millis(5), None))
            .map_err(failed)?;
        schema::migrate(&copy, known).map_err(failed)?;
        Ok(Store {
            conn: copy,
            path: self.path.clone(),
            _tidy: None,
        })
    }

    /// Open an existing database read-only and as it is: checked to be
    /// smtlab's (or an empty SQLite file: version 0) and not newer than
    /// this smtlab, but not migrated. Returns its schema version. Writes
    /// nothing, so `merge` can check every input before touching any.
    ///
    /// # Leaving the directory as it was
    ///
    /// A read-only connection to a WAL database needs the `-wal` and `-shm`
    /// files, and SQLite creates them if missing; only the last connection
    /// to close removes them, and a read-only one cannot (that takes a
    /// writer's exclusive lock), so `smtlab runs` used to leave both beside
    /// every store it read. Where neither existed (nobody had the file
    /// open), [`WalTidy`] removes them once this connection is closed, by
    /// SQLite's own rule (see there). Where they existed (a run writing
    /// now, or a crash's leftovers), they are left as found. `immutable=1`
    /// would make no files, but it reads without locks and ignores the
    /// WAL: a run starting meanwhile could checkpoint pages under the
    /// reader. It is used only where no `-shm` can be made (a read-only
    /// directory), where no writer can be either.
    pub(crate) fn open_unmigrated(path: &Path) -> Result<(Store, i64), StoreError> {
        check_path(path)?;
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        use rusqlite::OpenFlags;
        let tidy = WalTidy::before_open(path);
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let opened = Connection::open_with_flags(path, flags).and_then(|c| {
            // A WAL database read-only needs its -shm file; where it cannot
            // be made (a read-only directory), the first read fails.
            c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
                .map(|_| c)
        });
        let conn = match opened {
            Ok(c) => c,
            // Nobody can be writing a file in a directory no one may write:
            // read it as immutable (no locks, no -shm).
            Err(_) => {
                let uri = format!("file:{}?immutable=1", uri_path(path));
                Connection::open_with_flags(&uri, flags | OpenFlags::SQLITE_OPEN_URI).map_err(
                    |error| StoreError::Sqlite {
                        path: path.to_path_buf(),
                        context: "cannot open for reading".into(),
                        error,
                    },
                )?
            }
        };
        let store = Store {
            conn,
            path: path.to_path_buf(),
            _tidy: tidy,
        };
        store
            .conn
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| store.err("setting busy_timeout", e))?;
        let (_, version) = store.identity()?;
        if version > schema::latest_version() {
            return Err(store.too_new(version));
        }
        Ok((store, version))
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

        let (_, version) = self.identity()?;
        let known = schema::latest_version();
        if version > known {
            return Err(self.too_new(version));
        }

        // WAL persists in the file; setting it again is a no-op. Where WAL
        // is impossible (a filesystem without shared memory), the rollback
        // journal with synchronous=FULL keeps the same kill -9 promise.
        // Switching the journal mode needs the file to itself, and SQLite
        // answers "database is locked" at once rather than waiting when
        // another process is creating the same new file: retry.
        let mode: String = self
            .retry_busy(|| conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)))
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
            let found = self
                .retry_busy(|| schema::migrate(conn, known))
                .map_err(|e| StoreError::Migration {
                    path: self.path.clone(),
                    from: version,
                    to: known,
                    reason: short_reason(&e),
                })?;
            // Another, newer smtlab may have migrated it meanwhile.
            if found > known {
                return Err(self.too_new(found));
            }
        }
        Ok(())
    }
}

impl Store {
    /// The file's `application_id` and `user_version`, checked: an smtlab
    /// database, or an empty file that can become one. Read in one
    /// transaction, so a file another process is creating right now is seen
    /// before or after its creation, never half-way (its id without its
    /// version, or its tables without either).
    fn identity(&self) -> Result<(i32, i64), StoreError> {
        let conn = &self.conn;
        let read = || -> rusqlite::Result<(i32, i64, Vec<String>)> {
            let tx = rusqlite::Transaction::new_unchecked(
                conn,
                rusqlite::TransactionBehavior::Deferred,
            )?;
            let app = tx.pragma_query_value(None, "application_id", |r| r.get::<_, i32>(0))?;
            let version = tx.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?;
            let names = if version == 0 {
                let mut st = tx.prepare(
                    "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
                )?;
                let names = st
                    .query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<String>>>()?;
                names
            } else {
                Vec::new()
            };
            tx.commit()?;
            Ok((app, version, names))
        };
        // The first read of the header: where a file that is not SQLite
        // fails (SQLITE_NOTADB).
        let (app_id, version, names) = match self.retry_busy(read) {
            Ok(v) => v,
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
                return Err(self.not_smtlab(short_reason(&e)));
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
        // A fresh or empty file becomes an smtlab database; a SQLite file
        // holding something else is left alone.
        if !names.is_empty() {
            let mut shown = names.clone();
            shown.truncate(5);
            let more = names.len() - shown.len();
            return Err(self.not_smtlab(format!(
                "it holds other tables: {}{}",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )));
        }
        Ok((app_id, version))
    }

    /// Run `f` again while SQLite says the file is busy or locked, up to
    /// [`BUSY_TIMEOUT`]: for the steps where SQLite does not wait by itself
    /// (changing the journal mode, a lock upgrade that would deadlock).
    fn retry_busy<T>(&self, mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        let start = std::time::Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match f() {
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(
                            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                        )
                    ) && start.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }
}

/// Why a file whose schema version is 0 is not a store: it has no bytes,
/// or it is a SQLite database with nothing in it.
pub(crate) fn empty_detail(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) if m.len() == 0 => "it is empty: 0 bytes".into(),
        _ => "it is an empty SQLite database".into(),
    }
}

/// The `-wal` and `-shm` files a read-only connection made beside a WAL
/// database, removed once it is closed.
///
/// Only the last connection to close a WAL database checkpoints it and
/// deletes both files: it takes the database file's exclusive lock, which
/// it gets only if no other connection, in any process, has the file open.
/// A read-only connection cannot take that lock. So once the reader is
/// closed, a read-write connection opens the file, reads (which opens the
/// WAL) and closes: SQLite removes the files then if, and only if, nobody
/// else has the database open, under its own lock, so no other process can
/// be using files as they go. It writes nothing (`query_only`), and its
/// checkpoint copies nothing unless a writer came and went while the
/// reader was open (that writer's WAL is then folded in, as the writer
/// would have done had it closed last). Made only where neither file
/// existed before the reader opened: files found there belong to someone
/// else, or to a crash, and are left as they are.
#[derive(Debug)]
pub(crate) struct WalTidy {
    db: PathBuf,
}

impl WalTidy {
    /// Before a read-only open of `db`: a tidy-up if it has no `-wal` nor
    /// `-shm` yet.
    fn before_open(db: &Path) -> Option<WalTidy> {
        let (wal, shm) = wal_files(db);
        (!wal.exists() && !shm.exists()).then(|| WalTidy {
            db: db.to_path_buf(),
        })
    }
}

impl Drop for WalTidy {
    fn drop(&mut self) {
        let (wal, shm) = wal_files(&self.db);
        if !wal.exists() && !shm.exists() {
            return;
        }
        // Best effort: where it fails, the files stay, as they always did.
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if let Ok(c) = Connection::open_with_flags(&self.db, flags) {
            let _ = c.busy_timeout(Duration::from_millis(100));
            let _ = c.pragma_update(None, "query_only", true);
            let _ = c.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()));
        }
    }
}

/// A database's `-wal` and `-shm` files.
pub(crate) fn wal_files(db: &Path) -> (PathBuf, PathBuf) {
    let with = |suffix: &str| {
        let mut name = db.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    (with("-wal"), with("-shm"))
}

/// Refuse a `--db` that cannot be a database file before SQLite touches it
/// (SQLite would write `/dev/null-journal` beside a device, and treats
/// `x.db/` differently from `x.db`).
pub(crate) fn check_path(path: &Path) -> Result<(), StoreError> {
    let bad = |why: String| StoreError::BadPath {
        path: path.to_path_buf(),
        why,
    };
    let text = path.to_string_lossy();
    if text.is_empty() {
        return Err(bad("empty".into()));
    }
    if text.ends_with('/') {
        return Err(bad("it ends with `/`, so it names a directory".into()));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(bad("it is a directory".into())),
        Ok(m) if !m.is_file() => return Err(bad("it is not a regular file (a device?)".into())),
        Ok(_) => return Ok(()),
        Err(_) => {}
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(bad(format!("{} is not a directory", parent.display()))),
        Err(_) => Err(bad(format!(
            "directory {} does not exist",
            parent.display()
        ))),
    }
}

/// SQLite's reason without the statement it came from: a failed migration
/// step would otherwise print the schema's SQL.
fn short_reason(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqliteFailure(err, Some(msg)) => format!("{msg} ({:?})", err.code),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    };
    let first = text.lines().next().unwrap_or_default();
    first.chars().take(200).collect()
}

/// A path as a `file:` URI path: `%`, `?` and `#` escaped.
pub(crate) fn uri_path(path: &Path) -> String {
    let abs = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    abs.to_string_lossy()
        .replace('%', "%25")
        .replace('?', "%3f")
        .replace('#', "%23")
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
