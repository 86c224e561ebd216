//! HTTP/1.x for the static server, shared by its four architectures:
//! parsing a request from bytes received so far ([`parse_request`], with
//! `httparse`), finding the file under the document root without ever
//! leaving it ([`Site::open`]), and the response head ([`Response`]).
//!
//! Nothing here does I/O on sockets: each architecture reads and writes in
//! its own way (blocking, epoll, stages) and calls these pure steps, so all
//! four answer every request the same way.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
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

/// Parse the request at the start of `buf`.
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
        Err(httparse::Error::Version) => return error(Status::VersionNotSupported, 1),
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
    let mut body_len: u64 = 0;
    let mut if_modified_since = None;
    let mut host = false;
    for h in req.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    keep_alive = true;
                }
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            match value.parse::<u64>() {
                Ok(n) if n > MAX_BODY_BYTES => return error(Status::PayloadTooLarge, minor),
                Ok(n) => body_len = n,
                Err(_) => return error(Status::BadRequest, minor),
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // A chunked body on GET/HEAD: not worth decoding to drop it.
            return error(Status::BadRequest, minor);
        } else if h.name.eq_ignore_ascii_case("if-modified-since") {
            if_modified_since = httpdate::parse_http_date(value).ok();
        } else if h.name.eq_ignore_ascii_case("host") {
            host = true;
        }
    }
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400.
    if minor == 1 && !host {
        return error(Status::BadRequest, minor);
    }
    let Some(path) = decode_path(target) else {
        return error(Status::BadRequest, minor);
    };
    let used = head_len + body_len as usize;
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

/// The path of an origin-form target, percent-decoded, without its query;
/// `None` when it is not a path (absolute-form and `*` are not served) or
/// does not decode to UTF-8 without NUL.
fn decode_path(target: &str) -> Option<String> {
    let raw = target.split(['?', '#']).next().unwrap_or("");
    if !raw.starts_with('/') {
        return None;
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
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

/// The document root and how to find files in it.
#[derive(Debug, Clone)]
pub struct Site {
    /// Canonical (symlinks resolved), so a path under it can be checked.
    root: PathBuf,
    /// The root open, for `openat2(RESOLVE_BENEATH)`: one call per file
    /// and the kernel's guarantee that nothing outside is opened.
    dir: std::sync::Arc<File>,
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
        Ok(Site { root, dir })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The regular file at a decoded request path, never outside the root:
    /// `..` segments are refused, and a symlink leading out is not served.
    pub fn open(&self, path: &str) -> Result<Found, Status> {
        let rel = Path::new(path.trim_start_matches('/'));
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(Status::NotFound);
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
                File::open(&real).map_err(|_| Status::NotFound)?
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
            r.head = head(status, r.body.len(), None, r.keep_alive, req.minor);
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
            head: head(Status::NotModified, 0, modified, req.keep_alive, req.minor),
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
        head: head(Status::Ok, found.len, modified, req.keep_alive, req.minor),
        body,
        keep_alive: req.keep_alive,
    }
}

/// The response to a request that could not be served (after
/// [`Parsed::Error`], a timeout or overload): a short text, and the
/// connection closed.
pub fn error_response(status: Status, minor: u8) -> Response {
    let text = format!("{} {}\n", status.code(), status.reason()).into_bytes();
    let mut h = head(status, text.len() as u64, None, false, minor);
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

/// A response head: status line, Date, Server, Content-Length,
/// Last-Modified, Connection, the blank line.
pub fn head(
    status: Status,
    content_length: u64,
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
        let _ = write!(s, "Content-Length: {content_length}\r\n");
        let ctype = if status == Status::Ok {
            "application/octet-stream"
        } else {
            "text/plain"
        };
        let _ = write!(s, "Content-Type: {ctype}\r\n");
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
            status_of("GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n"),
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
}
