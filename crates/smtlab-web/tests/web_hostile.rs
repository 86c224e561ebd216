//! Hostile requests against the web server through the library (issue 29,
//! items 1-3): the corpus of `support/web_corpus.rs` against `thread`,
//! `event` (with and without helpers) and `staged` — the `process` model
//! forks, so it must start in a process with one thread, and the CLI's
//! `web_serve` test runs the same corpus against all four through
//! `smtlab serve web` — and files that are not regular files, or that
//! take long to read, never holding a worker nor a stop.

#[path = "support/web_corpus.rs"]
mod web_corpus;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use smtlab_web::server::{self as web, Model, Server, ServerConfig};

/// (model, workers, helpers) of every library run.
const SETUPS: [(Model, usize, usize); 4] = [
    (Model::Thread, 2, 0),
    (Model::Event, 2, 0),
    (Model::Event, 1, 2),
    (Model::Staged, 2, 0),
];

fn start(setup: (Model, usize, usize), root: &Path) -> Server {
    let (model, workers, helpers) = setup;
    let mut config = ServerConfig::new(model, workers, root.to_path_buf());
    config.helpers = helpers;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    web::start(&config, listener).unwrap_or_else(|e| panic!("{model}: {e}"))
}

fn name(setup: (Model, usize, usize)) -> String {
    format!("{} workers={} helpers={}", setup.0, setup.1, setup.2)
}

/// Stop `server` on another thread and say how long it took; a stop that
/// takes more than `limit` fails the test without waiting for it.
fn stop_within(server: Server, limit: Duration, who: &str) {
    let (tx, rx) = mpsc::channel();
    let t = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(server.stop());
    });
    match rx.recv_timeout(limit) {
        Ok(stopped) => stopped.unwrap_or_else(|e| panic!("{who}: {e}")),
        Err(_) => panic!("{who}: the stop took more than {limit:?}"),
    }
    assert!(t.elapsed() < limit, "{who}: stopped in {:?}", t.elapsed());
}

/// Open `fifo` for writing if a reader waits, so that a reader stuck in
/// `open` returns (a failing test must not leave a server thread there).
fn unblock(fifo: &Path) {
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

#[test]
fn the_hostile_request_corpus_gets_its_statuses_from_every_library_model() {
    for setup in SETUPS {
        let dir = tempfile::tempdir().unwrap();
        let (root, _socket) = web_corpus::make_root(dir.path());
        let server = start(setup, &root);
        let result = web_corpus::run_all(server.addr(), &name(setup));
        unblock(&root.join("fifo"));
        let n = result.unwrap_or_else(|failed| panic!("\n{failed}"));
        assert!(n > 80, "{n} cases");
        stop_within(server, Duration::from_secs(2), &name(setup));
    }
}

#[test]
fn a_fifo_in_the_root_is_404_at_once_and_never_holds_the_one_worker() {
    for setup in [
        (Model::Thread, 1, 0),
        (Model::Event, 1, 0),
        (Model::Event, 1, 1),
        (Model::Staged, 1, 0),
    ] {
        let who = name(setup);
        let dir = tempfile::tempdir().unwrap();
        let (root, _socket) = web_corpus::make_root(dir.path());
        let server = start(setup, &root);
        let addr = server.addr();
        let t = Instant::now();
        // Kept open: a blocking model's one worker stays with it.
        let mut fifo = TcpStream::connect(addr).unwrap();
        fifo.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        fifo.write_all(b"GET /fifo HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut got = [0u8; 12];
        let read = fifo.read_exact(&mut got);
        unblock(&root.join("fifo"));
        read.unwrap_or_else(|e| panic!("{who}: no answer for the FIFO: {e}"));
        assert_eq!(&got, b"HTTP/1.1 404", "{who}");
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{who}: {:?}",
            t.elapsed()
        );
        drop(fifo);
        // The worker is free for everyone else.
        let case = &web_corpus::cases()[0];
        web_corpus::run(addr, case).unwrap_or_else(|e| panic!("{who}: {e}"));
        stop_within(server, Duration::from_secs(1), &who);
    }
}

#[test]
fn a_stop_is_prompt_while_a_helper_warms_a_huge_file_and_a_client_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (root, _socket) = web_corpus::make_root(dir.path());
    // 1 TiB of holes: a helper reading it through would take hours here.
    let huge = std::fs::File::create(root.join("huge")).unwrap();
    huge.set_len(1 << 40).unwrap();
    let big = std::fs::File::create(root.join("big")).unwrap();
    big.set_len(64 << 20).unwrap();
    for setup in [
        (Model::Event, 1, 1),
        (Model::Thread, 1, 0),
        (Model::Event, 1, 0),
        (Model::Staged, 1, 0),
    ] {
        let who = name(setup);
        let server = start(setup, &root);
        let addr = server.addr();
        // In flight: a large body to a client that reads none of it, and
        // (with helpers) a file the helper is still warming.
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled
            .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut warming = TcpStream::connect(addr).unwrap();
        if setup.2 > 0 {
            warming
                .write_all(b"GET /huge HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
        }
        std::thread::sleep(Duration::from_millis(300));
        stop_within(server, Duration::from_secs(1), &who);
        // Every connection was closed by the stop.
        for s in [&mut stalled, &mut warming] {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    }
}
