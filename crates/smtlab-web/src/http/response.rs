//! The response to a request: its head (status line, dates, length,
//! type, connection) and the body to send after it.

use std::fs::File;
use std::time::SystemTime;

use super::request::{Method, Request};
use super::site::{content_type, Site};
use super::status::Status;

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
/// [`Parsed::Error`](super::Parsed::Error), a timeout or overload): a
/// short text, and the connection closed.
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
///
/// Last-Modified is never later than Date (RFC 9110 §8.8.2.1): a file
/// dated in the future (a clock ahead where it was written, `touch -d`) is
/// sent as modified now. With its own date, a browser would revalidate
/// with that date, and every edit before it would be answered 304, the old
/// file shown for ever; [`respond`] compares the file's own date, so such
/// a file is sent whole until that date has passed.
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
    let now = SystemTime::now();
    let _ = write!(
        s,
        "HTTP/1.{minor} {} {}\r\nServer: smtlab\r\nDate: {}\r\n",
        status.code(),
        status.reason(),
        httpdate::fmt_http_date(now)
    );
    if status != Status::NotModified {
        let _ = write!(
            s,
            "Content-Length: {content_length}\r\nContent-Type: {content_type}\r\n"
        );
    }
    if let Some(m) = last_modified {
        let _ = write!(
            s,
            "Last-Modified: {}\r\n",
            httpdate::fmt_http_date(m.min(now))
        );
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
