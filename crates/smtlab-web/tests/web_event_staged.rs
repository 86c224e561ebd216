//! The `event` and `staged` architectures over real sockets on 127.0.0.1
//! port 0 (issue 17, items 1 and 7). Most tests loop over [`SETUPS`]: both
//! models, and `event` with helper threads (AMPED).
//!
//! Checked: every class of file byte for byte (the file set's content
//! function), HEAD, HTTP/1.0 and 1.1, keep-alive, pipelining,
//! `Connection: close`, 304, 404, 400, 431, nothing outside the root;
//! hostile clients — one byte a second, half-closed and reset connections,
//! a garbage flood, two thousand idle connections — while others are
//! served at once; the connection limit (503); everything freed and a
//! prompt stop; `staged`'s stage statistics and its full queue (503);
//! `event`'s helpers keeping the loop free while a file blocks.
//!
//! A file that blocks: a [`Gate`] on one path, the server's `before_open`
//! hook holding the thread that opens it (a helper, a file-stage thread)
//! for as long as the test wants, as a cold disk would. (A FIFO did that
//! once; the server now opens nothing but regular files, without waiting.)

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use smtlab_web::fileset::{BodyCheck, FileSet, FileSpec};
use smtlab_web::http::BeforeOpen;
use smtlab_web::server::{self as web, Model, Server, ServerConfig};

/// What most tests run: (model, workers, helpers).
const SETUPS: [(Model, usize, usize); 3] = [
    (Model::Event, 2, 0),
    (Model::Staged, 2, 0),
    (Model::Event, 2, 2),
];

/// How long a client waits for anything before the test fails.
const PATIENCE: Duration = Duration::from_secs(10);

/// A generated file set (one directory) under `<tmp>/root`, and a file
/// outside the root that must never be served.
struct Files {
    dir: tempfile::TempDir,
    set: FileSet,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let set = FileSet::with_dirs(1).unwrap();
        set.write_to(&dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("secret"), b"not for you").unwrap();
        Files { dir, set }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// The smallest and largest file of each class.
    fn samples(&self) -> Vec<&FileSpec> {
        (0..4)
            .flat_map(|c| {
                let of_class: Vec<&FileSpec> =
                    self.set.files.iter().filter(|f| f.class == c).collect();
                [of_class[0], of_class[of_class.len() - 1]]
            })
            .collect()
    }

    fn file(&self, class: usize, k: usize) -> &FileSpec {
        self.set
            .files
            .iter()
            .filter(|f| f.class == class)
            .nth(k)
            .unwrap()
    }
}

fn config(setup: (Model, usize, usize), root: &Path) -> ServerConfig {
    let (model, workers, helpers) = setup;
    let mut config = ServerConfig::new(model, workers, root.to_path_buf());
    config.helpers = helpers;
    config
}

fn start(config: &ServerConfig) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    web::start(config, listener).unwrap_or_else(|e| panic!("{:?}: {e}", config.model))
}

fn name(setup: (Model, usize, usize)) -> String {
    format!("{} workers={} helpers={}", setup.0, setup.1, setup.2)
}

/// One response as read.
#[derive(Debug)]
struct Reply {
    status: u16,
    /// The status line, and the headers with lowercase names.
    status_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body is the file's, byte for byte.
    fn assert_body(&self, file: &FileSpec) {
        assert_eq!(self.status, 200, "{}: {}", file.path, self.status_line);
        let mut check = BodyCheck::new(&file.path, file.size);
        check.feed(&self.body);
        check
            .finish()
            .unwrap_or_else(|e| panic!("{}: {e}", file.path));
    }
}

/// A client connection with a read timeout of [`PATIENCE`].
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        Client {
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    /// Read one response; a HEAD's has no body whatever its length says.
    fn reply(&mut self, head_only: bool) -> Reply {
        let mut status_line = String::new();
        self.reader.read_line(&mut status_line).unwrap();
        assert!(
            status_line.starts_with("HTTP/1."),
            "not a response: {status_line:?}"
        );
        let status = status_line[9..12].parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (n, v) = line.split_once(':').unwrap();
            headers.push((n.to_ascii_lowercase(), v.trim().to_string()));
        }
        let mut reply = Reply {
            status,
            status_line: status_line.trim_end().to_string(),
            headers,
            body: Vec::new(),
        };
        let len: usize = reply
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        if !head_only && status != 304 {
            reply.body.resize(len, 0);
            self.reader.read_exact(&mut reply.body).unwrap();
        }
        reply
    }

    /// The server closed the connection: nothing more arrives.
    fn assert_closed(&mut self) {
        let mut rest = Vec::new();
        match self.reader.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest)),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}"),
        }
    }
}

fn get_request(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}

/// A GET on a new connection, and how long it took.
fn get(addr: SocketAddr, file: &FileSpec) -> Duration {
    let t = Instant::now();
    let mut c = Client::connect(addr);
    c.send(&get_request(&file.path));
    c.reply(false).assert_body(file);
    t.elapsed()
}

/// Wait until `done` holds, or fail saying `what`.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < until, "still not {what} after {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_all_closed(server: &Server, limit: Duration) {
    let what = format!("every connection of {} closed", server.model());
    wait_for(&what, limit, || {
        server.stats().counters.open_connections == 0
    });
}

/// Read until the server closes (EOF or reset); `None` if it does not
/// within `limit`.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Some(got),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
}

/// Close with a reset (SO_LINGER 0) rather than a FIN.
fn reset(s: TcpStream) {
    let off = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::Linger, &off).unwrap();
    drop(s);
}

#[test]
fn every_class_byte_for_byte_with_keep_alive_pipelining_and_the_statuses() {
    let files = Files::new();
    for setup in SETUPS {
        let who = name(setup);
        let server = start(&config(setup, &files.root()));
        let addr = server.addr();

        // Keep-alive, HTTP/1.1: every class, byte for byte.
        let mut c = Client::connect(addr);
        for f in files.samples() {
            c.send(&get_request(&f.path));
            let r = c.reply(false);
            r.assert_body(f);
            assert_eq!(r.header("content-length"), Some(&*f.size.to_string()));
            assert!(r.header("last-modified").is_some(), "{who}");
            assert_eq!(r.header("connection"), None, "{who}: 1.1 keeps by default");
        }
        // HEAD: the head only (the next response on the connection would
        // be garbled by a body), then 304 and 404 keep the connection.
        let f = files.file(2, 3);
        c.send(format!("HEAD {} HTTP/1.1\r\nHost: t\r\n\r\n", f.path).as_bytes());
        let head = c.reply(true);
        assert_eq!(head.status, 200, "{who}");
        assert_eq!(head.header("content-length"), Some(&*f.size.to_string()));
        let modified = head.header("last-modified").unwrap().to_string();
        c.send(
            format!(
                "GET {} HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: {modified}\r\n\r\n",
                f.path
            )
            .as_bytes(),
        );
        assert_eq!(c.reply(false).status, 304, "{who}");
        c.send(&get_request("/dir00000/nothing"));
        assert_eq!(c.reply(false).status, 404, "{who}");
        c.send(&get_request(&f.path));
        c.reply(false).assert_body(f);

        // Pipelined: three requests in one write, answered in order; the
        // last asks to close.
        let (a, b, last) = (files.file(0, 1), files.file(3, 0), files.file(1, 8));
        c = Client::connect(addr);
        let mut all = get_request(&a.path);
        all.extend(format!("HEAD {} HTTP/1.1\r\nHost: t\r\n\r\n", b.path).bytes());
        all.extend(
            format!(
                "GET {} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                last.path
            )
            .bytes(),
        );
        c.send(&all);
        c.reply(false).assert_body(a);
        let r = c.reply(true);
        assert_eq!(r.header("content-length"), Some(&*b.size.to_string()));
        let r = c.reply(false);
        r.assert_body(last);
        assert_eq!(r.header("connection"), Some("close"), "{who}");
        c.assert_closed();

        // HTTP/1.0 closes by default, keeps the connection when asked.
        c = Client::connect(addr);
        c.send(format!("GET {} HTTP/1.0\r\n\r\n", a.path).as_bytes());
        let r = c.reply(false);
        assert!(r.status_line.starts_with("HTTP/1.0 200"), "{who}: {r:?}");
        r.assert_body(a);
        c.assert_closed();
        c = Client::connect(addr);
        for _ in 0..2 {
            c.send(format!("GET {} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", a.path).as_bytes());
            let r = c.reply(false);
            assert_eq!(r.header("connection"), Some("keep-alive"), "{who}");
            r.assert_body(a);
        }

        // Nothing outside the root, however the path is spelt.
        for path in [
            "/../secret",
            "/dir00000/../../secret",
            "/%2e%2e/secret",
            "/dir00000/%2E%2E/%2E%2E/secret",
        ] {
            let mut c = Client::connect(addr);
            c.send(&get_request(path));
            let r = c.reply(false);
            assert_eq!(r.status, 404, "{who}: {path}");
            assert!(!r.body.starts_with(b"not for you"), "{who}: {path}");
        }

        // Refused requests get their status, then the close.
        c = Client::connect(addr);
        c.send(b"\x01\x02 this is not HTTP\r\n\r\n");
        assert_eq!(c.reply(false).status, 400, "{who}");
        c.assert_closed();
        c = Client::connect(addr);
        let huge = format!(
            "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
            "a".repeat(20_000)
        );
        c.send(huge.as_bytes());
        assert_eq!(c.reply(false).status, 431, "{who}");
        c.assert_closed();

        drop(c);
        wait_all_closed(&server, Duration::from_secs(5));
        let stats = server.stats();
        let n = &stats.counters;
        assert_eq!(
            (n.requests, n.by_class),
            (24, [16, 1, 7, 0]),
            "{who}: {n:?}"
        );
        assert_eq!(
            (n.timeouts, n.io_errors, n.overloads),
            (0, 0, 0),
            "{who}: {n:?}"
        );
        assert_eq!(stats.processes, 1);
        assert_eq!(stats.pids, vec![std::process::id() as i32]);
        let (model, workers, helpers) = setup;
        match model {
            Model::Event => {
                assert_eq!(stats.threads, workers + helpers, "{who}");
                assert!(stats.stages.is_empty());
            }
            _ => {
                assert_eq!(stats.threads, 4 * workers, "{who}");
                assert_eq!(stats.stages.len(), 4);
            }
        }
        server.stop().unwrap();
    }
}

#[test]
fn a_client_sending_a_byte_a_second_delays_no_one() {
    let files = Files::new();
    let f = files.file(1, 2);
    // The three servers at once: each is checked on its own, and the test
    // takes the time of one.
    std::thread::scope(|scope| {
        for setup in SETUPS {
            let files = &files;
            scope.spawn(move || {
                let who = name(setup);
                let mut config = config(setup, &files.root());
                config.request_timeout = Duration::from_millis(1500);
                let server = start(&config);
                let mut slow = TcpStream::connect(server.addr()).unwrap();
                let connected = Instant::now();
                let request = get_request(&f.path);
                let mut sent = 0;
                // One byte a second; between them, others are served at once.
                while connected.elapsed() < Duration::from_millis(1300) {
                    if connected.elapsed() >= Duration::from_secs(sent as u64) {
                        slow.write_all(&request[sent..sent + 1]).unwrap();
                        sent += 1;
                    }
                    let took = get(server.addr(), f);
                    assert!(
                        took < Duration::from_millis(500),
                        "{who}: a GET took {took:?}"
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
                // The slow client's head never came whole: 408 and close.
                let got = read_until_closed(&mut slow, Duration::from_secs(5))
                    .unwrap_or_else(|| panic!("{who}: the slow client was never closed"));
                assert!(
                    got.starts_with(b"HTTP/1.1 408 "),
                    "{who}: {}",
                    String::from_utf8_lossy(&got)
                );
                let waited = connected.elapsed();
                assert!(
                    waited >= Duration::from_millis(1400) && waited < Duration::from_secs(3),
                    "{who}: closed after {waited:?}"
                );
                wait_all_closed(&server, Duration::from_secs(5));
                assert_eq!(server.stats().counters.timeouts, 1, "{who}");
                server.stop().unwrap();
            });
        }
    });
}

#[test]
fn half_closed_and_reset_connections_are_survived() {
    let files = Files::new();
    for setup in SETUPS {
        let who = name(setup);
        let server = start(&config(setup, &files.root()));
        let addr = server.addr();

        // A whole request, then the client's FIN: answered, then closed.
        let f = files.file(2, 8);
        let mut c = Client::connect(addr);
        c.send(&get_request(&f.path));
        c.reader.get_ref().shutdown(Shutdown::Write).unwrap();
        c.reply(false).assert_body(f);
        c.assert_closed();

        // Half a request, then FIN: closed without an answer.
        c = Client::connect(addr);
        c.send(b"GET /dir000");
        c.reader.get_ref().shutdown(Shutdown::Write).unwrap();
        c.assert_closed();

        // Reset before asking, and reset while big bodies are being sent.
        reset(TcpStream::connect(addr).unwrap());
        let big = files.file(3, 8);
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&get_request(&big.path).repeat(8)).unwrap();
        let mut some = [0u8; 1000];
        s.read_exact(&mut some).unwrap();
        reset(s);

        // Everyone else is still served, and nothing is held.
        get(addr, f);
        wait_all_closed(&server, Duration::from_secs(5));
        wait_for(
            &format!("{who}: the reset counted"),
            Duration::from_secs(5),
            || server.stats().counters.io_errors >= 1,
        );
        server.stop().unwrap();
    }
}

#[test]
fn a_garbage_flood_is_refused_while_others_are_served() {
    let files = Files::new();
    let f = files.file(0, 4);
    for setup in SETUPS {
        let who = name(setup);
        let server = start(&config(setup, &files.root()));
        let addr = server.addr();
        let stop_at = Instant::now() + Duration::from_millis(600);
        std::thread::scope(|scope| {
            for t in 0..3u64 {
                scope.spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t;
                    let mut rounds = 0;
                    while Instant::now() < stop_at {
                        rounds += 1;
                        let garbage: Vec<u8> = match rounds % 3 {
                            // Random bytes.
                            0 => (0..32 * 1024)
                                .map(|_| {
                                    x ^= x << 13;
                                    x ^= x >> 7;
                                    x ^= x << 17;
                                    x as u8
                                })
                                .collect(),
                            // A request line that never ends.
                            1 => [b"GET /".as_slice(), &[b'a'; 40_000]].concat(),
                            // Headers without end.
                            _ => [b"GET / HTTP/1.1\r\n".as_slice(), &b"X: y\r\n".repeat(5000)]
                                .concat(),
                        };
                        let Ok(mut s) = TcpStream::connect(addr) else {
                            continue;
                        };
                        // The server may answer and close before it all
                        // left: a failed write is part of the game.
                        let _ = s.write_all(&garbage);
                        let _ = s.shutdown(Shutdown::Write);
                        let got = read_until_closed(&mut s, PATIENCE)
                            .unwrap_or_else(|| panic!("a garbage connection never closed"));
                        if !got.is_empty() {
                            let text = String::from_utf8_lossy(&got);
                            assert!(
                                ["HTTP/1.1 400 ", "HTTP/1.1 414 ", "HTTP/1.1 431 "]
                                    .iter()
                                    .any(|s| text.starts_with(s)),
                                "{text}"
                            );
                        }
                    }
                });
            }
            while Instant::now() < stop_at {
                let took = get(addr, f);
                assert!(took < Duration::from_secs(1), "{who}: a GET took {took:?}");
            }
        });
        wait_all_closed(&server, Duration::from_secs(5));
        let n = server.stats().counters;
        assert!(n.by_class[2] >= 3, "{who}: {n:?}");
        assert!(n.by_class[0] >= 1, "{who}: {n:?}");
        server.stop().unwrap();
    }
}

/// Raise the soft limit on descriptors to the hard one; the soft limit
/// after.
fn raise_fd_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

#[test]
fn two_thousand_idle_connections_neither_stop_others_nor_stay() {
    const IDLE: usize = 2000;
    // The client's end and the server's of each, and room for the rest
    // (other tests of this binary run at the same time).
    let need = (2 * IDLE + 1000) as u64;
    let limit = raise_fd_limit();
    if limit < need {
        // Straight to stderr: the harness captures `eprintln!`, and CI counts
        // the `skipped:` lines.
        let _ = io::stderr().write_all(
            format!(
                "skipped: {IDLE} idle connections need {need} descriptors; the limit is {limit}\n"
            )
            .as_bytes(),
        );
        return;
    }
    let files = Files::new();
    let f = files.file(1, 0);
    for setup in SETUPS {
        let who = name(setup);
        let mut config = config(setup, &files.root());
        config.request_timeout = Duration::from_millis(600);
        let server = start(&config);
        let addr = server.addr();
        let mut idle = Vec::with_capacity(IDLE);
        for _ in 0..IDLE {
            idle.push(TcpStream::connect(addr).unwrap());
        }
        let opened = Instant::now();
        let took = get(addr, f);
        assert!(
            took < Duration::from_millis(500),
            "{who}: a GET took {took:?}"
        );
        // Every idle one is answered 408 (or refused 503 by a full queue)
        // and closed once the timeout has passed.
        let mut answered = 0;
        for s in &mut idle {
            let got = read_until_closed(s, Duration::from_secs(5))
                .unwrap_or_else(|| panic!("{who}: an idle connection was never closed"));
            if got.starts_with(b"HTTP/1.1 408 ") || got.starts_with(b"HTTP/1.1 503 ") {
                answered += 1;
            }
        }
        let all_closed = opened.elapsed();
        assert!(all_closed < Duration::from_secs(4), "{who}: {all_closed:?}");
        assert!(
            answered >= IDLE * 9 / 10,
            "{who}: {answered} of {IDLE} answered"
        );
        drop(idle);
        // The server frees what it held.
        wait_all_closed(&server, Duration::from_secs(5));
        let n = server.stats().counters;
        assert!(n.timeouts + n.overloads >= IDLE as u64, "{who}: {n:?}");
        assert!(n.connections > IDLE as u64, "{who}: {n:?}");
        server.stop().unwrap();
    }
}

#[test]
fn past_max_connections_a_new_connection_gets_503() {
    let files = Files::new();
    let f = files.file(0, 0);
    for setup in SETUPS {
        let who = name(setup);
        let mut config = config(setup, &files.root());
        config.max_connections = 3;
        let server = start(&config);
        let addr = server.addr();
        let mut held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        wait_for("three connections open", Duration::from_secs(5), || {
            server.stats().counters.open_connections == 3
        });
        let mut extra = TcpStream::connect(addr).unwrap();
        let got = read_until_closed(&mut extra, PATIENCE).unwrap();
        assert!(
            got.starts_with(b"HTTP/1.1 503 "),
            "{who}: {}",
            String::from_utf8_lossy(&got)
        );
        assert_eq!(server.stats().counters.overloads, 1, "{who}");
        // One of the three leaves: there is room again.
        held.pop();
        wait_for("two connections open", Duration::from_secs(5), || {
            server.stats().counters.open_connections == 2
        });
        get(addr, f);
        drop(held);
        server.stop().unwrap();
    }
}

#[test]
fn stop_is_prompt_and_closes_every_connection() {
    let files = Files::new();
    for setup in SETUPS {
        let who = name(setup);
        let server = start(&config(setup, &files.root()));
        let addr = server.addr();
        let mut clients: Vec<TcpStream> =
            (0..5).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // One mid-request, one whose big responses it does not read.
        let mut half = TcpStream::connect(addr).unwrap();
        half.write_all(b"GET /dir00000/cla").unwrap();
        clients.push(half);
        let mut full = TcpStream::connect(addr).unwrap();
        let big = files.file(3, 8);
        full.write_all(&get_request(&big.path).repeat(4)).unwrap();
        clients.push(full);
        wait_for("seven connections open", Duration::from_secs(5), || {
            server.stats().counters.open_connections == 7
        });
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        server.stop().unwrap();
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{who}: stop took {:?}",
            t.elapsed()
        );
        assert!(
            TcpStream::connect(addr).is_err(),
            "{who}: the listener is closed"
        );
        for s in &mut clients {
            assert!(
                read_until_closed(s, Duration::from_secs(5)).is_some(),
                "{who}: a connection stayed open"
            );
        }
    }
}

/// A slow disk on one path: the thread that opens `path` waits in the
/// server's `before_open` hook until [`Gate::release`] (or the drop).
struct Gate {
    path: &'static str,
    /// (released, openers that reached the gate)
    state: Arc<(Mutex<(bool, usize)>, Condvar)>,
    released: bool,
}

impl Gate {
    fn new(path: &'static str) -> Gate {
        Gate {
            path,
            state: Arc::new((Mutex::new((false, 0)), Condvar::new())),
            released: false,
        }
    }

    /// The hook for `ServerConfig::before_open`.
    fn hook(&self) -> BeforeOpen {
        let (path, state) = (self.path, self.state.clone());
        BeforeOpen(Arc::new(move |p: &str| {
            if p != path {
                return;
            }
            let (lock, cv) = &*state;
            let mut s = lock.lock().unwrap();
            s.1 += 1;
            cv.notify_all();
            while !s.0 {
                s = cv.wait(s).unwrap();
            }
        }))
    }

    /// Let the opener through, once one has reached the gate (5 s at
    /// most); `released` says whether one had.
    fn release(&mut self) {
        let (lock, cv) = &*self.state;
        let s = lock.lock().unwrap();
        let (mut s, _) = cv
            .wait_timeout_while(s, Duration::from_secs(5), |s| s.1 == 0)
            .unwrap();
        self.released = s.1 > 0;
        s.0 = true;
        cv.notify_all();
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // A failing test must not leave a server thread at the gate: its
        // stop would wait for it.
        let (lock, cv) = &*self.state;
        lock.lock().unwrap_or_else(|p| p.into_inner()).0 = true;
        cv.notify_all();
    }
}

#[test]
fn event_helpers_keep_the_loop_serving_while_a_file_blocks() {
    let files = Files::new();
    let f = files.file(1, 5);
    let mut gate = Gate::new("/blocks");
    let mut config = config((Model::Event, 1, 2), &files.root());
    config.request_timeout = Duration::from_secs(10);
    config.before_open = Some(gate.hook());
    let server = start(&config);
    let addr = server.addr();
    // One helper is stuck opening the file ...
    let mut stuck = Client::connect(addr);
    stuck.send(&get_request("/blocks"));
    std::thread::sleep(Duration::from_millis(200));
    // ... and the one loop still serves everyone else at once.
    for _ in 0..5 {
        let took = get(addr, f);
        assert!(took < Duration::from_millis(500), "a GET took {took:?}");
    }
    gate.release();
    assert!(gate.released, "the helper never came to open the file");
    // There is no such file: 404.
    assert_eq!(stuck.reply(false).status, 404);
    drop(stuck);
    wait_all_closed(&server, Duration::from_secs(5));
    server.stop().unwrap();
}

#[test]
fn staged_reports_its_stages_and_a_full_queue_answers_503() {
    let files = Files::new();
    let f = files.file(0, 2);
    let mut gate = Gate::new("/blocks");
    let mut config = config((Model::Staged, 1, 0), &files.root());
    config.queue_capacity = 2;
    config.request_timeout = Duration::from_secs(10);
    config.before_open = Some(gate.hook());
    let server = start(&config);
    let addr = server.addr();

    // Load first: every stage has seen items.
    let mut c = Client::connect(addr);
    for _ in 0..20 {
        c.send(&get_request(&f.path));
        c.reply(false).assert_body(f);
    }
    drop(c);
    let stats = server.stats();
    let names: Vec<&str> = stats.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["accept", "read", "file", "send"]);
    for s in &stats.stages {
        assert_eq!(s.threads, 1, "{s:?}");
        assert!(s.items >= 1 && s.busy_us_mean > 0.0, "{s:?}");
        assert_eq!(s.refused, 0, "{s:?}");
    }
    assert!(stats.stages[2].items >= 20, "{:?}", stats.stages[2]);

    // The one file thread stuck opening a file; the file queue (2 places)
    // fills behind it, and the third request finds it full.
    let mut stuck = Client::connect(addr);
    stuck.send(&get_request("/blocks"));
    let items = stats.stages[2].items;
    wait_for(
        "the file thread took the slow file",
        Duration::from_secs(5),
        || server.stats().stages[2].items > items,
    );
    let mut queued: Vec<Client> = Vec::new();
    for _ in 0..3 {
        let mut c = Client::connect(addr);
        c.send(&get_request(&f.path));
        queued.push(c);
        std::thread::sleep(Duration::from_millis(100));
    }
    let refused = queued.pop().unwrap().reply(false);
    assert_eq!(refused.status, 503, "{refused:?}");
    gate.release();
    assert!(gate.released, "the file thread never came to open the file");
    // There is no such file: 404.
    assert_eq!(stuck.reply(false).status, 404);
    // The two that waited in the file queue are served — the second only
    // if the send queue (2 places too) had room when the file thread,
    // released, pushed three responses at once; else it is refused there.
    queued[0].reply(false).assert_body(f);
    let last = queued[1].reply(false);
    if last.status != 503 {
        last.assert_body(f);
    }
    drop((stuck, queued));
    // Every hand-off done: the counts are final.
    wait_all_closed(&server, Duration::from_secs(5));
    let stats = server.stats();
    let file = &stats.stages[2];
    assert_eq!(file.refused, 1, "{file:?}");
    assert!(file.queue_max >= 1 && file.queue_mean > 0.0, "{file:?}");
    // Every refusal, in whichever queue, is an overload.
    let refusals: u64 = stats.stages.iter().map(|s| s.refused).sum();
    assert_eq!(stats.counters.overloads, refusals, "{stats:?}");
    server.stop().unwrap();
}
