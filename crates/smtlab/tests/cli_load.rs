//! `smtlab load http URL` through the binary (issue 17, item 3): bad input
//! is one line and exit 2, a server that is not there one line and exit 1,
//! and a short run against a small server in this test (a thread per
//! connection on 127.0.0.1 port 0, serving the file set's bodies) gives
//! the report as JSON with the client's CPUs and why.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use smtlab_web::fileset::{content_key, fill, FileSet};
use support::{assert_usage_error, json, smtlab};

/// A keep-alive server of a one-directory file set; stopped and joined on
/// drop.
struct TestServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl TestServer {
    fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, workers) = (stop.clone(), workers.clone());
            std::thread::spawn(move || {
                let set = Arc::new(FileSet::with_dirs(1).unwrap());
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    let (stop, set) = (stop.clone(), set.clone());
                    let h = std::thread::spawn(move || serve(conn, &stop, &set));
                    let mut w = workers.lock().unwrap();
                    // Finished threads' handles go (a joinable thread keeps
                    // its stack until then).
                    w.retain(|h| !h.is_finished());
                    w.push(h);
                }
            })
        };
        TestServer {
            addr,
            stop,
            accept: Some(accept),
            workers,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for h in self.workers.lock().unwrap().drain(..) {
            let _ = h.join();
        }
    }
}

fn serve(mut conn: TcpStream, stop: &AtomicBool, set: &FileSet) {
    conn.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match conn.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                }
                Err(_) => return,
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        buf.drain(..end + 4);
        let path = head.split(' ').nth(1).unwrap_or("/");
        let out = match set.find(path) {
            Some(f) => {
                let mut body = vec![0; f.size as usize];
                fill(content_key(path), 0, &mut body);
                let mut out =
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", f.size).into_bytes();
                out.extend_from_slice(&body);
                out
            }
            None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        };
        if conn.write_all(&out).is_err() {
            return;
        }
    }
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let ok = "http://127.0.0.1:1/";
    assert_usage_error(
        &["load", "http", "https://127.0.0.1/"],
        "https is not supported",
    );
    assert_usage_error(&["load", "http", "ftp://x/"], "URL ftp://x/");
    assert_usage_error(&["load", "http", ok, "--rate", "0"], "--rate 0");
    assert_usage_error(&["load", "http", ok, "--rate", "fast"], "--rate fast");
    assert_usage_error(
        &["load", "http", ok, "--connections", "0"],
        "--connections 0",
    );
    assert_usage_error(&["load", "http", ok, "--threads", "2000"], "--threads 2000");
    assert_usage_error(
        &["load", "http", ok, "--threads", "4", "--connections", "2"],
        "--threads 4",
    );
    assert_usage_error(&["load", "http", ok, "--duration", "0s"], "--duration");
    assert_usage_error(&["load", "http", ok, "--duration", "31days"], "--duration");
    assert_usage_error(&["load", "http", ok, "--mix", "tpc"], "tpc");
    assert_usage_error(&["load", "http", ok, "--files", "1KB"], "--files 1KB");
    assert_usage_error(
        &["load", "http", ok, "--urls", "/nonexistent/urls"],
        "--urls",
    );
    assert_usage_error(&["load", "http", ok, "--cpus", "100000"], "--cpus");
    assert_usage_error(
        &["load", "http", "http://127.0.0.1:1/x", "--mix", "specweb96"],
        "path",
    );
}

#[test]
fn a_server_that_is_not_there_is_one_line_and_exit_1() {
    // A port just freed: nothing listens on it.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/");
    let out = smtlab()
        .args(["load", "http", &url, "--duration", "1s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot connect") && err.contains(&url),
        "{err}"
    );
}

#[test]
fn a_short_run_reports_as_json_with_the_client_cpus() {
    let server = TestServer::start();
    let url = server.url();
    let common = [
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--connections",
        "2",
        "--files",
        "5MB",
        "--json",
    ];
    let mut args = vec!["load", "http", url.as_str()];
    args.extend(common);
    let v = json(&args);
    let requests = v["requests"].as_u64().unwrap();
    assert!(requests > 20, "{v}");
    assert_eq!(v["ok"].as_u64(), Some(requests), "{v}");
    assert_eq!(v["errors"].as_object().map(|e| e.len()), Some(0), "{v}");
    assert_eq!(v["seconds"].as_f64(), Some(1.0));
    assert_eq!(v["requests_per_s"].as_f64(), Some(requests as f64));
    assert!(v["latency_us"]["p99"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["client_cpu_share"].as_f64().unwrap() > 0.0, "{v}");
    assert!(v["client_bound"].is_boolean(), "{v}");
    assert_eq!(v["bottleneck"].is_string(), v["client_bound"] == true);
    // This test process is the server, and it may run on every CPU: the
    // client runs unpinned and says why.
    assert_eq!(v["client_cpus"].as_array().map(Vec::len), Some(0), "{v}");
    let reason = v["client_cpus_reason"].as_str().unwrap();
    assert!(
        reason.starts_with("not pinned: the server (pid "),
        "{reason}"
    );

    // Given CPUs, and a single path.
    let one = format!("{url}dir00000/class1_0");
    let v = json(&[
        "load",
        "http",
        &one,
        "--duration",
        "1s",
        "--warmup",
        "0",
        "--cpus",
        "0",
        "--json",
    ]);
    assert_eq!(v["client_cpus"], serde_json::json!([0]), "{v}");
    assert_eq!(v["client_cpus_reason"], "CPUs 0, as given");
    assert!(v["ok"].as_u64().unwrap() > 20, "{v}");
}
