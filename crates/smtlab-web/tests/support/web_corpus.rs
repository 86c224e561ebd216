//! The web server's hostile-request corpus: raw requests, each with the
//! replies it must get and whether the connection then stays open, run
//! against every architecture — by the servers' own test (through the
//! library) and by the CLI's (`smtlab serve web`, all four models), which
//! include this file by path.
//!
//! To add a case: one more entry in [`cases`]: `case(name, raw bytes)`,
//! then a `.reply(status)` (or `.head_reply`, `.body`, `.ctype`) per
//! response expected in order, then `.closes()` or `.stays_open()`. The
//! files it may ask for are those [`make_root`] writes.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use smtlab_web::http::{MAX_HEADERS, MAX_HEAD_BYTES, MAX_URI_BYTES};

/// How long a client waits for a reply, or for the close.
const PATIENCE: Duration = Duration::from_secs(5);

/// The body of `/a.txt` (and of `/in`, a symlink to it).
pub const A_TXT: &[u8] = b"hello\n";
/// The file outside the root that nothing may serve.
pub const SECRET: &[u8] = b"TOP SECRET\n";

/// The document root the corpus asks for, written under `dir` (which also
/// holds the secret outside it): regular files of several types, a
/// directory, a FIFO, a socket, symlinks inside and leading out. The
/// socket's listener is returned: its file must stay while the server runs.
pub fn make_root(dir: &Path) -> (PathBuf, std::os::unix::net::UnixListener) {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("a.txt"), A_TXT).unwrap();
    std::fs::write(root.join("d/b.txt"), b"bee\n").unwrap();
    for (name, body) in [
        ("index.html", &b"<!doctype html><title>t</title>"[..]),
        ("s.css", b"body{}"),
        ("app.js", b"1;"),
        ("data.json", b"{}"),
        ("pic.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>"),
        ("pic.png", b"\x89PNG"),
        ("pic.jpg", b"\xff\xd8"),
        ("pic.gif", b"GIF89a"),
        ("doc.pdf", b"%PDF"),
        ("mod.wasm", b"\0asm"),
        ("blob", b"\x01\x02"),
    ] {
        std::fs::write(root.join(name), body).unwrap();
    }
    std::fs::write(dir.join("secret"), SECRET).unwrap();
    std::os::unix::fs::symlink(dir.join("secret"), root.join("out")).unwrap();
    std::os::unix::fs::symlink("../secret", root.join("rel-out")).unwrap();
    std::os::unix::fs::symlink(dir, root.join("outdir")).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("in")).unwrap();
    nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let socket = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();
    (root, socket)
}

/// One response expected.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// It answers a HEAD: no body follows, whatever Content-Length says.
    pub head: bool,
    pub body: Option<&'static [u8]>,
    pub content_type: Option<&'static str>,
}

/// What the connection does after the last reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Closed by the server, with nothing more sent.
    Closes,
    /// Still open: a further request on it is answered.
    StaysOpen,
}

/// One raw request (or several, pipelined) and what it must get.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: &'static str,
    pub raw: Vec<u8>,
    pub replies: Vec<Reply>,
    pub then: Then,
}

fn case(name: &'static str, raw: impl Into<Vec<u8>>) -> Case {
    Case {
        name,
        raw: raw.into(),
        replies: Vec::new(),
        then: Then::Closes,
    }
}

impl Case {
    fn reply(mut self, status: u16) -> Case {
        self.replies.push(Reply {
            status,
            head: false,
            body: None,
            content_type: None,
        });
        self
    }

    fn head_reply(mut self, status: u16) -> Case {
        self = self.reply(status);
        self.replies.last_mut().unwrap().head = true;
        self
    }

    /// The last reply's body.
    fn body(mut self, body: &'static [u8]) -> Case {
        self.replies.last_mut().unwrap().body = Some(body);
        self
    }

    /// The last reply's Content-Type.
    fn ctype(mut self, t: &'static str) -> Case {
        self.replies.last_mut().unwrap().content_type = Some(t);
        self
    }

    fn closes(mut self) -> Case {
        self.then = Then::Closes;
        self
    }

    fn stays_open(mut self) -> Case {
        self.then = Then::StaysOpen;
        self
    }
}

/// `GET path HTTP/1.1` with a Host.
fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}

/// `GET /a.txt HTTP/1.1` with `extra` header lines (each ending CRLF).
fn get_with(extra: &str) -> String {
    format!("GET /a.txt HTTP/1.1\r\nHost: t\r\n{extra}\r\n")
}

/// Every case.
// The corpus is a table, one case per entry, read top to bottom.
#[allow(clippy::too_many_lines)]
pub fn cases() -> Vec<Case> {
    let mut all = vec![
        // Plain requests.
        case("GET a file", get("/a.txt"))
            .reply(200)
            .body(A_TXT)
            .ctype("text/plain")
            .stays_open(),
        case(
            "HEAD has no body",
            "HEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .head_reply(200)
        .stays_open(),
        case("HTTP/1.0 closes", "GET /a.txt HTTP/1.0\r\n\r\n")
            .reply(200)
            .body(A_TXT)
            .closes(),
        case(
            "HTTP/1.0 with keep-alive",
            "GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        )
        .reply(200)
        .body(A_TXT)
        .stays_open(),
        case(
            "HTTP/1.1 Connection: close",
            get_with("Connection: close\r\n"),
        )
        .reply(200)
        .closes(),
        case(
            "pipelined GET, HEAD, 404, GET in one write",
            [
                get("/a.txt"),
                "HEAD /d/b.txt HTTP/1.1\r\nHost: t\r\n\r\n".into(),
                get("/nothing"),
                get("/d/b.txt"),
            ]
            .concat(),
        )
        .reply(200)
        .body(A_TXT)
        .head_reply(200)
        .reply(404)
        .reply(200)
        .body(b"bee\n")
        .stays_open(),
        case(
            "pipelining ends at Connection: close",
            [get_with("Connection: close\r\n"), get("/a.txt")].concat(),
        )
        .reply(200)
        .closes(),
        case(
            "an empty line before the request line is ignored",
            format!("\r\n{}", get("/a.txt")),
        )
        .reply(200)
        .stays_open(),
        case("bare LF line ends", "GET /a.txt HTTP/1.1\nHost: t\n\n")
            .reply(200)
            .stays_open(),
        case("query string", get("/a.txt?x=1&y=%00"))
            .reply(200)
            .body(A_TXT)
            .stays_open(),
        case("percent-encoded name", get("/%61.txt"))
            .reply(200)
            .body(A_TXT)
            .stays_open(),
        case("a ./ segment", get("/./d/./b.txt"))
            .reply(200)
            .stays_open(),
        case(
            "If-Modified-Since in the future: 304 without a body",
            get_with("If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n"),
        )
        .reply(304)
        .stays_open(),
        // Nothing outside the root; nothing but regular files.
        case("traversal", get("/../secret")).reply(404).stays_open(),
        case("traversal, encoded", get("/%2e%2e/secret"))
            .reply(404)
            .stays_open(),
        case("traversal, encoded upper case", get("/%2E%2E/secret"))
            .reply(404)
            .stays_open(),
        case("traversal, encoded slashes", get("/d/..%2f..%2fsecret"))
            .reply(404)
            .stays_open(),
        case("traversal from a directory", get("/d/../../secret"))
            .reply(404)
            .stays_open(),
        case("no .. even inside", get("/d/../a.txt"))
            .reply(404)
            .stays_open(),
        case("absolute path inside the target", get("//etc/passwd"))
            .reply(404)
            .stays_open(),
        case("symlink out of the root", get("/out"))
            .reply(404)
            .stays_open(),
        case("relative symlink out of the root", get("/rel-out"))
            .reply(404)
            .stays_open(),
        case(
            "through a symlinked directory outside",
            get("/outdir/secret"),
        )
        .reply(404)
        .stays_open(),
        case("a symlink inside is followed", get("/in"))
            .reply(200)
            .body(A_TXT)
            .stays_open(),
        case("a FIFO is not a file", get("/fifo"))
            .reply(404)
            .stays_open(),
        case("a socket is not a file", get("/sock"))
            .reply(404)
            .stays_open(),
        case("a directory is not a file", get("/d"))
            .reply(404)
            .stays_open(),
        case("the root is not a file", get("/"))
            .reply(404)
            .stays_open(),
        case("a file is not a directory", get("/a.txt/x"))
            .reply(404)
            .stays_open(),
        case("NUL, encoded", get("/a.txt%00.html"))
            .reply(400)
            .closes(),
        case("NUL, raw", "GET /a.txt\0 HTTP/1.1\r\nHost: t\r\n\r\n")
            .reply(400)
            .closes(),
        case("bad percent-encoding", get("/%zz"))
            .reply(400)
            .closes(),
        case("percent with a sign", get("/%+f")).reply(400).closes(),
        // Sizes.
        case(
            "overlong request line",
            get(&format!("/{}", "a".repeat(MAX_URI_BYTES + 1))),
        )
        .reply(414)
        .closes(),
        case(
            "overlong header",
            get_with(&format!("X-Big: {}\r\n", "a".repeat(MAX_HEAD_BYTES + 1))),
        )
        .reply(431)
        .closes(),
        case(
            "too many headers",
            get_with(
                &(0..=MAX_HEADERS)
                    .map(|i| format!("X-{i}: y\r\n"))
                    .collect::<String>(),
            ),
        )
        .reply(431)
        .closes(),
        case("body too large", get_with("Content-Length: 2000000\r\n"))
            .reply(413)
            .closes(),
        // Framing (RFC 9112 §6): what could smuggle a request.
        case(
            "two different Content-Length values",
            [
                get_with("Content-Length: 0\r\nContent-Length: 25\r\n"),
                get("/a.txt"),
            ]
            .concat(),
        )
        .reply(400)
        .closes(),
        case(
            "Content-Length list of different values",
            get_with("Content-Length: 3, 4\r\n") + "abcd",
        )
        .reply(400)
        .closes(),
        case(
            "identical Content-Length values are one",
            get_with("Content-Length: 3\r\nContent-Length: 3\r\n") + "abc" + &get("/d/b.txt"),
        )
        .reply(200)
        .body(A_TXT)
        .reply(200)
        .body(b"bee\n")
        .stays_open(),
        case(
            "a body is read and dropped",
            get_with("Content-Length: 5\r\n") + "GET /" + &get("/d/b.txt"),
        )
        .reply(200)
        .body(A_TXT)
        .reply(200)
        .body(b"bee\n")
        .stays_open(),
        case(
            "Content-Length with a sign",
            get_with("Content-Length: +3\r\n") + "abc",
        )
        .reply(400)
        .closes(),
        case(
            "Transfer-Encoding and Content-Length",
            get_with("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") + "0\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "a chunked body is read and dropped",
            get_with("Transfer-Encoding: chunked\r\n")
                + "3;x=y\r\nabc\r\n0\r\nTrailer: t\r\n\r\n"
                + &get("/d/b.txt"),
        )
        .reply(200)
        .body(A_TXT)
        .reply(200)
        .body(b"bee\n")
        .stays_open(),
        case(
            "bad chunk size",
            get_with("Transfer-Encoding: chunked\r\n") + "xyz\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "chunk data longer than its size",
            get_with("Transfer-Encoding: chunked\r\n") + "3\r\nabcdef\r\n0\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "chunked not the final coding",
            get_with("Transfer-Encoding: chunked, gzip\r\n"),
        )
        .reply(400)
        .closes(),
        case(
            "an unknown coding alone",
            get_with("Transfer-Encoding: xchunked\r\n") + "0\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "chunked twice",
            get_with("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n") + "0\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "Transfer-Encoding in HTTP/1.0",
            "GET /a.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "whitespace before a colon",
            "GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case("obsolete line folding", get_with("X-A: a\r\n  folded\r\n"))
            .reply(400)
            .closes(),
        // Host (RFC 9112 §3.2).
        case(
            "two Host lines",
            "GET /a.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case("no Host in HTTP/1.1", "GET /a.txt HTTP/1.1\r\n\r\n")
            .reply(400)
            .closes(),
        case(
            "a Host with a space",
            "GET /a.txt HTTP/1.1\r\nHost: a b\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "a Host with userinfo",
            "GET /a.txt HTTP/1.1\r\nHost: u@a\r\n\r\n",
        )
        .reply(400)
        .closes(),
        // Targets and versions (RFC 9112 §2.3, §3.2).
        case(
            "absolute-form target",
            "GET http://127.0.0.1:8080/a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .reply(200)
        .body(A_TXT)
        .stays_open(),
        case(
            "absolute-form with userinfo",
            "GET http://u@h/a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case("asterisk-form on GET", "GET * HTTP/1.1\r\nHost: t\r\n\r\n")
            .reply(400)
            .closes(),
        case(
            "lower-case version",
            "GET /a.txt http/1.1\r\nHost: t\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case(
            "version without a minor",
            "GET /a.txt HTTP/1\r\nHost: t\r\n\r\n",
        )
        .reply(400)
        .closes(),
        case("no version (HTTP/0.9)", "GET /a.txt\r\n\r\n")
            .reply(400)
            .closes(),
        case(
            "HTTP/2.0 in HTTP/1 syntax",
            "GET /a.txt HTTP/2.0\r\nHost: t\r\n\r\n",
        )
        .reply(505)
        .closes(),
        case(
            "HTTP/1.2 is served as 1.1",
            "GET /a.txt HTTP/1.2\r\nHost: t\r\n\r\n",
        )
        .reply(200)
        .body(A_TXT)
        .stays_open(),
        case("garbage", "\x16\x03\x01\x02\x00garbage\r\n\r\n")
            .reply(400)
            .closes(),
        // Content-Type from the extension.
        case("html", get("/index.html"))
            .reply(200)
            .ctype("text/html")
            .stays_open(),
        case("css", get("/s.css"))
            .reply(200)
            .ctype("text/css")
            .stays_open(),
        case("js", get("/app.js"))
            .reply(200)
            .ctype("text/javascript")
            .stays_open(),
        case("json", get("/data.json"))
            .reply(200)
            .ctype("application/json")
            .stays_open(),
        case("svg", get("/pic.svg"))
            .reply(200)
            .ctype("image/svg+xml")
            .stays_open(),
        case("png", get("/pic.png"))
            .reply(200)
            .ctype("image/png")
            .stays_open(),
        case("jpg", get("/pic.jpg"))
            .reply(200)
            .ctype("image/jpeg")
            .stays_open(),
        case("gif", get("/pic.gif"))
            .reply(200)
            .ctype("image/gif")
            .stays_open(),
        case("pdf", get("/doc.pdf"))
            .reply(200)
            .ctype("application/pdf")
            .stays_open(),
        case("wasm", get("/mod.wasm"))
            .reply(200)
            .ctype("application/wasm")
            .stays_open(),
        case("no extension", get("/blob"))
            .reply(200)
            .ctype("application/octet-stream")
            .stays_open(),
        case(
            "a HEAD's type is the GET's",
            "HEAD /index.html HTTP/1.1\r\nHost: t\r\n\r\n",
        )
        .head_reply(200)
        .ctype("text/html")
        .stays_open(),
    ];
    // Methods other than GET and HEAD: 405, with Allow.
    for method in [
        "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH", "BREW", "get",
    ] {
        all.push(
            case(
                "another method",
                format!("{method} /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"),
            )
            .reply(405)
            .closes(),
        );
    }
    all.push(
        case("CONNECT", "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n")
            .reply(405)
            .closes(),
    );
    all
}

/// One response as read off a connection.
#[derive(Debug)]
struct Got {
    status_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Got {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_reply(r: &mut BufReader<TcpStream>, head: bool) -> Result<Got, String> {
    let mut line = String::new();
    match r.read_line(&mut line) {
        Ok(0) => return Err("closed before a reply".into()),
        Ok(_) => {}
        Err(e) => return Err(format!("no reply: {e}")),
    }
    let status_line = line.trim_end().to_string();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("not a status line: {status_line:?}"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line)
            .map_err(|e| format!("{status_line}: head cut: {e}"))?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l
            .split_once(':')
            .ok_or_else(|| format!("{status_line}: not a header: {l:?}"))?;
        headers.push((n.trim().to_string(), v.trim().to_string()));
    }
    let mut got = Got {
        status_line,
        headers,
        body: Vec::new(),
    };
    if !head && status != 304 {
        let len: usize = got
            .header("Content-Length")
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{}: no Content-Length", got.status_line))?;
        got.body = vec![0; len];
        r.read_exact(&mut got.body)
            .map_err(|e| format!("{}: body cut: {e}", got.status_line))?;
    }
    Ok(got)
}

/// Send `case` on a new connection to `addr` and check every reply and
/// what the connection does after; `Err` says what differed.
pub fn run(addr: SocketAddr, case: &Case) -> Result<(), String> {
    let s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    // A refused request may be answered before all of it is sent, and the
    // server may close: a failed write is not the fault under test.
    let _ = w.write_all(&case.raw);
    for (k, want) in case.replies.iter().enumerate() {
        let got = read_reply(&mut r, want.head).map_err(|e| format!("reply {k}: {e}"))?;
        let status = got.status_line.split(' ').nth(1).unwrap_or("");
        if status != want.status.to_string() {
            return Err(format!(
                "reply {k}: {} (wanted {})",
                got.status_line, want.status
            ));
        }
        if let Some(body) = want.body {
            if got.body != body {
                return Err(format!(
                    "reply {k}: body {:?}",
                    String::from_utf8_lossy(&got.body)
                ));
            }
        }
        if let Some(t) = want.content_type {
            if got.header("Content-Type") != Some(t) {
                return Err(format!(
                    "reply {k}: Content-Type {:?} (wanted {t})",
                    got.header("Content-Type")
                ));
            }
        }
        if want.status == 405 && got.header("Allow") != Some("GET, HEAD") {
            return Err(format!("reply {k}: 405 without Allow: GET, HEAD"));
        }
        if String::from_utf8_lossy(&got.body).contains("SECRET") {
            return Err(format!("reply {k}: served the secret"));
        }
    }
    match case.then {
        Then::Closes => {
            let _ = w.shutdown(Shutdown::Write);
            let mut rest = Vec::new();
            match r.read_to_end(&mut rest) {
                Ok(_) if rest.is_empty() => Ok(()),
                Ok(_) => Err(format!(
                    "more after the last reply: {:?}",
                    String::from_utf8_lossy(&rest[..rest.len().min(80)])
                )),
                // A reset after the reply is a close too.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && rest.is_empty() => {
                    Ok(())
                }
                Err(e) => Err(format!("not closed: {e}")),
            }
        }
        Then::StaysOpen => {
            w.write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
                .map_err(|e| format!("closed after the last reply: {e}"))?;
            let got = read_reply(&mut r, false).map_err(|e| format!("not open after: {e}"))?;
            if !got.status_line.contains(" 200 ") || got.body != A_TXT {
                return Err(format!(
                    "the request after: {} {:?}",
                    got.status_line,
                    String::from_utf8_lossy(&got.body)
                ));
            }
            Ok(())
        }
    }
}

/// Run every case against `addr`; `Err` lists each that failed.
pub fn run_all(addr: SocketAddr, who: &str) -> Result<usize, String> {
    let all = cases();
    let failed: Vec<String> = all
        .iter()
        .filter_map(|c| {
            run(addr, c)
                .err()
                .map(|e| format!("{who}: {}: {e}", c.name))
        })
        .collect();
    if failed.is_empty() {
        Ok(all.len())
    } else {
        Err(failed.join("\n"))
    }
}
