//! The document root: finding the regular file a path names without ever
//! leaving the root ([`Site::open`]), and its media type from its
//! extension ([`content_type`]).

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use super::status::Status;

/// Called on the thread that is about to open a request's file, with the
/// decoded path, before it opens it: a test's stand-in for a disk that is
/// slow on one file (a hook that blocks holds the thread that opens, as a
/// cold disk would: an `event` helper, a `staged` file thread). Servers
/// that serve leave it unset.
#[derive(Clone)]
pub struct BeforeOpen(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for BeforeOpen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeOpen(..)")
    }
}

/// The document root and how to find files in it.
#[derive(Debug, Clone)]
pub struct Site {
    /// Canonical (symlinks resolved), so a path under it can be checked.
    root: PathBuf,
    /// The root open, for `openat2(RESOLVE_BENEATH)`: one call per file
    /// and the kernel's guarantee that nothing outside is opened.
    dir: std::sync::Arc<File>,
    before_open: Option<BeforeOpen>,
}

/// A file to send: open, with its length and modification time.
#[derive(Debug)]
pub struct Found {
    pub file: File,
    pub len: u64,
    pub modified: Option<SystemTime>,
}

impl Site {
    pub fn new(root: &Path) -> io::Result<Site> {
        let root = root.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        let dir = std::sync::Arc::new(File::open(&root)?);
        Ok(Site {
            root,
            dir,
            before_open: None,
        })
    }

    /// This site, calling `hook` before every open (see [`BeforeOpen`]).
    pub fn with_before_open(mut self, hook: Option<BeforeOpen>) -> Site {
        self.before_open = hook;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The regular file at a decoded request path, never outside the root:
    /// `..` segments are refused, and a symlink leading out is not served.
    ///
    /// Only regular files are served. Anything else — a directory, a FIFO,
    /// a socket, a device — is 404, as nginx answers "is not a regular
    /// file" (a 403 would tell a client that something is there). The file
    /// is opened `O_NONBLOCK` and its type read with `fstat` on the open
    /// descriptor: no request can hold a worker in `open` (a FIFO's open
    /// otherwise waits for a writer, for ever, and a stop with it), and
    /// no rename between a check and the open can slip another kind in.
    pub fn open(&self, path: &str) -> Result<Found, Status> {
        let rel = Path::new(path.trim_start_matches('/'));
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(Status::NotFound);
        }
        if let Some(hook) = &self.before_open {
            (hook.0)(path);
        }
        let file = match smtlab_sys::open_beneath(self.dir.as_fd(), rel) {
            Ok(f) => f,
            // A kernel without openat2 (before 5.6): resolve, then check.
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                let real = self
                    .root
                    .join(rel)
                    .canonicalize()
                    .map_err(|_| Status::NotFound)?;
                if !real.starts_with(&self.root) {
                    return Err(Status::NotFound);
                }
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(&real)
                    .map_err(|_| Status::NotFound)?
            }
            Err(_) => return Err(Status::NotFound),
        };
        let meta = file.metadata().map_err(|_| Status::NotFound)?;
        if !meta.is_file() {
            return Err(Status::NotFound);
        }
        Ok(Found {
            file,
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// The media type of a file, from its extension (case-insensitive), as
/// nginx's default `mime.types` names them, so a browser shows a page
/// rather than downloading it. One difference: JavaScript is
/// `text/javascript` (RFC 9239 made every other name obsolete; nginx's
/// frozen list still says `application/javascript`). No charset is added,
/// as nginx adds none by default. Anything else, and a file without an
/// extension (the whole benchmark file set), is `application/octet-stream`.
pub fn content_type(path: &str) -> &'static str {
    const TYPES: &[(&str, &str)] = &[
        ("html", "text/html"),
        ("htm", "text/html"),
        ("css", "text/css"),
        ("js", "text/javascript"),
        ("mjs", "text/javascript"),
        ("json", "application/json"),
        ("txt", "text/plain"),
        ("xml", "text/xml"),
        ("svg", "image/svg+xml"),
        ("png", "image/png"),
        ("jpg", "image/jpeg"),
        ("jpeg", "image/jpeg"),
        ("gif", "image/gif"),
        ("webp", "image/webp"),
        ("avif", "image/avif"),
        ("ico", "image/x-icon"),
        ("pdf", "application/pdf"),
        ("wasm", "application/wasm"),
        ("woff", "font/woff"),
        ("woff2", "font/woff2"),
        ("mp4", "video/mp4"),
    ];
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, ext)) = name.rsplit_once('.') else {
        return "application/octet-stream";
    };
    TYPES
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map_or("application/octet-stream", |(_, t)| t)
}
