//! The `thread` architecture (Apache's worker MPM without its listener
//! thread): N threads of this process block in `accept` on the one
//! listening socket, and each serves the connection it got to the end with
//! the blocking loop of [`super::blocking`] before accepting the next.
//! Thread k is pinned to `worker_cpus[k % len]`.
//!
//! Stopping: a flag, then `shutdown` of the listening socket (Linux wakes
//! every thread blocked in `accept` with `EINVAL`) and of each connection
//! being served (its blocked read or write returns at once), then every
//! thread is joined.

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::blocking;
use super::config::ServerConfig;
use super::running::Running;
use super::stats::{Counters, ServerStats};
use crate::http::Site;

/// A running `thread` server.
pub(crate) struct Threads {
    stop: Arc<AtomicBool>,
    listener: Option<Arc<TcpListener>>,
    /// Thread k's connection (a duplicate of its socket) while it serves
    /// one, so `stop` can shut it down.
    serving: Arc<Vec<Mutex<Option<TcpStream>>>>,
    handles: Vec<JoinHandle<()>>,
    counters: Arc<Counters>,
    workers: usize,
}

/// What one thread needs.
struct Worker {
    k: usize,
    cpu: Option<u32>,
    listener: Arc<TcpListener>,
    site: Site,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    serving: Arc<Vec<Mutex<Option<TcpStream>>>>,
    request_timeout: Duration,
}

pub(crate) fn start(
    config: &ServerConfig,
    listener: TcpListener,
    site: Site,
    counters: Arc<Counters>,
) -> io::Result<Threads> {
    smtlab_serving::check_worker_cpus(&config.worker_cpus)?;
    listener.set_nonblocking(false)?;
    let listener = Arc::new(listener);
    let mut threads = Threads {
        stop: Arc::new(AtomicBool::new(false)),
        listener: Some(listener.clone()),
        serving: Arc::new((0..config.workers).map(|_| Mutex::new(None)).collect()),
        handles: Vec::with_capacity(config.workers),
        counters: counters.clone(),
        workers: config.workers,
    };
    // Each thread says whether it could pin itself before it serves.
    let (ready_tx, ready) = mpsc::channel::<io::Result<()>>();
    for k in 0..config.workers {
        let worker = Worker {
            k,
            cpu: (!config.worker_cpus.is_empty())
                .then(|| config.worker_cpus[k % config.worker_cpus.len()]),
            listener: listener.clone(),
            site: site.clone(),
            counters: counters.clone(),
            stop: threads.stop.clone(),
            serving: threads.serving.clone(),
            request_timeout: config.request_timeout,
        };
        let tx = ready_tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("web-thread-{k}"))
            .spawn(move || worker.run(tx));
        match spawned {
            Ok(h) => threads.handles.push(h),
            Err(e) => {
                let _ = threads.stop();
                return Err(e);
            }
        }
    }
    drop(ready_tx);
    for _ in 0..config.workers {
        let outcome = ready
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("a server thread ended before it started")));
        if let Err(e) = outcome {
            let _ = threads.stop();
            return Err(e);
        }
    }
    Ok(threads)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Worker {
    fn run(self, ready: mpsc::Sender<io::Result<()>>) {
        let pinned = self.cpu.map_or(Ok(()), blocking::pin);
        let failed = pinned.is_err();
        let _ = ready.send(pinned);
        if failed {
            return;
        }
        let slot = &self.serving[self.k];
        loop {
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            match self.listener.accept() {
                Ok((stream, _)) => {
                    // Published before the stop flag is read: either `stop`
                    // finds it and shuts it down, or this thread sees the
                    // flag (both go through the slot's lock).
                    *lock(slot) = stream.try_clone().ok();
                    if self.stop.load(Ordering::SeqCst) {
                        *lock(slot) = None;
                        return;
                    }
                    blocking::serve(stream, &self.site, &*self.counters, self.request_timeout);
                    *lock(slot) = None;
                }
                Err(e) => {
                    if self.stop.load(Ordering::SeqCst) {
                        return;
                    }
                    blocking::after_accept_error(&e);
                }
            }
        }
    }
}

impl Running for Threads {
    fn stats(&self) -> ServerStats {
        ServerStats {
            counters: self.counters.snapshot(),
            stages: Vec::new(),
            processes: 1,
            threads: self.workers,
            // The serving threads are threads of this process.
            pids: vec![std::process::id() as i32],
        }
    }

    fn stop(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(listener) = &self.listener {
            let _ =
                nix::sys::socket::shutdown(listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        }
        for slot in self.serving.iter() {
            if let Some(s) = lock(slot).as_ref() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
        let mut panicked = 0;
        for h in self.handles.drain(..) {
            if h.join().is_err() {
                panicked += 1;
            }
        }
        // The last reference: the listening socket is closed here.
        self.listener = None;
        if panicked > 0 {
            return Err(io::Error::other(format!(
                "{panicked} server threads panicked"
            )));
        }
        Ok(())
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{start as start_server, Model};
    use std::io::{Read, Write};
    use std::time::Instant;

    #[test]
    fn threads_serve_and_stop_even_with_a_connection_open() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"hello").unwrap();
        let mut config = ServerConfig::new(Model::Thread, 2, dir.path().to_path_buf());
        config.request_timeout = Duration::from_secs(30);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = start_server(&config, listener).unwrap();
        let addr = server.addr();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /f HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        // Head and body are two writes: read until the body is there.
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"hello") {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "{}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"));
        // The response is counted once its last byte is written, which
        // may be just after the client has it.
        let until = Instant::now() + Duration::from_secs(5);
        while server.stats().counters.requests == 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
        let stats = server.stats();
        assert_eq!((stats.counters.requests, stats.threads), (1, 2));
        // `s` stays open and idle (keep-alive, 30 s timeout): stop must
        // not wait for it.
        let t = Instant::now();
        server.stop().unwrap();
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(TcpStream::connect(addr).is_err(), "the listener is closed");
        assert_eq!(
            s.read(&mut buf).unwrap(),
            0,
            "the idle connection was closed"
        );
    }

    #[test]
    fn a_worker_cpu_this_process_may_not_use_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig::new(Model::Thread, 1, dir.path().to_path_buf());
        config.worker_cpus = vec![65_000];
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = start_server(&config, listener).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    }
}
