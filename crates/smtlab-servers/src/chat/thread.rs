//! `thread`: one thread per connection, and no writer thread: whoever sends
//! to a connection — its own thread or another connection's — writes to
//! its socket directly, under the connection's lock. The writes do not
//! wait (`MSG_DONTWAIT` on the blocking socket): what the socket cannot
//! take now stays in the connection's pending bytes, bounded by
//! [`super::ChatConfig::send_queue`] (past it the client is disconnected),
//! and is written by the next sender or by the connection's own thread,
//! which waits for its socket to be readable, or writable while bytes are
//! pending.
//!
//! Waking the connection's thread: it sleeps in `ppoll` and another thread
//! that leaves bytes pending must make it add "writable" to what it waits
//! for. An eventfd per connection would double the descriptors (10,000
//! connections are the point of the study), so the sender signals the
//! thread ([`smtlab_sys::WAKE_SIGNAL`] with `pthread_kill`); the thread
//! keeps that signal blocked except inside `ppoll`, so a signal sent
//! before it got there is not lost.

use std::io::Read;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sys::pthread::{pthread_kill, pthread_self, Pthread};
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::sys::socket::MsgFlags;

use super::acceptor::Conn;
use super::hub::{Hub, Line, Outbox};
use super::irc::Lines;
use super::session::{Flow, Session};
use super::SENDQ_EXCEEDED;

struct Pending {
    bytes: Vec<u8>,
    closed: Option<String>,
}

/// The connection's socket and what it could not take yet.
struct LockedSocket {
    state: Mutex<Pending>,
    stream: Arc<TcpStream>,
    bound: usize,
    /// The connection's own thread, to wake when bytes are left pending.
    owner: Pthread,
    hub: Arc<Hub>,
}

/// `send` that never waits and never raises SIGPIPE: bytes taken.
fn send_now(stream: &TcpStream, data: &[u8]) -> Result<usize, Errno> {
    match nix::sys::socket::send(
        std::os::fd::AsRawFd::as_raw_fd(stream),
        data,
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
    ) {
        Ok(n) => Ok(n),
        Err(Errno::EAGAIN) => Ok(0),
        Err(e) => Err(e),
    }
}

impl LockedSocket {
    /// Writes pending bytes (lock held). False on a write error.
    fn flush(&self, p: &mut Pending) -> bool {
        while !p.bytes.is_empty() {
            match send_now(&self.stream, &p.bytes) {
                Ok(0) => return true,
                Ok(n) => {
                    self.hub.counters.bytes_out.fetch_add(n as u64, Relaxed);
                    p.bytes.drain(..n);
                }
                Err(Errno::EINTR) => continue,
                Err(_) => return false,
            }
        }
        // Idle connections hold no buffer.
        p.bytes = Vec::new();
        true
    }

    fn fail(&self, p: &mut Pending, reason: &str) {
        if p.closed.is_none() {
            p.closed = Some(reason.to_string());
            p.bytes = Vec::new();
            self.hub.count_close(reason);
            let _ = self.stream.shutdown(Shutdown::Both);
        }
    }
}

impl Outbox for LockedSocket {
    fn push(&self, line: &Line) {
        let mut p = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if p.closed.is_some() {
            return;
        }
        let had_pending = !p.bytes.is_empty();
        if had_pending && !self.flush(&mut p) {
            self.hub.counters.io_errors.fetch_add(1, Relaxed);
            return self.fail(&mut p, "Write error");
        }
        let mut rest: &[u8] = line;
        if p.bytes.is_empty() {
            loop {
                match send_now(&self.stream, rest) {
                    Ok(n) => {
                        self.hub.counters.bytes_out.fetch_add(n as u64, Relaxed);
                        rest = &rest[n..];
                        break;
                    }
                    Err(Errno::EINTR) => continue,
                    Err(_) => {
                        self.hub.counters.io_errors.fetch_add(1, Relaxed);
                        return self.fail(&mut p, "Write error");
                    }
                }
            }
        }
        if rest.is_empty() {
            return;
        }
        if p.bytes.len() + rest.len() > self.bound {
            self.hub.counters.send_queue_closes.fetch_add(1, Relaxed);
            return self.fail(&mut p, SENDQ_EXCEEDED);
        }
        let was_empty = p.bytes.is_empty();
        p.bytes.extend_from_slice(rest);
        if was_empty && pthread_self() != self.owner {
            // The owner may sleep waiting only for input: make it wait for
            // writability too. Under the lock: the owner marks the
            // connection closed under it before it ends, so it is alive.
            let _ = pthread_kill(self.owner, smtlab_sys::WAKE_SIGNAL);
        }
    }

    fn close(&self, reason: &str) {
        let mut p = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.fail(&mut p, reason);
    }
}

/// The connection's thread.
pub(super) fn serve(conn: Conn) {
    let host = conn
        .stream
        .peer_addr()
        .map_or_else(|_| "unknown".to_string(), |a| a.ip().to_string());
    // Keep the wake signal blocked outside ppoll (see the module docs).
    let mut wake = SigSet::empty();
    wake.add(smtlab_sys::WAKE_SIGNAL);
    let Ok(()) = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&wake), None) else {
        conn.hub.counters.io_errors.fetch_add(1, Relaxed);
        return;
    };
    let mut in_ppoll = SigSet::thread_get_mask().unwrap_or_else(|_| SigSet::empty());
    in_ppoll.remove(smtlab_sys::WAKE_SIGNAL);
    let socket = Arc::new(LockedSocket {
        state: Mutex::new(Pending {
            bytes: Vec::new(),
            closed: None,
        }),
        stream: conn.stream.clone(),
        bound: conn.send_queue,
        owner: pthread_self(),
        hub: conn.hub.clone(),
    });
    let client = conn.hub.new_client(host, socket.clone());
    let mut session = Session::new(client);
    let mut lines = Lines::default();
    let mut buf = [0u8; 4096];
    let mut why = "Connection closed".to_string();
    while !conn.threads.stopping() {
        let pending = {
            let mut p = socket.state.lock().unwrap_or_else(|e| e.into_inner());
            if p.closed.is_some() {
                break;
            }
            if !p.bytes.is_empty() && !socket.flush(&mut p) {
                socket.fail(&mut p, "Write error");
                break;
            }
            !p.bytes.is_empty()
        };
        let mut flags = PollFlags::POLLIN;
        if pending {
            flags |= PollFlags::POLLOUT;
        }
        let mut fds = [PollFd::new(conn.stream.as_fd(), flags)];
        match nix::poll::ppoll(&mut fds, None, Some(in_ppoll)) {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(_) => {
                why = "Poll error".into();
                break;
            }
        }
        let revents = fds[0].revents().unwrap_or(PollFlags::empty());
        if !revents.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) {
            continue;
        }
        let n = match (&*conn.stream).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                why = "Read error".into();
                break;
            }
        };
        let mut quit = false;
        lines.feed(&buf[..n], |input| {
            quit = session.input(&conn.hub, input) == Flow::Quit;
            !quit
        });
        if quit {
            // Send the ERROR line (it may be pending), then close.
            let mut p = socket.state.lock().unwrap_or_else(|e| e.into_inner());
            let _ = socket.flush(&mut p);
            p.closed.get_or_insert_with(|| "Quit".to_string());
            break;
        }
    }
    {
        let p = socket.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(reason) = &p.closed {
            if reason != "Quit" {
                why = reason.clone();
            }
        }
    }
    session.end(&conn.hub, &why);
    let mut p = socket.state.lock().unwrap_or_else(|e| e.into_inner());
    p.closed.get_or_insert_with(|| why.clone());
    p.bytes = Vec::new();
    drop(p);
    let _ = conn.stream.shutdown(Shutdown::Both);
}
