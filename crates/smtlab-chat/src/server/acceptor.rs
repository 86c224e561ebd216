//! Accepting for the thread models (`thread2`, `thread`): one thread blocks
//! in `accept` and starts each connection's thread(s) with a small stack
//! ([`super::THREAD_STACK`]). The acceptor runs on the worker CPUs (as a
//! set), and threads inherit its affinity, so every thread of the server
//! stays on them.
//!
//! Stopping: a flag, `shutdown` of the listening socket (Linux wakes a
//! thread blocked in `accept` with `EINVAL`) and of the reading side of
//! every open connection (their blocked reads return, and each connection
//! closes itself, its `ERROR` line written if its socket takes it at
//! once), then every thread is joined. A thread that cannot be made (the
//! process or user thread limit) is counted as an I/O error and its
//! connection closed with `ERROR`, never a panic.

use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use smtlab_sys::LeanThread;

use super::config::{ChatConfig, THREAD_STACK};
use super::hub::Hub;
use super::running::Running;

/// What a connection's thread gets. The socket is shared (`Arc`), never
/// duplicated: one descriptor per connection, as in ngircd, so 10,000
/// connections fit an ordinary open-file limit.
pub(super) struct Conn {
    pub stream: Arc<TcpStream>,
    pub hub: Arc<Hub>,
    pub send_queue: usize,
    pub threads: Arc<Threads>,
    /// The key of this connection in [`Threads::open`].
    pub key: u64,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.threads.forget(self.key);
        self.hub.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The threads and open connections of a thread-model server.
#[derive(Default)]
pub(super) struct Threads {
    /// Lean threads (`smtlab_sys::spawn_lean`): two memory mappings each
    /// rather than std's four, so 20,000 of them (10,000 connections of
    /// `thread2`) stay under Linux's 65,530 mappings per process.
    handles: Mutex<Vec<LeanThread>>,
    /// Each open connection's descriptor, so stop can shut it down. An
    /// entry is removed (under the lock) before its [`Conn`] lets go of the
    /// socket, so a descriptor listed here is that connection's.
    open: Mutex<HashMap<u64, RawFd>>,
    stop: AtomicBool,
}

impl Threads {
    /// Starts a named thread with the small stack, tracked for the join at
    /// stop. Finished threads are joined here now and then, so 10,000
    /// short connections do not pile up handles.
    pub fn spawn(&self, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
        let handle = smtlab_sys::spawn_lean(THREAD_STACK, f)?;
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if handles.len() >= 64 && handles.len().is_power_of_two() {
            let (done, running): (Vec<_>, Vec<_>) =
                handles.drain(..).partition(|h| h.is_finished());
            *handles = running;
            for h in done {
                h.join();
            }
        }
        handles.push(handle);
        Ok(())
    }

    fn forget(&self, key: u64) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// A running thread-model server.
pub(super) struct Acceptor {
    listener: Arc<TcpListener>,
    threads: Arc<Threads>,
    acceptor: Option<JoinHandle<()>>,
}

pub(super) fn start(
    config: &ChatConfig,
    listener: TcpListener,
    hub: Arc<Hub>,
    serve: fn(Conn),
) -> io::Result<Acceptor> {
    listener.set_nonblocking(false)?;
    let listener = Arc::new(listener);
    let threads = Arc::new(Threads::default());
    let cpus: smtlab_types::CpuSet = config.worker_cpus.iter().copied().collect();
    let (l, t) = (listener.clone(), threads.clone());
    let (send_queue, max) = (config.send_queue, config.max_connections);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let acceptor = std::thread::Builder::new()
        .name("chat-accept".into())
        .spawn(move || {
            let pinned = if cpus.is_empty() {
                Ok(())
            } else {
                smtlab_sys::set_affinity(0, &cpus)
            };
            let ok = pinned.is_ok();
            let _ = ready_tx.send(pinned);
            if ok {
                accept_loop(&l, &t, &hub, send_queue, max, serve);
            }
        })?;
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = acceptor.join();
            return Err(e);
        }
        Err(_) => {
            let _ = acceptor.join();
            return Err(io::Error::other("the chat acceptor thread ended at start"));
        }
    }
    Ok(Acceptor {
        listener,
        threads,
        acceptor: Some(acceptor),
    })
}

fn accept_loop(
    listener: &TcpListener,
    threads: &Arc<Threads>,
    hub: &Arc<Hub>,
    send_queue: usize,
    max: usize,
    serve: fn(Conn),
) {
    let mut next_key = 0u64;
    loop {
        let accepted = listener.accept();
        if threads.stopping() {
            return;
        }
        let (stream, _) = match accepted {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                // Out of descriptors or memory: count it, breathe, retry.
                hub.counters.io_errors.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(10));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        hub.counters.accepted.fetch_add(1, Ordering::Relaxed);
        let open = hub.counters.open.load(Ordering::Relaxed) as usize;
        if open >= max {
            hub.counters.overloads.fetch_add(1, Ordering::Relaxed);
            refuse(&mut &stream, hub, "Server full");
            continue;
        }
        next_key += 1;
        let key = next_key;
        threads
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, stream.as_raw_fd());
        hub.counters.open.fetch_add(1, Ordering::Relaxed);
        let stream = Arc::new(stream);
        let conn = Conn {
            stream: stream.clone(),
            hub: hub.clone(),
            send_queue,
            threads: threads.clone(),
            key,
        };
        if let Err(_e) = threads.spawn(move || serve(conn)) {
            // The closure (and the Conn in it) was dropped: the connection
            // is forgotten and counted closed. Tell the client why.
            hub.counters.io_errors.fetch_add(1, Ordering::Relaxed);
            hub.count_close("no thread for the connection");
            refuse(
                &mut &*stream,
                hub,
                "Server busy: no thread for the connection",
            );
        }
    }
}

fn refuse(stream: &mut &TcpStream, hub: &Hub, why: &str) {
    let _ = stream.set_nonblocking(true);
    let _ = stream
        .write_all(format!("ERROR :Closing Link: {} ({why})\r\n", hub.server_name).as_bytes());
    let _ = stream.shutdown(Shutdown::Both);
}

impl Running for Acceptor {
    fn stop(&mut self) -> io::Result<()> {
        let Some(acceptor) = self.acceptor.take() else {
            return Ok(());
        };
        self.threads.stop.store(true, Ordering::SeqCst);
        let _ =
            nix::sys::socket::shutdown(self.listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        let _ = acceptor.join();
        for &fd in self
            .threads
            .open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            // The descriptor is open: its entry is still here (see `open`).
            // Reading only: the connection's thread still writes its ERROR
            // line, then shuts the rest.
            let _ = nix::sys::socket::shutdown(fd, nix::sys::socket::Shutdown::Read);
        }
        // Connection threads may still be starting writer threads: join
        // until no handle is left.
        loop {
            let batch: Vec<LeanThread> = self
                .threads
                .handles
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..)
                .collect();
            if batch.is_empty() {
                return Ok(());
            }
            for h in batch {
                h.join();
            }
        }
    }

    fn threads(&self) -> usize {
        self.live()
    }
}

impl Acceptor {
    fn live(&self) -> usize {
        let handles = self
            .threads
            .handles
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let acceptor = self.acceptor.as_ref().is_some_and(|h| !h.is_finished());
        acceptor as usize + handles.iter().filter(|h| !h.is_finished()).count()
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}
