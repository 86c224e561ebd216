//! The pin library on disk: [`PRELOAD_SO`] written once into a directory
//! private to this user, named by a hash of its bytes, and the `LD_PRELOAD`
//! value that puts it first. Uses only the constants of `pin`.

use std::ffi::{OsStr, OsString};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use smtlab_sys as sys;

use super::interface::PRELOAD_SO;

/// Why a directory cannot hold the library. The I/O error is part of the
/// message rather than a `source`: the reasons of every candidate directory
/// are joined into one [`LibraryError`] line, and a source would be printed
/// twice by `{:#}`.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    #[error("{}: {io}", dir.display())]
    Unreadable { dir: PathBuf, io: io::Error },
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("{} is not a private directory (owner {uid}, mode {mode:o})", dir.display())]
    NotPrivate { dir: PathBuf, uid: u32, mode: u32 },
    #[error("{} is on a noexec filesystem", .0.display())]
    NoExec(PathBuf),
    #[error("{} cannot be used in LD_PRELOAD", .0.display())]
    NotPreloadable(PathBuf),
    #[error("creating {}: {io}", dir.display())]
    Create { dir: PathBuf, io: io::Error },
    #[error("writing {}: {io}", path.display())]
    Write { path: PathBuf, io: io::Error },
}

/// No candidate directory could hold the library; why not, for each.
#[derive(Debug, thiserror::Error)]
#[error("no directory to write the pin library to: {}", reasons(.0))]
pub struct LibraryError(pub Vec<DirError>);

fn reasons(errors: &[DirError]) -> String {
    let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
    list.join("; ")
}

/// FNV-1a: a stable name for the library's bytes. Hand-written (eight
/// lines) because the name only has to change when the bytes do; it is not
/// a security boundary (the directory is private and the bytes are
/// compared before reuse).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A name no other file of this process (or another one) is using now.
pub(super) fn unique_suffix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A directory only we can write to, on a filesystem that allows executable
/// mappings, whose path can go in LD_PRELOAD (no `:` or space).
fn check_private_dir(dir: &Path) -> Result<(), DirError> {
    let meta = fs::symlink_metadata(dir).map_err(|io| DirError::Unreadable {
        dir: dir.to_path_buf(),
        io,
    })?;
    if !meta.is_dir() {
        return Err(DirError::NotADirectory(dir.to_path_buf()));
    }
    if meta.uid() != sys::euid() || meta.mode() & 0o022 != 0 {
        return Err(DirError::NotPrivate {
            dir: dir.to_path_buf(),
            uid: meta.uid(),
            mode: meta.mode() & 0o7777,
        });
    }
    if sys::is_noexec(dir).unwrap_or(false) {
        return Err(DirError::NoExec(dir.to_path_buf()));
    }
    let s = dir.to_string_lossy();
    if !dir.is_absolute() || s.contains(':') || s.contains(' ') {
        return Err(DirError::NotPreloadable(dir.to_path_buf()));
    }
    Ok(())
}

fn make_private_dir(dir: &Path) -> Result<PathBuf, DirError> {
    match fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(io) => {
            return Err(DirError::Create {
                dir: dir.to_path_buf(),
                io,
            })
        }
    }
    check_private_dir(dir)?;
    Ok(dir.to_path_buf())
}

/// Candidate directories, best first: `$XDG_RUNTIME_DIR`, a per-user
/// directory in the temp dir, the user's cache directory.
fn candidate_dirs() -> Vec<Result<PathBuf, DirError>> {
    let mut out = Vec::new();
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
        let x = PathBuf::from(x);
        out.push(check_private_dir(&x).map(|_| x));
    }
    out.push(make_private_dir(
        &std::env::temp_dir().join(format!("smtlab-{}", sys::euid())),
    ));
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(c) = cache {
        out.push(make_private_dir(&c.join("smtlab")));
    }
    out
}

/// Write [`PRELOAD_SO`] into `dir` as `name` (temp file + rename), or reuse
/// an identical copy already there.
fn install_library(dir: &Path, name: &str) -> Result<PathBuf, DirError> {
    let path = dir.join(name);
    if let (Ok(meta), Ok(bytes)) = (fs::symlink_metadata(&path), fs::read(&path)) {
        if meta.is_file() && meta.uid() == sys::euid() && bytes == PRELOAD_SO {
            return Ok(path);
        }
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", unique_suffix()));
    let written = (|| -> io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(PRELOAD_SO)?;
        fs::rename(&tmp, &path)
    })();
    if let Err(io) = written {
        let _ = fs::remove_file(&tmp);
        return Err(DirError::Write { path, io });
    }
    Ok(path)
}

/// Write the embedded library to disk (so it is found however smtlab was
/// installed) and return its absolute path: `smtlab-pin-<hash>.so` in
/// `$XDG_RUNTIME_DIR`, else `<tmp>/smtlab-<uid>/`, else `~/.cache/smtlab/`
/// (the first that is private to this user and not mounted noexec). The name
/// carries a hash of the bytes; an identical file already there is reused.
pub fn preload_library() -> Result<PathBuf, LibraryError> {
    let name = format!("smtlab-pin-{:016x}.so", fnv1a64(PRELOAD_SO));
    let mut why = Vec::new();
    for dir in candidate_dirs() {
        match dir.and_then(|d| install_library(&d, &name)) {
            Ok(p) => return Ok(p),
            Err(e) => why.push(e),
        }
    }
    Err(LibraryError(why))
}

/// `LD_PRELOAD` with `lib` first (so its `pthread_create` wins), keeping
/// whatever the user already preloads.
pub fn preload_value(lib: &Path, existing: Option<&OsStr>) -> OsString {
    let mut v = OsString::from(lib);
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        v.push(":");
        v.push(e);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_is_embedded_elf() {
        assert!(PRELOAD_SO.len() > 1000);
        assert_eq!(&PRELOAD_SO[..4], b"\x7fELF");
    }

    #[test]
    fn installs_once_and_reuses_identical_copy() {
        let d = tempfile::tempdir().unwrap();
        let a = install_library(d.path(), "x.so").unwrap();
        assert_eq!(fs::read(&a).unwrap(), PRELOAD_SO);
        let mtime = fs::metadata(&a).unwrap().modified().unwrap();
        let b = install_library(d.path(), "x.so").unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::metadata(&b).unwrap().modified().unwrap(), mtime);
        // A corrupted copy is replaced.
        fs::write(&a, b"junk").unwrap();
        install_library(d.path(), "x.so").unwrap();
        assert_eq!(fs::read(&a).unwrap(), PRELOAD_SO);
        // No temp files left behind.
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn preload_library_path_is_absolute_and_named_by_hash() {
        let p = preload_library().unwrap();
        assert!(p.is_absolute());
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("smtlab-pin-") && name.ends_with(".so"));
        assert_eq!(fs::read(&p).unwrap(), PRELOAD_SO);
    }

    #[test]
    fn unusable_directories_say_why_in_one_line() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("f");
        fs::write(&file, b"").unwrap();
        let e = check_private_dir(&file).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} is not a directory", file.display())
        );
        let open = d.path().join("open");
        fs::DirBuilder::new().mode(0o777).create(&open).unwrap();
        fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        let e = check_private_dir(&open).unwrap_err();
        assert!(matches!(e, DirError::NotPrivate { mode: 0o777, .. }), "{e}");
        let all = LibraryError(vec![e, DirError::NoExec(PathBuf::from("/x"))]);
        let text = all.to_string();
        assert!(text.starts_with("no directory to write the pin library to: "));
        assert!(text.ends_with("; /x is on a noexec filesystem"), "{text}");
        assert!(!text.contains('\n'));
    }

    #[test]
    fn preload_goes_first() {
        let v = preload_value(Path::new("/a/lib.so"), Some(OsStr::new("/b/x.so")));
        assert_eq!(v, "/a/lib.so:/b/x.so");
        assert_eq!(preload_value(Path::new("/a/lib.so"), None), "/a/lib.so");
    }
}
