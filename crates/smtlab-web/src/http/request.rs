//! Parsing a request from the bytes received so far ([`parse_request`],
//! with `httparse`, framing as strictly as RFC 9112 asks), and the limits
//! a request head is held to.

use std::time::SystemTime;

use super::status::Status;

/// A request head larger than this is refused with 431.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// More header lines than this: 431.
pub const MAX_HEADERS: usize = 64;
/// A request target longer than this: 414.
pub const MAX_URI_BYTES: usize = 4096;
/// A request body (allowed, read and dropped) larger than this: 413.
pub const MAX_BODY_BYTES: u64 = 1 << 20;

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
