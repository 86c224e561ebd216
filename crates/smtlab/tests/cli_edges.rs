//! Issue 29, items 6, 7 and 21 through the binary: a load run without a
//! success (every request a 404, or a timeout; a chat message lost) has no
//! rate and exits 3; a CPU the load generator cannot use is refused before
//! anything runs; `--root` that is a file says so; a negative number names
//! its flag and range; an empty metric name, a directory given to
//! `--alloc`, a count past 64 bits and an unwritable `-o` are said as what
//! they are.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;
use support::{assert_usage_error, smtlab};

/// A server on 127.0.0.1 that handles each connection with `handle` in a
/// thread of its own until dropped.
struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    fn start(handle: fn(TcpStream, &AtomicBool)) -> Server {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let accept = std::thread::spawn(move || {
            let mut workers = Vec::new();
            for c in l.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(c) = c else { continue };
                let s = s.clone();
                workers.push(std::thread::spawn(move || handle(c, &s)));
            }
            for w in workers {
                let _ = w.join();
            }
        });
        Server {
            addr,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Lines of `c` until the peer or the test is done.
fn lines(c: &TcpStream, stop: &AtomicBool, mut each: impl FnMut(&str) -> bool) {
    c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut line = String::new();
    while !stop.load(Ordering::SeqCst) {
        match r.read_line(&mut line) {
            Ok(0) => return,
            Ok(_) if line.ends_with('\n') => {
                let l = std::mem::take(&mut line);
                if !each(l.trim_end()) {
                    return;
                }
            }
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

/// Every request answered 404, keep-alive.
fn not_found(c: TcpStream, stop: &AtomicBool) {
    let mut out = c.try_clone().unwrap();
    // A request's head ends with an empty line: answer it then.
    lines(&c, stop, |l| {
        !l.is_empty()
            || out
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .is_ok()
    });
}

/// Reads requests, never answers.
fn silent(mut c: TcpStream, stop: &AtomicBool) {
    c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut b = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) && !matches!(c.read(&mut b), Ok(0)) {}
}

/// An IRC server that registers, joins and relays nothing: every
/// delivery is lost.
fn black_hole_irc(c: TcpStream, stop: &AtomicBool) {
    let mut out = c.try_clone().unwrap();
    let mut nick = String::from("*");
    lines(&c, stop, |l| {
        let (cmd, rest) = l.split_once(' ').unwrap_or((l, ""));
        let reply = match cmd {
            "NICK" => {
                nick = rest.to_string();
                String::new()
            }
            "USER" => format!(":hole.test 001 {nick} :Welcome\r\n"),
            "JOIN" => format!(
                ":{nick}!u@h JOIN {rest}\r\n:hole.test 353 {nick} = {rest} :{nick}\r\n\
                 :hole.test 366 {nick} {rest} :End of NAMES list\r\n"
            ),
            _ => String::new(),
        };
        reply.is_empty() || out.write_all(reply.as_bytes()).is_ok()
    });
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn load_http_without_a_success_has_no_rate_and_exits_3() {
    let server = Server::start(not_found);
    let url = format!("http://{}/nope", server.addr);
    let out = smtlab()
        .args([
            "load",
            "http",
            &url,
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--json",
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["requests"].as_u64().unwrap() > 10, "{v}");
    assert_eq!(v["ok"].as_u64(), Some(0), "{v}");
    assert_eq!(v["requests_per_s"].as_f64(), Some(0.0), "{v}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("smtlab: no result: no request answered successfully in the 1 s window")
            && err.contains("status_4xx"),
        "{err}"
    );
    // The text says the rate is of successes, with the errors beside it.
    let out = smtlab()
        .args(["load", "http", &url, "--duration", "500ms", "--warmup", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("requests/s    0.0 successful (errors: status_4xx "),
        "{text}"
    );
}

#[test]
fn load_http_where_every_request_times_out_exits_3() {
    let server = Server::start(silent);
    let url = format!("http://{}/", server.addr);
    let out = smtlab()
        .args([
            "load",
            "http",
            &url,
            "--duration",
            "1s",
            "--warmup",
            "0",
            "--timeout",
            "200ms",
            "--no-verify",
            "--json",
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests_per_s"].as_f64(), Some(0.0), "{v}");
    assert!(v["errors"]["timeout"].as_u64().unwrap() > 0, "{v}");
    assert!(err.contains("timeout"), "{err}");
}

#[test]
fn load_chat_with_every_message_lost_exits_3() {
    let server = Server::start(black_hole_irc);
    let addr = server.addr.to_string();
    let out = smtlab()
        .args([
            "load",
            "chat",
            &addr,
            "--rooms",
            "1",
            "--users",
            "3",
            "--messages",
            "2",
            "--timeout",
            "500ms",
            "--json",
        ])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["deliveries"].as_u64(), Some(0), "{v}");
    let lost = v["lost"].as_u64().unwrap();
    assert!(
        lost > 0 && Some(lost) == v["expected_deliveries"].as_u64(),
        "{v}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "smtlab: no result: of {lost} expected deliveries {lost} were lost"
        )),
        "{err}"
    );
}

#[test]
fn a_client_cpu_this_process_cannot_use_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c.db");
    let db = db.to_str().unwrap();
    assert_usage_error(
        &["run", "-w", "web", "--client-cpus", "99", "--db", db],
        "--client-cpus 99: CPU 99 is not one this process may run on; allowed: ",
    );
    // Refused before a run was created.
    assert!(!dir.path().join("c.db").exists());
}

#[test]
fn a_root_that_is_a_file_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let f = file.to_str().unwrap();
    for files in [&[][..], &["--files", "5MB"][..]] {
        let mut args = vec![
            "serve",
            "web",
            "--model",
            "thread",
            "--threads",
            "1",
            "--listen",
            "127.0.0.1:0",
            "--root",
            f,
        ];
        args.extend(files);
        assert_usage_error(&args, &format!("--root {f}: a file, not a directory"));
    }
}

#[test]
fn small_ones_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    assert_usage_error(
        &[
            "run",
            "--cmd",
            "echo 1",
            "--metric",
            "=([0-9]+)",
            "--dry-run",
        ],
        "--metric =([0-9]+): no name before `=`",
    );
    assert_usage_error(
        &["run", "-w", "spin", "--alloc", d, "--dry-run"],
        &format!("allocator {d}: a directory, not a shared object (.so) file"),
    );
    assert_usage_error(
        &["place", "-p", "E:N:99999999999999999999", "-n", "1"],
        "asks for 99999999999999999999 PUs",
    );
    for (args, needle) in [
        (
            &["run", "-w", "spin", "--threads", "-1", "--dry-run"][..],
            "--threads -1: ",
        ),
        (
            &["run", "-w", "spin", "--precision", "-1", "--dry-run"],
            "--precision -1: expected a fraction between 0 and 1",
        ),
        (
            &["run", "-w", "spin", "--duration", "-1s", "--dry-run"],
            "--duration -1s: a negative duration; expected a duration above 0",
        ),
        (
            &["run", "-w", "spin", "--warmup", "-1", "--dry-run"],
            "--warmup -1: expected a whole number from 0 to 1000000",
        ),
        (
            &["load", "http", "http://127.0.0.1:1/", "--rate", "-5"],
            "--rate -5: expected requests per second",
        ),
        (
            &["study", "pairs", "--trials", "-1"],
            "--trials -1: expected a whole number from 1 to 1000000000",
        ),
    ] {
        assert_usage_error(args, needle);
    }
}

#[test]
fn an_unwritable_report_directory_says_its_os_error_once() {
    if !std::path::Path::new("/sys/kernel").is_dir() {
        support::skip("no /sys: no directory that cannot be created in");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let out = smtlab()
        .args([
            "run",
            "-w",
            "spin",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--min-samples",
            "1",
            "--max-samples",
            "1",
            "--db",
            db,
        ])
        .output()
        .unwrap();
    support::assert_success(&out, "a run to report");
    let out = smtlab()
        .args(["report", "-o", "/sys/rep", "--db", db])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("smtlab: -o /sys/rep: report: cannot create directory"),
        "{err}"
    );
    // The OS's reason, once (it was said twice).
    let reason = err.rsplit(": ").next().unwrap().trim();
    assert_eq!(err.matches(reason).count(), 1, "{err}");
}
