//! `smtlab serve web`: the web server's architectures end to end, through
//! the binary, on 127.0.0.1 port 0. Each test loops over [`MODELS`], so an
//! architecture joins every test by adding its name there.
//!
//! What is checked: every class of file byte for byte (the file set's
//! content function), HEAD, HTTP/1.0 and 1.1, keep-alive, pipelining,
//! `Connection: close`, 304, the error statuses, nothing outside the root;
//! hostile clients (one byte a second, half-closed, reset) while others are
//! served; a clean stop on SIGTERM and SIGINT (the `stats:` line, no worker
//! left, the generated root removed); bad input as one line and exit 2.
//! The hostile-request corpus (smtlab-web's `tests/support/web_corpus.rs`)
//! against every model; a FIFO in the root never holding a worker, and a
//! stop within a second with requests in flight; a page with a stylesheet,
//! a script and an image rendered by headless Chromium, then loaded again
//! from its cache after the server's 304s; the edit of a stylesheet dated
//! in the future seen by Chromium at its next load.

mod support;

#[path = "../../smtlab-report/tests/support/chromium.rs"]
mod chromium;
#[path = "../../smtlab-web/tests/support/web_corpus.rs"]
mod web_corpus;

use support::assert_success;
use support::serve::Served;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::Value;
use smtlab_web::fileset::{BodyCheck, FileSet, FileSpec};

/// The architectures under test.
const MODELS: [&str; 4] = ["process", "thread", "event", "staged"];
/// `--request-timeout` of the hostile-client tests: the slow client sends
/// a byte a second, so its 408 arrives half-way between two of its bytes.
const TIMEOUT: &str = "1500ms";

/// A running `smtlab serve web`, killed and reaped when dropped.
struct Serve {
    served: Served,
    addr: SocketAddr,
    /// The root from the first line.
    root: PathBuf,
}

impl Serve {
    /// Start `model` with `threads` workers and the flags in `extra`; wait
    /// for the first line.
    fn start(model: &str, threads: usize, extra: &[&str]) -> Serve {
        let threads = threads.to_string();
        let mut args = vec!["web", "--model", model, "--threads", &threads];
        args.extend(["--listen", "127.0.0.1:0"]);
        args.extend(extra);
        let served = Served::start(&args);
        let first = &served.first;
        // listening on http://IP:PORT/ model=M workers=N root=DIR
        let words: Vec<&str> = first.split(' ').collect();
        assert_eq!(&words[..2], ["listening", "on"], "{first}");
        assert_eq!(words[3], format!("model={model}"), "{first}");
        assert_eq!(words[4], format!("workers={threads}"), "{first}");
        let addr: SocketAddr = words[2]
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix('/'))
            .unwrap()
            .parse()
            .unwrap();
        assert_ne!(addr.port(), 0);
        let root = PathBuf::from(words[5].strip_prefix("root=").unwrap());
        Serve { served, addr, root }
    }

    fn pid(&self) -> i32 {
        self.served.pid()
    }

    /// Send `sig`, wait for the exit (10 s at most), return the status and
    /// the remaining stdout lines.
    fn stop(self, sig: Signal) -> (ExitStatus, Vec<String>) {
        self.served.stop(sig)
    }
}

/// One response as read off a connection.
#[derive(Debug)]
struct Resp {
    /// `HTTP/1.1 200 OK`.
    status_line: String,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn check_body(&self, file: &FileSpec) {
        assert_eq!(self.status, 200, "{}: {}", file.path, self.status_line);
        let mut check = BodyCheck::new(&file.path, file.size);
        check.feed(&self.body);
        check
            .finish()
            .unwrap_or_else(|e| panic!("{}: {e}", file.path));
    }
}

/// A client connection: requests written, responses read in order.
struct Conn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Conn {
            writer: s.try_clone().unwrap(),
            reader: BufReader::new(s),
        }
    }

    fn send(&mut self, raw: &str) {
        self.writer.write_all(raw.as_bytes()).unwrap();
    }

    /// Read one response; `head` when it answers a HEAD (no body follows).
    fn read(&mut self, head: bool) -> Resp {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status_line = line.trim_end().to_string();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("not a status line: {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.trim().to_string(), v.trim().to_string()));
        }
        let mut r = Resp {
            status_line,
            status,
            headers,
            body: Vec::new(),
        };
        if !head && status != 304 {
            let len: usize = r.header("Content-Length").unwrap().parse().unwrap();
            r.body = vec![0; len];
            self.reader.read_exact(&mut r.body).unwrap();
        }
        r
    }

    /// Whether the server closed the connection (EOF within 5 s).
    fn closed(&mut self) -> bool {
        self.reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut b = [0u8; 1];
        matches!(self.reader.read(&mut b), Ok(0))
    }
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n")
}

/// One request on a new connection, one response.
fn once(addr: SocketAddr, raw: &str) -> (Resp, Conn) {
    let mut c = Conn::open(addr);
    c.send(raw);
    let head = raw.starts_with("HEAD ");
    (c.read(head), c)
}

/// One file of each class of the one-directory set.
fn one_of_each_class() -> Vec<FileSpec> {
    let set = FileSet::with_dirs(1).unwrap();
    (0..4)
        .map(|c| {
            set.files
                .iter()
                .filter(|f| f.class == c)
                .nth(4)
                .unwrap()
                .clone()
        })
        .collect()
}

/// A root for `serve --root DIR --files 5MB`, inside `dir`.
fn root_in(dir: &Path) -> String {
    dir.join("root").to_str().unwrap().to_string()
}

#[test]
fn every_class_byte_for_byte_with_keep_alive_pipelining_head_and_304() {
    let files = one_of_each_class();
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let root = root_in(dir.path());
        let s = Serve::start(model, 2, &["--root", &root, "--files", "5MB"]);

        // HTTP/1.1 keep-alive: every class, then HEAD, a 404, a 304, all on
        // one connection.
        let mut c = Conn::open(s.addr);
        for f in &files {
            c.send(&get(&f.path));
            let r = c.read(false);
            r.check_body(f);
            assert!(r.status_line.starts_with("HTTP/1.1 200 OK"), "{model}");
            assert!(r.header("Connection").is_none(), "{model}: {:?}", r.headers);
        }
        let big = &files[3];
        c.send(&format!("HEAD {} HTTP/1.1\r\nHost: t\r\n\r\n", big.path));
        let r = c.read(true);
        assert_eq!(r.status, 200, "{model}");
        assert_eq!(
            r.header("Content-Length"),
            Some(big.size.to_string().as_str())
        );
        c.send(&get("/dir00000/nothing"));
        assert_eq!(
            c.read(false).status,
            404,
            "{model}: a 404 keeps the connection"
        );
        let last_modified = r.header("Last-Modified").unwrap().to_string();
        c.send(&format!(
            "GET {} HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: {last_modified}\r\n\r\n",
            big.path
        ));
        let r = c.read(false);
        assert_eq!(r.status, 304, "{model}: {}", r.status_line);
        assert!(r.body.is_empty());
        c.send(&format!(
            "GET {} HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n\r\n",
            files[0].path
        ));
        c.read(false).check_body(&files[0]);

        // Pipelined: three requests in one write, answered in order.
        let order = [&files[2], &files[0], &files[1]];
        let batch: String = order.iter().map(|f| get(&f.path)).collect();
        let mut p = Conn::open(s.addr);
        p.send(&batch);
        for f in order {
            p.read(false).check_body(f);
        }
        // A blocking worker stays with its connection until the client
        // closes it (or it idles past the timeout): free both workers.
        drop((c, p));

        // HTTP/1.0 closes after the response unless asked to keep alive.
        let (r, mut c10) = once(s.addr, &format!("GET {} HTTP/1.0\r\n\r\n", files[1].path));
        r.check_body(&files[1]);
        assert!(
            r.status_line.starts_with("HTTP/1.0 200 OK"),
            "{}",
            r.status_line
        );
        assert!(c10.closed(), "{model}: HTTP/1.0 closes");
        let mut k10 = Conn::open(s.addr);
        for f in &files[..2] {
            k10.send(&format!(
                "GET {} HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                f.path
            ));
            let r = k10.read(false);
            r.check_body(f);
            assert_eq!(r.header("Connection"), Some("keep-alive"));
        }
        drop(k10);

        // Connection: close is honoured.
        let (r, mut cc) = once(
            s.addr,
            &format!(
                "GET {} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                files[0].path
            ),
        );
        r.check_body(&files[0]);
        assert_eq!(r.header("Connection"), Some("close"));
        assert!(cc.closed(), "{model}: Connection: close");
    }
}

#[test]
fn bad_requests_get_their_status_and_nothing_outside_the_root_is_served() {
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "TOP SECRET\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join("outdir")).unwrap();
        let s = Serve::start(
            model,
            2,
            &["--root", root.to_str().unwrap(), "--files", "5MB"],
        );

        let statuses = [
            (
                "POST /dir00000/class0_0 HTTP/1.1\r\nHost: t\r\n\r\n".to_string(),
                405,
            ),
            ("garbage\r\n\r\n".to_string(), 400),
            ("GET / HTTP/1.1\r\n\r\n".to_string(), 400),
            (
                format!(
                    "GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
                    "a".repeat(20_000)
                ),
                431,
            ),
            (
                format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(5000)),
                414,
            ),
            (
                "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n".to_string(),
                413,
            ),
        ];
        for (raw, want) in &statuses {
            let (r, mut c) = once(s.addr, raw);
            assert_eq!(r.status, *want, "{model}: {}", &raw[..raw.len().min(40)]);
            assert!(c.closed(), "{model}: {want} closes the connection");
            if *want == 405 {
                assert_eq!(r.header("Allow"), Some("GET, HEAD"));
            }
        }
        for path in [
            "/../secret",
            "/%2e%2e/secret",
            "/dir00000/../../secret",
            "/out",
            "/outdir/secret",
        ] {
            let (r, _) = once(s.addr, &get(path));
            assert_eq!(r.status, 404, "{model}: {path}");
            assert!(!String::from_utf8_lossy(&r.body).contains("SECRET"));
        }
        // Still serving.
        let f = &one_of_each_class()[0];
        once(s.addr, &get(&f.path)).0.check_body(f);
    }
}

/// A client that sends `request` one byte a second until the server
/// answers; returns the answer and how long it took.
fn one_byte_a_second(addr: SocketAddr, request: &'static str) -> (String, Duration) {
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut got = Vec::new();
    for b in request.bytes().take(10) {
        if s.write_all(&[b]).is_err() {
            break;
        }
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(n) if n > 0 => {
                got.extend_from_slice(&buf[..n]);
                break;
            }
            Ok(_) => break,
            Err(_) => {} // a second passed without an answer
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), t.elapsed())
}

#[test]
fn hostile_clients_do_not_stop_the_server_serving_others() {
    let files = one_of_each_class();
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let root = root_in(dir.path());
        let s = Serve::start(
            model,
            2,
            &[
                "--root",
                &root,
                "--files",
                "5MB",
                "--request-timeout",
                TIMEOUT,
            ],
        );
        let addr = s.addr;
        let slow = std::thread::spawn(move || {
            one_byte_a_second(addr, "GET /dir00000/class0_0 HTTP/1.1\r\nHost: t\r\n\r\n")
        });
        std::thread::sleep(Duration::from_millis(100));

        // Half-closed after a whole request: still answered.
        let mut half = TcpStream::connect(addr).unwrap();
        half.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        half.write_all(get(&files[1].path).as_bytes()).unwrap();
        half.shutdown(Shutdown::Write).unwrap();
        let mut all = Vec::new();
        half.read_to_end(&mut all).unwrap();
        let at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert!(all.starts_with(b"HTTP/1.1 200 OK"), "{model}");
        let mut check = BodyCheck::new(&files[1].path, files[1].size);
        check.feed(&all[at..]);
        check.finish().unwrap();

        // Reset: the largest file asked for many times, then closed unread.
        {
            let mut reset = TcpStream::connect(addr).unwrap();
            reset
                .write_all(get(&files[3].path).repeat(20).as_bytes())
                .unwrap();
        }
        // Garbage, and a client that connects and leaves at once.
        let _ = once(addr, "\x16\x03\x01garbage\r\n\r\n");
        drop(TcpStream::connect(addr).unwrap());

        // Everyone else is served promptly while the slow client holds a
        // worker: well within the 1.5 s it may hold it.
        for f in files.iter().cycle().take(12) {
            let t = Instant::now();
            once(addr, &get(&f.path)).0.check_body(f);
            assert!(
                t.elapsed() < Duration::from_millis(900),
                "{model}: {} took {:?} beside a slow client",
                f.path,
                t.elapsed()
            );
        }
        let (answer, took) = slow.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 408 "), "{model}: {answer:?}");
        assert!(
            took >= Duration::from_millis(1400) && took < Duration::from_secs(4),
            "{model}: 408 after {took:?}"
        );
        let (status, lines) = s.stop(Signal::SIGTERM);
        assert_eq!(status.code(), Some(0), "{model}");
        let stats = stats_of(&lines);
        assert!(
            stats["counters"]["timeouts"].as_u64().unwrap() >= 1,
            "{stats}"
        );
        assert_eq!(stats["counters"]["open_connections"], 0, "{model}: {stats}");
    }
}

#[test]
fn with_one_blocking_worker_a_slow_client_delays_others_by_the_timeout_at_most() {
    // As in Apache prefork with one process: the slow client holds the only
    // worker until its request timeout, then the next client is served.
    let f = &one_of_each_class()[1];
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let root = root_in(dir.path());
        let s = Serve::start(
            model,
            1,
            &[
                "--root",
                &root,
                "--files",
                "5MB",
                "--request-timeout",
                TIMEOUT,
            ],
        );
        let addr = s.addr;
        let slow = std::thread::spawn(move || one_byte_a_second(addr, "GET / HTTP/1.1\r\n\r\n"));
        std::thread::sleep(Duration::from_millis(200));
        let t = Instant::now();
        once(addr, &get(&f.path)).0.check_body(f);
        assert!(
            t.elapsed() < Duration::from_millis(2500),
            "{model}: {:?}",
            t.elapsed()
        );
        assert!(
            slow.join().unwrap().0.starts_with("HTTP/1.1 408 "),
            "{model}"
        );
    }
}

/// The `stats:` line among `lines` (it must be the last), parsed.
fn stats_of(lines: &[String]) -> Value {
    assert_eq!(lines.len(), 1, "one line after the first: {lines:?}");
    let json = lines[0].strip_prefix("stats: ").expect("a stats: line");
    serde_json::from_str(json).unwrap()
}

/// CPUs this process may run on, from /proc/self/status.
fn cpus_allowed(pid: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

/// Children of `pid`, from /proc/*/stat.
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so after the ')'.
        let Some(after) = stat.rsplit_once(')').map(|(_, a)| a) else {
            continue;
        };
        let ppid: i32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
        if ppid == pid {
            out.push(e.file_name().to_str().unwrap().parse().unwrap());
        }
    }
    out.sort();
    out
}

#[test]
fn sigterm_and_sigint_stop_cleanly_with_stats_and_no_worker_left() {
    let allowed = cpus_allowed("self");
    let two_cpus = allowed == "0-1" || allowed.starts_with("0-") || allowed.starts_with("0,1");
    if !two_cpus {
        support::skip(&format!(
            "the pinning checks need CPUs 0 and 1; allowed: {allowed}"
        ));
    }
    let files = one_of_each_class();
    for model in MODELS {
        for sig in [Signal::SIGTERM, Signal::SIGINT] {
            // No --root: a generated root in a temporary directory.
            let mut extra = vec!["--files", "5MB"];
            if two_cpus {
                extra.extend(["--cpus", "0-1"]);
            }
            let s = Serve::start(model, 2, &extra);
            assert!(s.root.join("dir00000/class3_8").is_file());
            // 3 requests on one keep-alive connection, 2 on their own.
            let mut c = Conn::open(s.addr);
            for f in &files[..3] {
                c.send(&get(&f.path));
                c.read(false).check_body(f);
            }
            drop(c);
            for f in &files[2..] {
                once(s.addr, &format!("GET {} HTTP/1.0\r\n\r\n", f.path))
                    .0
                    .check_body(f);
            }
            let pid = s.pid();
            let children = children_of(pid);
            if model == "process" {
                assert_eq!(children.len(), 2, "{model}: workers {children:?}");
                if two_cpus {
                    // Forked in order: worker k on CPU k.
                    for (k, w) in children.iter().enumerate() {
                        assert_eq!(cpus_allowed(&w.to_string()), k.to_string(), "worker {k}");
                    }
                }
            } else {
                assert!(children.is_empty(), "{model}: {children:?}");
                if two_cpus {
                    // Worker thread k of each kind is on CPU k: one kind per
                    // model, four (one per stage) for `staged`.
                    let kinds: &[&str] = match model {
                        "thread" => &["thread"],
                        "event" => &["event"],
                        _ => &["accept", "read", "file", "send"],
                    };
                    for kind in kinds {
                        for k in 0..2 {
                            let name = format!("web-{kind}-{k}");
                            let task = std::fs::read_dir(format!("/proc/{pid}/task"))
                                .unwrap()
                                .flatten()
                                .find(|t| {
                                    std::fs::read_to_string(t.path().join("comm"))
                                        .is_ok_and(|c| c.trim() == name)
                                })
                                .unwrap_or_else(|| panic!("{model}: no thread {name}"));
                            let tid = task.file_name().to_str().unwrap().to_string();
                            assert_eq!(
                                cpus_allowed(&format!("{pid}/task/{tid}")),
                                k.to_string(),
                                "{model}: {name}"
                            );
                        }
                    }
                }
            }
            let root = s.root.clone();
            let (status, lines) = s.stop(sig);
            assert_eq!(status.code(), Some(0), "{model} {sig}");
            let stats = stats_of(&lines);
            assert_eq!(stats["counters"]["requests"], 5, "{model} {sig}: {stats}");
            assert_eq!(
                stats["counters"]["by_class"][0], 5,
                "{model} {sig}: {stats}"
            );
            assert_eq!(
                stats["counters"]["connections"], 3,
                "{model} {sig}: {stats}"
            );
            let pids: Vec<i32> = stats["pids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_i64().unwrap() as i32)
                .collect();
            if model == "process" {
                assert_eq!(pids, children, "{model}: the workers' pids");
                assert_eq!(stats["processes"], 3);
            } else {
                assert_eq!(pids, vec![pid]);
            }
            for p in pids.iter().chain(&children) {
                assert!(
                    !Path::new(&format!("/proc/{p}")).exists(),
                    "{model}: {p} left"
                );
            }
            assert!(!root.exists(), "{model}: the generated root was removed");
        }
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let base = |model: &'static str, threads: &'static str, listen: &str| -> Vec<String> {
        [
            "serve",
            "web",
            "--model",
            model,
            "--threads",
            threads,
            "--listen",
            listen,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let cases: Vec<(Vec<String>, &[&str], &str)> = vec![
        (base("apache", "1", "127.0.0.1:0"), &[], "--model"),
        (base("thread", "0", "127.0.0.1:0"), &[], "--threads"),
        (base("thread", "70000", "127.0.0.1:0"), &[], "--threads"),
        (base("thread", "x", "127.0.0.1:0"), &[], "--threads"),
        (base("thread", "1", "nope"), &[], "--listen"),
        (base("thread", "1", "127.0.0.1:99999"), &[], "--listen"),
        (base("thread", "1", &taken), &[], "--listen"),
        (
            base("process", "1", "127.0.0.1:0"),
            &["--root", "/nonexistent/smtlab"],
            "--root",
        ),
        (
            base("thread", "1", "127.0.0.1:0"),
            &["--files", "5XB"],
            "--files",
        ),
        (
            base("thread", "1", "127.0.0.1:0"),
            &["--files", "0MB"],
            "--files",
        ),
        (
            base("thread", "1", "127.0.0.1:0"),
            &["--param", "helpers=2"],
            "--param",
        ),
        (
            base("event", "1", "127.0.0.1:0"),
            &["--param", "nope=1"],
            "--param",
        ),
        (
            base("thread", "1", "127.0.0.1:0"),
            &["--cpus", "60000"],
            "--cpus",
        ),
        (
            base("thread", "1", "127.0.0.1:0"),
            &["--cpus", "a"],
            "--cpus",
        ),
        (
            base("thread", "1", "127.0.0.1:0"),
            &["--request-timeout", "0s"],
            "--request-timeout",
        ),
        (
            vec!["serve".into(), "web".into(), "--threads".into(), "1".into()],
            &[],
            "--model",
        ),
    ];
    for (mut args, extra, needle) in cases {
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        support::assert_usage_error(&args, needle);
    }
}

#[test]
fn curl_fetches_every_class_byte_for_byte() {
    if Command::new("curl").arg("--version").output().is_err() {
        support::skip("curl is not installed");
        return;
    }
    let files = one_of_each_class();
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let root = root_in(dir.path());
        let s = Serve::start(model, 1, &["--root", &root, "--files", "5MB"]);
        for f in &files {
            let out = Command::new("curl")
                .args(["-sS", "--max-time", "10", "-o", "-"])
                .arg(format!("http://{}{}", s.addr, f.path))
                .output()
                .unwrap();
            assert_success(&out, model);
            let mut check = BodyCheck::new(&f.path, f.size);
            check.feed(&out.stdout);
            check
                .finish()
                .unwrap_or_else(|e| panic!("{model} {}: {e}", f.path));
        }
        let out = Command::new("curl")
            .args(["-sSI", "--max-time", "10"])
            .arg(format!("http://{}{}", s.addr, files[2].path))
            .output()
            .unwrap();
        let head = String::from_utf8_lossy(&out.stdout);
        assert!(head.starts_with("HTTP/1.1 200 OK"), "{model}: {head}");
        assert!(
            head.contains(&format!("Content-Length: {}", files[2].size)),
            "{head}"
        );
    }
}

#[test]
fn wrk_drives_every_model_without_errors() {
    if Command::new("wrk").arg("--version").output().is_err() {
        support::skip("wrk is not installed (scripts/setup.sh installs it)");
        return;
    }
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let root = root_in(dir.path());
        let s = Serve::start(model, 1, &["--root", &root, "--files", "5MB"]);
        // Keep-alive on one connection (a blocking worker holds a kept-alive
        // connection as long as it is used, as Apache's does), then four
        // connections, a new one per request.
        for extra in [&["-c1"][..], &["-c4", "-H", "Connection: close"][..]] {
            let out = Command::new("wrk")
                .args(["-t1", "-d1s"])
                .args(extra)
                .arg(format!("http://{}/dir00000/class1_0", s.addr))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{model}: {text}");
            assert!(
                !text.contains("Socket errors") && !text.contains("Non-2xx"),
                "{model} {extra:?}: {text}"
            );
            let rate: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("Requests/sec:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("{model}: {text}"));
            assert!(rate > 50.0, "{model} {extra:?}: {rate} requests/s");
        }
    }
}

/// Open `fifo` for writing if a reader waits, so that a worker stuck in
/// `open` returns (a failing test must still be able to stop its server).
fn unblock(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(fifo);
}

#[test]
fn the_hostile_request_corpus_gets_its_statuses_from_every_model() {
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let (root, _socket) = web_corpus::make_root(dir.path());
        let s = Serve::start(model, 2, &["--root", root.to_str().unwrap()]);
        let result = web_corpus::run_all(s.addr, model);
        unblock(&root.join("fifo"));
        result.unwrap_or_else(|failed| panic!("\n{failed}"));
        let (status, _) = s.stop(Signal::SIGTERM);
        assert_eq!(status.code(), Some(0), "{model}");
    }
}

#[test]
fn a_fifo_in_the_root_never_holds_the_one_worker_and_sigterm_stops_within_a_second() {
    for model in MODELS {
        let dir = tempfile::tempdir().unwrap();
        let (root, _socket) = web_corpus::make_root(dir.path());
        std::fs::File::create(root.join("big"))
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        // A long request timeout: nothing below ends by timing out.
        let s = Serve::start(
            model,
            1,
            &["--root", root.to_str().unwrap(), "--request-timeout", "30s"],
        );
        let t = Instant::now();
        let mut fifo = TcpStream::connect(s.addr).unwrap();
        fifo.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        fifo.write_all(b"GET /fifo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut answer = Vec::new();
        let read = fifo.read_to_end(&mut answer);
        unblock(&root.join("fifo"));
        read.unwrap_or_else(|e| panic!("{model}: no answer for the FIFO: {e}"));
        assert!(
            answer.starts_with(b"HTTP/1.1 404 "),
            "{model}: {}",
            String::from_utf8_lossy(&answer)
        );
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{model}: {:?}",
            t.elapsed()
        );
        // The one worker is free for the next client.
        let (r, _) = once(s.addr, &get("/a.txt"));
        assert_eq!(r.body, web_corpus::A_TXT, "{model}");
        // In flight at the stop: a body to a client that reads none of it
        // (it holds a blocking model's one worker in a write) and a request
        // half sent.
        let mut stalled = TcpStream::connect(s.addr).unwrap();
        stalled
            .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut half = TcpStream::connect(s.addr).unwrap();
        half.write_all(b"GET /a.txt HT").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let t = Instant::now();
        let (status, lines) = s.stop(Signal::SIGTERM);
        let took = t.elapsed();
        assert_eq!(status.code(), Some(0), "{model}");
        assert!(
            took < Duration::from_secs(1),
            "{model}: stopped in {took:?}"
        );
        let stats = stats_of(&lines);
        assert!(
            stats["counters"]["by_class"][2].as_u64().unwrap() >= 1,
            "{model}: the 404 is counted: {stats}"
        );
        drop((stalled, half));
    }
}

/// The stylesheet's background, the image's colour and the colour the
/// script paints its box: each found in the screenshot only if that part
/// was fetched and used.
const BACKGROUND: [u8; 3] = [18, 52, 86];
const IMAGE: [u8; 3] = [200, 30, 40];
const PAINTED: [u8; 3] = [40, 200, 90];

/// The test page: HTML with a stylesheet, a module script and a PNG (its
/// path percent-encoded by the browser).
/// The script paints a box as soon as it runs, and at `load` retitles the
/// page and writes into the DOM what the browser made of the stylesheet
/// (the body's computed background) and the image (its decoded size).
fn write_page(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("index.html"),
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>before</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="style.css">
<script type="module" src="app.js"></script>
</head><body><h1>smtlab</h1><img id="img" src="images/a pixel é.png" width="64" height="64">
<div id="ran"></div></body></html>
"#,
    )
    .unwrap();
    let [r, g, b] = BACKGROUND;
    std::fs::write(
        root.join("style.css"),
        format!(
            "body {{ background: rgb({r}, {g}, {b}); margin: 0; }}\n\
             h1 {{ color: rgb(250, 250, 250); }}\n\
             #ran {{ width: 48px; height: 48px; }}\n"
        ),
    )
    .unwrap();
    let [r, g, b] = PAINTED;
    std::fs::write(
        root.join("app.js"),
        format!(
            "document.getElementById('ran').style.background = 'rgb({r}, {g}, {b})';\n\
             window.addEventListener('load', () => {{\n\
             \x20 const img = document.getElementById('img');\n\
             \x20 document.title = 'script ran';\n\
             \x20 document.body.dataset.bg = getComputedStyle(document.body).backgroundColor;\n\
             \x20 document.body.dataset.img = img.naturalWidth > 0\n\
             \x20   ? `${{img.naturalWidth}}x${{img.naturalHeight}}` : 'broken';\n\
             }});\n"
        ),
    )
    .unwrap();
    let mut png = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png, 64, 64);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&IMAGE.repeat(64 * 64)).unwrap();
    }
    // In a directory, its name with a space and a non-ASCII letter: the
    // browser asks for `/images/a%20pixel%20%C3%A9.png`.
    std::fs::create_dir_all(root.join("images")).unwrap();
    std::fs::write(root.join("images/a pixel é.png"), png).unwrap();
}

/// Pixels of an RGB(A) PNG within 4 of `rgb` in every channel.
fn pixels_like(png_bytes: &[u8], rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("a screenshot in {other:?}"),
    };
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf[..info.buffer_size()]
        .chunks_exact(step)
        .filter(|p| (0..3).all(|c| p[c].abs_diff(rgb[c]) <= 4))
        .count()
}

/// The page's four files, as Chromium asks for them.
const PAGE_FILES: u64 = 4;

#[test]
fn a_page_with_a_stylesheet_a_script_and_an_image_renders_in_chromium_from_every_model() {
    let Some(browser) = chromium::chromium() else {
        support::skip("chromium not installed (apt-get install chromium)");
        return;
    };
    for model in MODELS {
        // A page written just now: its Last-Modified is a second old at
        // most when first served, so Chromium's heuristic freshness (a
        // tenth of that age) has run out by the second load.
        let site = tempfile::tempdir().unwrap();
        write_page(site.path());
        // Chromium opens several connections and keeps them: enough
        // workers that none waits for another's to idle out.
        let s = Serve::start(
            model,
            6,
            &[
                "--root",
                site.path().to_str().unwrap(),
                "--request-timeout",
                "2s",
            ],
        );
        let url = format!("http://{}/index.html", s.addr);
        // One profile for both loads: the second finds the first's cache.
        let profile = tempfile::tempdir().unwrap();
        let page = chromium::render_url(&browser, &url, profile.path());
        assert!(
            page.console.is_empty(),
            "{model}: console messages:\n{}",
            page.console.join("\n")
        );
        let [r, g, b] = BACKGROUND;
        for want in [
            "<title>script ran</title>".to_string(),
            format!(r#"data-bg="rgb({r}, {g}, {b})""#),
            r#"data-img="64x64""#.to_string(),
        ] {
            assert!(
                page.dom.contains(&want),
                "{model}: no {want} in\n{}",
                page.dom
            );
        }
        // The second load revalidates each cached file (If-Modified-Since)
        // and renders what the cache holds after the server's 304s.
        let shot = chromium::screenshot(&browser, &url, profile.path(), 400, 300);
        // Most of the window is the stylesheet's background; the image and
        // the script's box are drawn whole.
        let background = pixels_like(&shot, BACKGROUND);
        let image = pixels_like(&shot, IMAGE);
        let painted = pixels_like(&shot, PAINTED);
        assert!(
            background > 400 * 300 / 2,
            "{model}: {background} background pixels"
        );
        assert!(image >= 64 * 64 * 9 / 10, "{model}: {image} image pixels");
        assert!(
            painted >= 48 * 48 * 9 / 10,
            "{model}: {painted} pixels of the script's box"
        );
        let (status, lines) = s.stop(Signal::SIGTERM);
        assert_eq!(status.code(), Some(0), "{model}");
        // Every file sent once, then confirmed unchanged once; nothing
        // Chromium asked for refused.
        let stats = stats_of(&lines);
        assert_eq!(
            stats["counters"]["by_class"],
            serde_json::json!([PAGE_FILES, PAGE_FILES, 0, 0]),
            "{model}: responses by class (2xx, 3xx, 4xx, 5xx): {stats}"
        );
    }
}

/// A stylesheet dated in the future (written where the clock was ahead)
/// and edited after Chromium cached it: the next load shows the edit. The
/// server sent the future date as Last-Modified, and Chromium revalidated
/// with it: every edit before that date was answered 304, and the old
/// colour stayed. The headers are the same in every model: one suffices.
#[test]
fn chromium_sees_the_edit_of_a_stylesheet_dated_in_the_future() {
    let Some(browser) = chromium::chromium() else {
        support::skip("chromium not installed (apt-get install chromium)");
        return;
    };
    let site = tempfile::tempdir().unwrap();
    write_page(site.path());
    let css = site.path().join("style.css");
    let in_a_day = std::time::SystemTime::now() + Duration::from_secs(86_400);
    std::fs::File::options()
        .write(true)
        .open(&css)
        .unwrap()
        .set_modified(in_a_day)
        .unwrap();
    let s = Serve::start("event", 1, &["--root", site.path().to_str().unwrap()]);
    let url = format!("http://{}/index.html", s.addr);
    let profile = tempfile::tempdir().unwrap();
    let (width, height) = (400, 300);
    let half = (width * height / 2) as usize;
    let shot = chromium::screenshot(&browser, &url, profile.path(), width, height);
    let before = pixels_like(&shot, BACKGROUND);
    assert!(before > half, "{before} background pixels");
    // An edit within the second the file was sent is invisible to
    // If-Modified-Since (HTTP dates are whole seconds): edit in the next.
    // The file's mtime comes from the kernel's coarse clock, which lags
    // the real time by up to a tick: rewrite until the mtime itself is in
    // the next second (sleeping only to the boundary failed 1 run in 4).
    let into_second = std::time::UNIX_EPOCH.elapsed().unwrap();
    let next = into_second.as_secs() + 1;
    std::thread::sleep(Duration::from_nanos(u64::from(
        1_000_000_000 - into_second.subsec_nanos(),
    )));
    const EDITED: [u8; 3] = [90, 20, 120];
    let [r, g, b] = EDITED;
    let mtime_secs = |p: &std::path::Path| {
        std::fs::metadata(p)
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    loop {
        std::fs::write(
            &css,
            format!("body {{ background: rgb({r}, {g}, {b}); margin: 0; }}\n"),
        )
        .unwrap();
        if mtime_secs(&css) >= next {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let shot = chromium::screenshot(&browser, &url, profile.path(), width, height);
    let (edited, old) = (pixels_like(&shot, EDITED), pixels_like(&shot, BACKGROUND));
    assert!(
        edited > half,
        "{edited} pixels of the edited background, {old} of the old one"
    );
    let (status, _) = s.stop(Signal::SIGTERM);
    assert_eq!(status.code(), Some(0));
}
