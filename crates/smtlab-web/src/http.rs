//! HTTP/1.x for the static server, shared by its four architectures:
//! parsing a request from bytes received so far ([`parse_request`], with
//! `httparse`, framing as strictly as RFC 9112 asks), finding the regular
//! file under the document root without ever leaving it ([`Site::open`]),
//! and the response head ([`Response`], its type from the file's
//! extension: [`content_type`]).
//!
//! Nothing here does I/O on sockets: each architecture reads and writes in
//! its own way (blocking, epoll, stages) and calls these pure steps, so all
//! four answer every request the same way.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// A request head larger than this is refused with 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// More header lines than this: 431.
pub const MAX_HEADERS: usize = 64;
/// A request target longer than this: 414.
pub const MAX_URI_BYTES: usize = 4096;
/// A request body (allowed, read and dropped) larger than this: 413.
pub const MAX_BODY_BYTES: u64 = 1 << 20;

/// The statuses the server sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    NotModified,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    PayloadTooLarge,
    UriTooLong,
    HeaderFieldsTooLarge,
    InternalError,
    Unavailable,
    VersionNotSupported,
}

impl Status {
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::NotModified => 304,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::RequestTimeout => 408,
            Status::PayloadTooLarge => 413,
            Status::UriTooLong => 414,
            Status::HeaderFieldsTooLarge => 431,
            Status::InternalError => 500,
            Status::Unavailable => 503,
            Status::VersionNotSupported => 505,
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::NotModified => "Not Modified",
            Status::BadRequest => "Bad Request",
            Status::NotFound => "Not Found",
            Status::MethodNotAllowed => "Method Not Allowed",
            Status::RequestTimeout => "Request Timeout",
            Status::PayloadTooLarge => "Payload Too Large",
            Status::UriTooLong => "URI Too Long",
            Status::HeaderFieldsTooLarge => "Request Header Fields Too Large",
            Status::InternalError => "Internal Server Error",
            Status::Unavailable => "Service Unavailable",
            Status::VersionNotSupported => "HTTP Version Not Supported",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
}

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The decoded path, without query or fragment (`/dir00000/class0_0`).
    pub path: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    /// Whether the connection stays open after the response.
    pub keep_alive: bool,
    pub if_modified_since: Option<SystemTime>,
}

/// What the bytes received so far hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request; it and its body (if any, dropped) took `used` bytes
    /// of the buffer; the rest is the next (pipelined) request.
    Request { request: Request, used: usize },
    /// Not a whole request yet: read more (the buffer is under the limits).
    Partial,
    /// Not a request the server serves: answer with this status and close
    /// the connection (`minor` is the version to answer in).
    Error { status: Status, minor: u8 },
}

/// A chunked body whose bytes on the wire (sizes, extensions, data,
/// trailers) pass this is refused with 413 before it is whole: the data
/// alone may be [`MAX_BODY_BYTES`], and the framing of a body of tiny
/// chunks would otherwise let a client fill the buffer without end.
pub const MAX_CHUNKED_WIRE_BYTES: u64 = 2 * MAX_BODY_BYTES;

/// Parse the request at the start of `buf`.
///
/// Framing follows RFC 9112 strictly, because a server that reads a body's
/// length differently from a proxy in front of it answers requests the
/// proxy never saw (request smuggling): a body is `Content-Length` bytes or
/// a chunked body, and anything ambiguous is a 400 and the close.
pub fn parse_request(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            return partial_or_too_large(buf, req.path);
        }
        Err(httparse::Error::TooManyHeaders) => {
            return error(Status::HeaderFieldsTooLarge, 1);
        }
        Err(httparse::Error::Version) => return not_1_0_or_1_1(buf),
        Err(_) => return error(Status::BadRequest, 1),
    };
    let minor = req.version.unwrap_or(1).min(1);
    if head_len > MAX_HEAD_BYTES {
        return error(Status::HeaderFieldsTooLarge, minor);
    }
    let target = req.path.unwrap_or("");
    if target.len() > MAX_URI_BYTES {
        return error(Status::UriTooLong, minor);
    }
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => return error(Status::MethodNotAllowed, minor),
    };
    let mut keep_alive = minor == 1;
    let mut content_length = ContentLength::Absent;
    let mut coding = Coding::None;
    let mut if_modified_since = None;
    let mut hosts = 0;
    for h in req.headers.iter() {
        let value = trim_ows(h.value);
        if h.name.eq_ignore_ascii_case("connection") {
            let value = std::str::from_utf8(value).unwrap_or("");
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            content_length = content_length.and(value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            coding = coding.and(value);
        } else if h.name.eq_ignore_ascii_case("if-modified-since") {
            let value = std::str::from_utf8(value).unwrap_or("");
            if_modified_since = httpdate::parse_http_date(value).ok();
        } else if h.name.eq_ignore_ascii_case("host") {
            hosts += 1;
            if !valid_authority(value) {
                return error(Status::BadRequest, minor);
            }
        }
    }
    // RFC 9112 §3.2: an HTTP/1.1 request without Host, and any request
    // with more than one Host line, is a 400 (two hosts: which site?).
    if (minor == 1 && hosts == 0) || hosts > 1 {
        return error(Status::BadRequest, minor);
    }
    let body = match (content_length, coding) {
        (ContentLength::Invalid, _) | (_, Coding::Invalid | Coding::Other) => {
            return error(Status::BadRequest, minor)
        }
        // RFC 9112 §6.1: Transfer-Encoding with Content-Length is how a
        // request is smuggled past a proxy that reads the other one; and
        // an HTTP/1.0 message with Transfer-Encoding has faulty framing.
        (ContentLength::Is(_), Coding::Chunked) => return error(Status::BadRequest, minor),
        (_, Coding::Chunked) if minor == 0 => return error(Status::BadRequest, minor),
        (ContentLength::Is(n), Coding::None) if n > MAX_BODY_BYTES => {
            return error(Status::PayloadTooLarge, minor)
        }
        (ContentLength::Is(n), Coding::None) => n as usize,
        (ContentLength::Absent, Coding::None) => 0,
        (ContentLength::Absent, Coding::Chunked) => match chunked_len(&buf[head_len..]) {
            Ok(Some(n)) => n,
            Ok(None) if (buf.len() - head_len) as u64 > MAX_CHUNKED_WIRE_BYTES => {
                return error(Status::PayloadTooLarge, minor)
            }
            Ok(None) => return Parsed::Partial,
            Err(status) => return error(status, minor),
        },
    };
    let Some(path) = decode_path(target) else {
        return error(Status::BadRequest, minor);
    };
    let used = head_len + body;
    if buf.len() < used {
        return Parsed::Partial;
    }
    Parsed::Request {
        request: Request {
            method,
            path,
            minor,
            keep_alive,
            if_modified_since,
        },
        used,
    }
}

fn error(status: Status, minor: u8) -> Parsed {
    Parsed::Error { status, minor }
}

/// A field value without the optional whitespace around it (httparse
/// leaves trailing whitespace in).
fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = v.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(s), Some(e)) => &v[s..=e],
        _ => &[],
    }
}

/// The `Content-Length` lines of a request, so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContentLength {
    Absent,
    Is(u64),
    /// Not `1*DIGIT`, or two different values.
    Invalid,
}

impl ContentLength {
    /// With one more `Content-Length` line. RFC 9110 §8.6 lets a recipient
    /// either refuse a repeated length or take it as one value when every
    /// copy is the same (a proxy that duplicated or joined the line, as in
    /// `42, 42`): the same value is taken, since no two readers can frame
    /// the body differently then; two different values are a 400 (RFC 9112
    /// §6.3: which one a proxy used is unknowable). Digits only: `+5`,
    /// `0x10` or `5 5` would each be read as a number by some parser.
    fn and(self, value: &[u8]) -> ContentLength {
        let mut this = self;
        for part in value.split(|&b| b == b',') {
            let part = trim_ows(part);
            if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
                return ContentLength::Invalid;
            }
            // Saturating: any length past u64 is past the limit anyway.
            let n = part.iter().fold(0u64, |n, &d| {
                n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
            });
            this = match this {
                ContentLength::Absent => ContentLength::Is(n),
                ContentLength::Is(m) if m == n => this,
                _ => return ContentLength::Invalid,
            };
        }
        this
    }
}

/// The `Transfer-Encoding` lines of a request, so far (all its lines make
/// one list, RFC 9110 §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    None,
    /// The list ends with `chunked`, once: the body is chunked (any coding
    /// under it, `gzip` say, need not be understood to drop the body).
    Chunked,
    /// Anything else: RFC 9112 §6.3 makes a request whose final coding is
    /// not `chunked` a 400 (its length cannot be known), and `chunked`
    /// twice is forbidden (§6.1).
    Invalid,
    /// Codings other than `chunked` so far: another line may still end
    /// the list with `chunked`; if none does, a 400 as `Invalid`.
    Other,
}

impl Coding {
    fn and(self, value: &[u8]) -> Coding {
        let Ok(value) = std::str::from_utf8(value) else {
            return Coding::Invalid;
        };
        let mut this = self;
        let mut codings = 0;
        for element in value.split(',').map(str::trim) {
            // Empty list elements are allowed and mean nothing (§5.6.1).
            if element.is_empty() {
                continue;
            }
            codings += 1;
            let name = element.split(';').next().unwrap_or("").trim();
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Coding::Invalid;
            }
            this = match this {
                Coding::Invalid | Coding::Chunked => Coding::Invalid,
                Coding::None | Coding::Other if name.eq_ignore_ascii_case("chunked") => {
                    Coding::Chunked
                }
                Coding::None | Coding::Other => Coding::Other,
            };
        }
        // A line naming no coding says nothing a proxy would agree on.
        if codings == 0 {
            return Coding::Invalid;
        }
        this
    }
}

/// A `tchar` of RFC 9110 §5.6.2 (the characters of a token).
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Whether `v` is an `authority` without userinfo: `host [ ":" port ]`,
/// the value of Host (RFC 9112 §3.2; empty is allowed) and of an
/// absolute-form target's authority. Only the characters are checked (a
/// reg-name, an IP literal in brackets, a port): spaces, `@`, `/` and the
/// like make a 400.
fn valid_authority(v: &[u8]) -> bool {
    v.iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:[]".contains(&b))
}

/// The length on the wire of the chunked body at the start of `buf` (RFC
/// 9112 §7.1: chunks, the last chunk, the trailer section and its blank
/// line), to drop it; `Ok(None)` while it is not all there.
fn chunked_len(buf: &[u8]) -> Result<Option<usize>, Status> {
    let mut at = 0;
    let mut data: u64 = 0;
    loop {
        let (line, size) = match httparse::parse_chunk_size(&buf[at..]) {
            Ok(httparse::Status::Complete(c)) => c,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(_) => return Err(Status::BadRequest),
        };
        at += line;
        if size == 0 {
            break;
        }
        data = data.saturating_add(size);
        if data > MAX_BODY_BYTES {
            return Err(Status::PayloadTooLarge);
        }
        // Within the limit, so it fits a usize.
        let end = at + size as usize;
        let Some(crlf) = buf.get(end..end + 2) else {
            return Ok(None);
        };
        // The data ends with CRLF exactly: a reader that would take a bare
        // LF frames the body differently from one that would not.
        if crlf != b"\r\n" {
            return Err(Status::BadRequest);
        }
        at = end + 2;
    }
    let mut trailers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    match httparse::parse_headers(&buf[at..], &mut trailers) {
        Ok(httparse::Status::Complete((n, _))) => Ok(Some(at + n)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err(Status::HeaderFieldsTooLarge),
        Err(_) => Err(Status::BadRequest),
    }
}

/// httparse takes only `HTTP/1.0` and `HTTP/1.1`. RFC 9112 §2.3: a version
/// is `HTTP/` DIGIT `.` DIGIT, case-sensitive. A later minor version of 1
/// (`HTTP/1.2`) is served as 1.1 (§2.3: a recipient processes it as the
/// highest minor version it implements); another major version is 505;
/// anything else (`http/1.1`, `HTTP/1`, `HTTP/1.1x`) is no version at all,
/// a malformed request line: 400.
fn not_1_0_or_1_1(buf: &[u8]) -> Parsed {
    let line_end = buf.iter().position(|&b| b == b'\n');
    let line = &buf[..line_end.unwrap_or(buf.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // httparse took the method and the target, each ended by one space.
    let Some(at) = line
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b' ')
        .nth(1)
        .map(|(i, _)| i + 1)
    else {
        return error(Status::BadRequest, 1);
    };
    let version = &line[at..];
    const SHAPE: &[u8] = b"HTTP/d.d";
    let shaped = version.len() <= SHAPE.len()
        && version.iter().zip(SHAPE).all(|(&b, &s)| match s {
            b'd' => b.is_ascii_digit(),
            _ => b == s,
        });
    match (shaped, version.len() == SHAPE.len(), line_end) {
        (true, true, Some(_)) if version[5] == b'1' => {
            let mut patched = buf.to_vec();
            patched[at + 7] = b'1';
            parse_request(&patched)
        }
        (true, true, Some(_)) => error(Status::VersionNotSupported, 1),
        // `HTTP/2` with the rest still to come.
        (true, _, None) => partial_or_too_large(buf, None),
        _ => error(Status::BadRequest, 1),
    }
}

/// An incomplete head: wait for more, unless it is already past a limit.
fn partial_or_too_large(buf: &[u8], target: Option<&str>) -> Parsed {
    if target.is_some_and(|t| t.len() > MAX_URI_BYTES) {
        return error(Status::UriTooLong, 1);
    }
    if buf.len() > MAX_HEAD_BYTES {
        // A request line that never ends is a long URI; else long headers.
        let line_done = buf.windows(2).any(|w| w == b"\r\n") || buf.contains(&b'\n');
        let status = if line_done {
            Status::HeaderFieldsTooLarge
        } else {
            Status::UriTooLong
        };
        return error(status, 1);
    }
    Parsed::Partial
}

/// The path of a request target, percent-decoded, without its query:
/// origin-form (`/a.txt`), or absolute-form (`http://host:port/a.txt`,
/// which RFC 9112 §3.2.2 requires a server to accept; its authority names
/// this server, whichever way a client spells it, as Host does). `None`
/// when it is neither (`*`, another scheme, userinfo in the authority) or
/// does not decode to UTF-8 without NUL.
fn decode_path(target: &str) -> Option<String> {
    let target = if target.starts_with('/') {
        target
    } else {
        let (scheme, rest) = target.split_once("://")?;
        if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
            return None;
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        // RFC 9110 §4.2.4: userinfo (`user@host`) in an http URI is an error.
        if authority.is_empty() || !valid_authority(authority.as_bytes()) {
            return None;
        }
        match &rest[end..] {
            // `http://host` and `http://host?q` ask for the root.
            p if !p.starts_with('/') => "/",
            p => p,
        }
    };
    let raw = target.split(['?', '#']).next().unwrap_or("");
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // Two hex digits (from_str_radix alone would take `%+f`).
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let s = String::from_utf8(out).ok()?;
    (!s.contains('\0')).then_some(s)
}

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

/// A response: its head, and the body to send after it.
#[derive(Debug)]
pub struct Response {
    pub status: Status,
    pub head: Vec<u8>,
    pub body: Body,
    /// Whether the connection stays open after it.
    pub keep_alive: bool,
}

#[derive(Debug)]
pub enum Body {
    /// HEAD, 304, or nothing.
    None,
    /// `len` bytes of a file, from its start (`sendfile` where possible).
    File { file: File, len: u64 },
    /// A short text (error pages).
    Bytes(Vec<u8>),
}

impl Body {
    pub fn len(&self) -> u64 {
        match self {
            Body::None => 0,
            Body::File { len, .. } => *len,
            Body::Bytes(b) => b.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The answer to a parsed request.
pub fn respond(site: &Site, req: &Request) -> Response {
    let found = match site.open(&req.path) {
        Ok(f) => f,
        Err(status) => {
            let mut r = error_response(status, req.minor);
            // A 404 keeps the connection: the client did nothing wrong.
            r.keep_alive = req.keep_alive;
            r.head = head(status, r.body.len(), TEXT, None, r.keep_alive, req.minor);
            if req.method == Method::Head {
                r.body = Body::None;
            }
            return r;
        }
    };
    // Whole seconds: HTTP dates carry no fraction.
    let modified = found.modified.map(whole_seconds);
    let not_modified = match (req.if_modified_since, modified) {
        (Some(since), Some(m)) => m <= since,
        _ => false,
    };
    if not_modified {
        return Response {
            status: Status::NotModified,
            // No Content-Length: a 304 has no body ([`head`] leaves it out).
            head: head(
                Status::NotModified,
                0,
                "",
                modified,
                req.keep_alive,
                req.minor,
            ),
            body: Body::None,
            keep_alive: req.keep_alive,
        };
    }
    let body = match req.method {
        Method::Head => Body::None,
        Method::Get => Body::File {
            file: found.file,
            len: found.len,
        },
    };
    Response {
        status: Status::Ok,
        head: head(
            Status::Ok,
            found.len,
            content_type(&req.path),
            modified,
            req.keep_alive,
            req.minor,
        ),
        body,
        keep_alive: req.keep_alive,
    }
}

/// The response to a request that could not be served (after
/// [`Parsed::Error`], a timeout or overload): a short text, and the
/// connection closed.
pub fn error_response(status: Status, minor: u8) -> Response {
    let text = format!("{} {}\n", status.code(), status.reason()).into_bytes();
    let mut h = head(status, text.len() as u64, TEXT, None, false, minor);
    if status == Status::MethodNotAllowed {
        // RFC 9110 §15.5.6: a 405 lists what is allowed.
        let at = h.len() - 2;
        h.splice(at..at, b"Allow: GET, HEAD\r\n".iter().copied());
    }
    Response {
        status,
        head: h,
        body: Body::Bytes(text),
        keep_alive: false,
    }
}

fn whole_seconds(t: SystemTime) -> SystemTime {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

/// The media type of the short texts of error responses.
const TEXT: &str = "text/plain";

/// A response head: status line, Date, Server, Content-Length,
/// Content-Type, Last-Modified, Connection, the blank line. A 304 has no
/// body, so neither length nor type (`content_type` is not used).
pub fn head(
    status: Status,
    content_length: u64,
    content_type: &str,
    last_modified: Option<SystemTime>,
    keep_alive: bool,
    minor: u8,
) -> Vec<u8> {
    use std::fmt::Write;
    let mut s = String::with_capacity(192);
    let _ = write!(
        s,
        "HTTP/1.{minor} {} {}\r\nServer: smtlab\r\nDate: {}\r\n",
        status.code(),
        status.reason(),
        httpdate::fmt_http_date(SystemTime::now())
    );
    if status != Status::NotModified {
        let _ = write!(
            s,
            "Content-Length: {content_length}\r\nContent-Type: {content_type}\r\n"
        );
    }
    if let Some(m) = last_modified {
        let _ = write!(s, "Last-Modified: {}\r\n", httpdate::fmt_http_date(m));
    }
    // HTTP/1.1 keeps connections by default, 1.0 closes them: say it only
    // when it differs from the version's default.
    match (keep_alive, minor) {
        (false, 1) => s.push_str("Connection: close\r\n"),
        (true, 0) => s.push_str("Connection: keep-alive\r\n"),
        _ => {}
    }
    s.push_str("\r\n");
    s.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(text: &str) -> Parsed {
        parse_request(text.as_bytes())
    }

    fn status_of(text: &str) -> Status {
        match req(text) {
            Parsed::Error { status, .. } => status,
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn requests_parse_with_keep_alive_by_version_and_pipelining() {
        let two = "GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\n\r\nHEAD /c HTTP/1.0\r\n\r\n";
        let Parsed::Request { request, used } = req(two) else {
            panic!()
        };
        assert_eq!(request.path, "/a b");
        assert_eq!(
            (request.method, request.minor, request.keep_alive),
            (Method::Get, 1, true)
        );
        let Parsed::Request { request, used: u2 } = parse_request(&two.as_bytes()[used..]) else {
            panic!()
        };
        assert_eq!(
            (request.method, request.minor, request.keep_alive),
            (Method::Head, 0, false)
        );
        assert_eq!(used + u2, two.len());
        let Parsed::Request { request, .. } =
            req("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        else {
            panic!()
        };
        assert!(request.keep_alive);
        let Parsed::Request { request, .. } =
            req("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        else {
            panic!()
        };
        assert!(!request.keep_alive);
        // A body is read and dropped.
        let with_body = "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET";
        assert!(
            matches!(req(with_body), Parsed::Request { used, .. } if used == with_body.len() - 3)
        );
        assert_eq!(
            req("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nab"),
            Parsed::Partial
        );
        assert_eq!(req("GET / HTTP/1.1\r\nHo"), Parsed::Partial);
    }

    #[test]
    fn bad_requests_get_their_status() {
        assert_eq!(status_of("garbage\r\n\r\n"), Status::BadRequest);
        assert_eq!(
            status_of("GET / HTTP/1.1\r\n\r\n"),
            Status::BadRequest,
            "no Host"
        );
        assert_eq!(
            status_of("GET ftp://x/ HTTP/1.1\r\nHost: h\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(
            status_of("GET * HTTP/1.1\r\nHost: h\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(
            status_of("GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(
            status_of("GET /%00 HTTP/1.1\r\nHost: h\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(
            status_of("POST / HTTP/1.1\r\nHost: h\r\n\r\n"),
            Status::MethodNotAllowed
        );
        assert_eq!(
            status_of("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 9999999\r\n\r\n"),
            Status::PayloadTooLarge
        );
        let long = format!(
            "GET /{} HTTP/1.1\r\nHost: h\r\n\r\n",
            "a".repeat(MAX_URI_BYTES)
        );
        assert_eq!(status_of(&long), Status::UriTooLong);
        let endless = format!("GET /{}", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(status_of(&endless), Status::UriTooLong);
        let big = format!(
            "GET / HTTP/1.1\r\nHost: h\r\nX: {}\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        assert_eq!(status_of(&big), Status::HeaderFieldsTooLarge);
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X{i}: y\r\n"))
            .collect();
        assert_eq!(
            status_of(&format!("GET / HTTP/1.1\r\nHost: h\r\n{many}\r\n")),
            Status::HeaderFieldsTooLarge
        );
        let r = error_response(Status::MethodNotAllowed, 1);
        let head = String::from_utf8(r.head).unwrap();
        assert!(
            head.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
            "{head}"
        );
        assert!(head.contains("Allow: GET, HEAD\r\n") && head.ends_with("\r\n\r\n"));
        assert!(head.contains("Connection: close\r\n"));
    }

    #[test]
    fn files_are_found_under_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d/f"), b"hello").unwrap();
        std::fs::write(dir.path().join("secret"), b"no").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("out")).unwrap();
        let site = Site::new(&root).unwrap();
        assert_eq!(site.open("/d/f").unwrap().len, 5);
        for bad in [
            "/../secret",
            "/d/../../secret",
            "/out",
            "/d",
            "/missing",
            "/d/f/x",
        ] {
            assert_eq!(site.open(bad).unwrap_err(), Status::NotFound, "{bad}");
        }
    }

    #[test]
    fn responses_carry_length_dates_and_304() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"hello").unwrap();
        let site = Site::new(dir.path()).unwrap();
        let get = |extra: &str| {
            let Parsed::Request { request, .. } =
                req(&format!("GET /f HTTP/1.1\r\nHost: h\r\n{extra}\r\n"))
            else {
                panic!()
            };
            respond(&site, &request)
        };
        let r = get("");
        let head = String::from_utf8(r.head.clone()).unwrap();
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(head.contains("Content-Length: 5\r\n") && head.contains("Last-Modified: "));
        assert_eq!(r.body.len(), 5);
        let lm = head
            .lines()
            .find_map(|l| l.strip_prefix("Last-Modified: "))
            .unwrap()
            .to_string();
        let r = get(&format!("If-Modified-Since: {lm}\r\n"));
        assert_eq!(r.status, Status::NotModified);
        assert!(r.body.is_empty());
        let r = get("If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n");
        assert_eq!(r.status, Status::Ok);
        let Parsed::Request { request, .. } = req("GET /nope HTTP/1.1\r\nHost: h\r\n\r\n") else {
            panic!()
        };
        let r = respond(&site, &request);
        assert_eq!((r.status, r.keep_alive), (Status::NotFound, true));
        let Parsed::Request { request, .. } = req("HEAD /f HTTP/1.0\r\n\r\n") else {
            panic!()
        };
        let r = respond(&site, &request);
        assert!(r.body.is_empty() && !r.keep_alive);
        assert!(String::from_utf8(r.head)
            .unwrap()
            .contains("Content-Length: 5\r\n"));
    }

    fn path_of(text: &str) -> String {
        match req(text) {
            Parsed::Request { request, .. } => request.path,
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn two_different_content_lengths_are_400_and_identical_ones_are_one() {
        let two = "GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 25\r\n\r\n\
                   GET /b HTTP/1.1\r\nHost: h\r\n\r\n";
        assert_eq!(status_of(two), Status::BadRequest);
        assert_eq!(
            status_of("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 4\r\n\r\nabcd"),
            Status::BadRequest
        );
        // RFC 9110 §8.6: the same value repeated is that value.
        for same in [
            "Content-Length: 3\r\nContent-Length: 3\r\n",
            "Content-Length: 3, 3\r\n",
            "Content-Length: 3 \r\n",
        ] {
            let text = format!("GET /a HTTP/1.1\r\nHost: h\r\n{same}\r\nabcGET");
            assert!(
                matches!(req(&text), Parsed::Request { used, .. } if used == text.len() - 3),
                "{same:?}: {:?}",
                req(&text)
            );
        }
        // Digits only: what one parser reads as a number another does not.
        for bad in ["+3", "-1", "0x3", "3 3", "", "3;", "١"] {
            let text = format!("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: {bad}\r\n\r\nabc");
            assert_eq!(status_of(&text), Status::BadRequest, "{bad:?}");
        }
        // Past u64: too large, not a wrapped small number.
        assert_eq!(
            status_of("GET /a HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551619\r\n\r\n"),
            Status::PayloadTooLarge
        );
    }

    #[test]
    fn two_host_lines_or_a_host_that_is_no_authority_are_400() {
        assert_eq!(
            status_of("GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(
            status_of("GET /a HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n"),
            Status::BadRequest,
            "HTTP/1.0 too"
        );
        for bad in ["a b", "user@a", "a/b", "a\\b"] {
            assert_eq!(
                status_of(&format!("GET /a HTTP/1.1\r\nHost: {bad}\r\n\r\n")),
                Status::BadRequest,
                "{bad}"
            );
        }
        for good in [
            "a",
            "127.0.0.1:8080",
            "[::1]:80",
            "xn--bcher-kva.example",
            "",
        ] {
            assert_eq!(
                path_of(&format!("GET /a HTTP/1.1\r\nHost: {good}\r\n\r\n")),
                "/a",
                "{good}"
            );
        }
    }

    #[test]
    fn absolute_form_targets_are_served_by_their_path() {
        for (target, path) in [
            ("http://127.0.0.1:8080/a.txt", "/a.txt"),
            ("HTTP://Example.COM/d/%41?q=1", "/d/A"),
            ("https://h/", "/"),
            ("http://h", "/"),
            ("http://h?x", "/"),
        ] {
            assert_eq!(
                path_of(&format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n")),
                path,
                "{target}"
            );
        }
        for bad in [
            "http:///a",
            "http://user@h/a",
            "http://h h/a",
            "gopher://h/a",
            "http:/h/a",
            "h/a",
        ] {
            assert_eq!(
                status_of(&format!("GET {bad} HTTP/1.1\r\nHost: h\r\n\r\n")),
                Status::BadRequest,
                "{bad}"
            );
        }
        // Host is still required of an HTTP/1.1 request (RFC 9112 §3.2).
        assert_eq!(
            status_of("GET http://h/a HTTP/1.1\r\n\r\n"),
            Status::BadRequest
        );
    }

    #[test]
    fn a_version_that_is_not_one_is_400_another_major_505_a_later_minor_11() {
        for bad in [
            "http/1.1",
            "HTTP/1",
            "HTTP/1.1x",
            "HTTP/11",
            "HTTP/a.b",
            "HTTP/1.1.1",
            "HTTP/",
            "HTTPS/1.1",
        ] {
            assert_eq!(
                status_of(&format!("GET /a {bad}\r\nHost: h\r\n\r\n")),
                Status::BadRequest,
                "{bad}"
            );
        }
        assert_eq!(status_of("GET /a\r\n\r\n"), Status::BadRequest, "HTTP/0.9");
        for other in ["HTTP/2.0", "HTTP/3.0", "HTTP/0.9"] {
            assert_eq!(
                status_of(&format!("GET /a {other}\r\nHost: h\r\n\r\n")),
                Status::VersionNotSupported,
                "{other}"
            );
        }
        let text = "GET /a HTTP/1.2\r\nHost: h\r\n\r\nGET";
        let Parsed::Request { request, used } = req(text) else {
            panic!("{:?}", req(text))
        };
        assert_eq!(
            (request.minor, request.keep_alive, used),
            (1, true, text.len() - 3)
        );
        // Not all there yet: wait, whichever it turns out to be.
        assert_eq!(req("GET /a HTTP/2"), Parsed::Partial);
        assert_eq!(req("GET /a HTTP/1.2\r\nHo"), Parsed::Partial);
    }

    #[test]
    fn chunked_bodies_are_dropped_and_ambiguous_framing_is_400() {
        let body = "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-Trailer: t\r\n\r\n";
        let text =
            format!("GET /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n{body}GET");
        assert!(
            matches!(req(&text), Parsed::Request { used, .. } if used == text.len() - 3),
            "{:?}",
            req(&text)
        );
        for te in [
            "gzip, chunked",
            "gzip\r\nTransfer-Encoding: chunked",
            "CHUNKED",
        ] {
            let text =
                format!("GET /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: {te}\r\n\r\n0\r\n\r\n");
            assert!(
                matches!(req(&text), Parsed::Request { .. }),
                "{te}: {:?}",
                req(&text)
            );
        }
        // Every half-way point waits for more.
        for cut in 1..body.len() {
            let text = format!(
                "GET /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n{}",
                &body[..cut]
            );
            assert_eq!(req(&text), Parsed::Partial, "cut at {cut}");
        }
        let chunked =
            |te: &str, body: &str| format!("GET /a HTTP/1.1\r\nHost: h\r\n{te}\r\n\r\n{body}");
        for (te, body, want) in [
            (
                "Transfer-Encoding: chunked\r\nContent-Length: 5",
                "0\r\n\r\n",
                Status::BadRequest,
            ),
            (
                "Content-Length: 5\r\nTransfer-Encoding: chunked",
                "0\r\n\r\n",
                Status::BadRequest,
            ),
            ("Transfer-Encoding: gzip", "", Status::BadRequest),
            ("Transfer-Encoding: chunked, gzip", "", Status::BadRequest),
            (
                "Transfer-Encoding: chunked, chunked",
                "0\r\n\r\n",
                Status::BadRequest,
            ),
            (
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
                "0\r\n\r\n",
                Status::BadRequest,
            ),
            ("Transfer-Encoding: ", "", Status::BadRequest),
            ("Transfer-Encoding: chunked", "zz\r\n", Status::BadRequest),
            (
                "Transfer-Encoding: chunked",
                "3\r\nabcX\r\n0\r\n\r\n",
                Status::BadRequest,
            ),
            (
                "Transfer-Encoding: chunked",
                "3\r\nabc\n0\r\n\r\n",
                Status::BadRequest,
            ),
            (
                "Transfer-Encoding: chunked",
                "ffffffffffffffffff\r\n",
                Status::BadRequest,
            ),
            (
                "Transfer-Encoding: chunked",
                "100001\r\n",
                Status::PayloadTooLarge,
            ),
        ] {
            assert_eq!(status_of(&chunked(te, body)), want, "{te:?} {body:?}");
        }
        assert_eq!(
            status_of("GET /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            Status::BadRequest,
            "HTTP/1.0 has no chunked"
        );
        // Framing that never ends is refused once past its limit.
        let endless = chunked(
            "Transfer-Encoding: chunked",
            &"1\r\na\r\n".repeat(MAX_CHUNKED_WIRE_BYTES as usize / 6 + 1),
        );
        assert_eq!(status_of(&endless), Status::PayloadTooLarge);
    }

    #[test]
    fn content_type_follows_the_extension() {
        for (path, t) in [
            ("/index.html", "text/html"),
            ("/d/INDEX.HTM", "text/html"),
            ("/s.css", "text/css"),
            ("/a.js", "text/javascript"),
            ("/a.json", "application/json"),
            ("/i.svg", "image/svg+xml"),
            ("/i.png", "image/png"),
            ("/i.jpg", "image/jpeg"),
            ("/i.jpeg", "image/jpeg"),
            ("/i.gif", "image/gif"),
            ("/r.txt", "text/plain"),
            ("/p.pdf", "application/pdf"),
            ("/m.wasm", "application/wasm"),
            ("/dir00000/class0_0", "application/octet-stream"),
            ("/a.tar.gz", "application/octet-stream"),
            ("/.html/x", "application/octet-stream"),
            ("/x.", "application/octet-stream"),
        ] {
            assert_eq!(content_type(path), t, "{path}");
        }
    }

    #[test]
    fn only_regular_files_are_opened_and_a_fifo_never_blocks() {
        let dir = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&dir.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
        std::fs::write(dir.path().join("a.css"), b"body{}").unwrap();
        let site = Site::new(dir.path()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let s = site.clone();
        std::thread::spawn(move || {
            let _ = tx.send(["/fifo", "/sock"].map(|p| s.open(p).err()));
        });
        let Ok(got) = rx.recv_timeout(std::time::Duration::from_secs(5)) else {
            // Let the stuck open return so the test process can end.
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(dir.path().join("fifo"));
            panic!("opening a FIFO without a writer blocked");
        };
        assert_eq!(got, [Some(Status::NotFound); 2]);
        let Parsed::Request { request, .. } = req("GET /a.css HTTP/1.1\r\nHost: h\r\n\r\n") else {
            panic!()
        };
        let head = String::from_utf8(respond(&site, &request).head).unwrap();
        assert!(head.contains("Content-Type: text/css\r\n"), "{head}");
    }
}
