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
//!
//! Back-pressure (see `hub.rs`): while a connection's own pending bytes
//! are above the high-water mark its thread stops reading (it polls for
//! writability only) until they are down to the low-water mark; when one
//! of its lines filled another connection's pending bytes, the thread
//! itself writes them out as the socket takes them (the next sender, as
//! always here), polling that socket, before it handles its next line. It
//! never waits for the other connection's thread, which may be waiting
//! for it.
//!
//! Closing: the connection's thread tells the others, then writes what is
//! pending (only up to the end of a line already started when the server
//! closed it) and its `ERROR` line within [`CLOSE_GRACE`], then shuts the
//! socket. Another thread that closes it (`SendQ exceeded`) wakes it with
//! the wake signal.

use std::io::Read;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::pthread::{pthread_kill, pthread_self, Pthread};
use nix::sys::signal::{SigSet, SigmaskHow};
use nix::sys::socket::MsgFlags;
use nix::sys::time::TimeSpec;

use super::acceptor::Conn;
use super::hub::{
    self, error_line, finish_line, high_water, low_water, Hub, Line, Outbox, CLOSE_GRACE,
    WAIT_SLICE,
};
use super::irc::Lines;
use super::session::{Flow, Session};
use super::stats::SENDQ_EXCEEDED;

struct Pending {
    bytes: Vec<u8>,
    /// The last byte written did not end a line: `bytes` starts inside one.
    mid_line: bool,
    closed: Option<String>,
    /// Marked not reading: senders do not wait for it.
    not_reading: bool,
}

/// The connection's socket and what it could not take yet.
struct LockedSocket {
    state: Mutex<Pending>,
    stream: Arc<TcpStream>,
    bound: usize,
    high: usize,
    low: usize,
    /// The connection's own thread, to wake when bytes are left pending.
    owner: Pthread,
    host: String,
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
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes what the socket takes now of `data` (lock held): bytes
    /// taken.
    fn send(&self, mid_line: &mut bool, data: &[u8]) -> Result<usize, Errno> {
        loop {
            match send_now(&self.stream, data) {
                Ok(0) => return Ok(0),
                Ok(n) => {
                    self.hub.counters.bytes_out.fetch_add(n as u64, Relaxed);
                    *mid_line = data[n - 1] != b'\n';
                    return Ok(n);
                }
                Err(Errno::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Writes pending bytes (lock held). False on a write error.
    fn flush(&self, p: &mut Pending) -> bool {
        while !p.bytes.is_empty() {
            match self.send(&mut p.mid_line, &p.bytes) {
                Ok(0) => break,
                Ok(n) => {
                    p.bytes.drain(..n);
                }
                Err(_) => return false,
            }
        }
        if p.bytes.len() <= self.low {
            p.not_reading = false;
        }
        if p.bytes.is_empty() {
            // Idle connections hold no buffer.
            p.bytes = Vec::new();
        }
        true
    }

    fn has_room_locked(&self, p: &Pending) -> bool {
        p.closed.is_some() || p.not_reading || p.bytes.len() <= self.low
    }

    /// The connection is closed by the server: pending bytes dropped but
    /// the end of a line already started, the `ERROR` line after them
    /// (`tell`), the connection's thread woken (with the wake signal: it may be
    /// polling for writability only) to finish.
    fn fail(&self, p: &mut Pending, reason: &str, tell: bool) {
        if p.closed.is_some() {
            return;
        }
        p.closed = Some(reason.to_string());
        self.hub.count_close(reason);
        if tell {
            let keep = finish_line(&p.bytes, p.mid_line);
            p.bytes.truncate(keep);
            p.bytes.extend_from_slice(&error_line(&self.host, reason));
        } else {
            p.bytes = Vec::new();
        }
        if pthread_self() != self.owner {
            // Alive: it marks the connection closed under the lock before
            // it ends (and this one was not).
            let _ = pthread_kill(self.owner, smtlab_sys::WAKE_SIGNAL);
        }
    }

    /// A line for the connection; `own`: a reply, which is never bounded.
    fn queue(&self, line: &Line, own: bool) -> bool {
        let mut p = self.lock();
        if p.closed.is_some() {
            return false;
        }
        if !p.bytes.is_empty() && !self.flush(&mut p) {
            self.hub.counters.io_errors.fetch_add(1, Relaxed);
            self.fail(&mut p, "Write error", false);
            return false;
        }
        let mut rest: &[u8] = line;
        if p.bytes.is_empty() {
            match self.send(&mut p.mid_line, rest) {
                Ok(n) => rest = &rest[n..],
                Err(_) => {
                    self.hub.counters.io_errors.fetch_add(1, Relaxed);
                    self.fail(&mut p, "Write error", false);
                    return false;
                }
            }
        }
        if rest.is_empty() {
            return false;
        }
        if !own && !p.bytes.is_empty() && p.bytes.len() + rest.len() > self.bound {
            self.hub.counters.send_queue_closes.fetch_add(1, Relaxed);
            self.fail(&mut p, SENDQ_EXCEEDED, true);
            return false;
        }
        let was_empty = p.bytes.is_empty();
        p.bytes.extend_from_slice(rest);
        if was_empty && pthread_self() != self.owner {
            // The owner may sleep waiting only for input: make it wait for
            // writability too. Under the lock: the owner marks the
            // connection closed under it before it ends, so it is alive.
            let _ = pthread_kill(self.owner, smtlab_sys::WAKE_SIGNAL);
        }
        p.bytes.len() > self.high && !p.not_reading
    }

    /// Waits up to `timeout` for the socket to take bytes.
    fn poll_writable(&self, timeout: Duration) {
        let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLOUT)];
        let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let _ = nix::poll::poll(&mut fds, PollTimeout::from(ms));
    }
}

impl Outbox for LockedSocket {
    fn push(&self, line: &Line) -> bool {
        self.queue(line, false)
    }

    fn reply(&self, line: &Line) -> bool {
        self.queue(line, true)
    }

    fn has_room(&self) -> bool {
        self.has_room_locked(&self.lock())
    }

    fn mark_not_reading(&self) {
        self.lock().not_reading = true;
    }

    /// Called by another connection's thread: it writes the pending bytes
    /// itself as the socket takes them.
    fn wait_room(&self, slice: Duration) -> bool {
        {
            let mut p = self.lock();
            if !self.flush(&mut p) {
                self.hub.counters.io_errors.fetch_add(1, Relaxed);
                self.fail(&mut p, "Write error", false);
            }
            if self.has_room_locked(&p) {
                return true;
            }
        }
        self.poll_writable(slice);
        let mut p = self.lock();
        if !self.flush(&mut p) {
            self.hub.counters.io_errors.fetch_add(1, Relaxed);
            self.fail(&mut p, "Write error", false);
        }
        self.has_room_locked(&p)
    }
}

/// The connection's thread: registers the client, reads and handles its
/// lines until it quits, fails or the server stops, then closes it.
pub(super) fn serve(conn: Conn) {
    let host = conn
        .stream
        .peer_addr()
        .map_or_else(|_| "unknown".to_string(), |a| a.ip().to_string());
    let Some(in_ppoll) = block_wake_signal() else {
        conn.hub.counters.io_errors.fetch_add(1, Relaxed);
        return;
    };
    let socket = Arc::new(LockedSocket {
        state: Mutex::new(Pending {
            bytes: Vec::new(),
            mid_line: false,
            closed: None,
            not_reading: false,
        }),
        stream: conn.stream.clone(),
        bound: conn.send_queue,
        high: high_water(conn.send_queue),
        low: low_water(conn.send_queue),
        owner: pthread_self(),
        host: host.clone(),
        hub: conn.hub.clone(),
    });
    let client = conn.hub.new_client(host.clone(), socket.clone());
    let mut reader = Reader {
        conn: &conn,
        socket: &socket,
        session: Session::new(client),
        lines: Lines::default(),
        buf: [0u8; 4096],
        start: 0,
        end: 0,
        paused: false,
        in_ppoll,
    };
    let (why, quit) = reader.run();
    close(&conn, &socket, reader.session, &host, why, quit);
}

/// Keep the wake signal blocked outside ppoll (see the module docs): the
/// mask to poll with, the wake signal unblocked, or `None` if the mask
/// cannot be set.
fn block_wake_signal() -> Option<SigSet> {
    let mut wake = SigSet::empty();
    wake.add(smtlab_sys::WAKE_SIGNAL);
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&wake), None).ok()?;
    let mut in_ppoll = SigSet::thread_get_mask().unwrap_or_else(|_| SigSet::empty());
    in_ppoll.remove(smtlab_sys::WAKE_SIGNAL);
    Some(in_ppoll)
}

/// What the reading loop does next.
enum Step {
    /// Go round again.
    Again,
    /// Stop reading: the connection ends (the reason is the reader's).
    End,
}

/// One connection's reading side: what was read and not yet handled
/// (`buf[start..end]`), and whether reading is paused because its own
/// output is above the high-water mark.
struct Reader<'a> {
    conn: &'a Conn,
    socket: &'a LockedSocket,
    session: Session,
    lines: Lines,
    buf: [u8; 4096],
    start: usize,
    end: usize,
    paused: bool,
    in_ppoll: SigSet,
}

impl Reader<'_> {
    /// Read and handle lines until the connection ends: why it ended, and
    /// whether the client quit (QUIT queued its own ERROR line).
    fn run(&mut self) -> (String, bool) {
        let mut why = "Connection closed".to_string();
        let mut quit = false;
        loop {
            if self.conn.threads.stopping() {
                why = "Server stopping".into();
                break;
            }
            let step = if self.start < self.end && !self.paused {
                self.handle_lines(&mut quit)
            } else {
                self.flush_then_poll_and_read(&mut why)
            };
            if let Step::End = step {
                break;
            }
        }
        (why, quit)
    }

    /// Handle the complete lines read so far; a full queue (a recipient's,
    /// or its own) makes it wait for room, or pause its reading.
    fn handle_lines(&mut self, quit: &mut bool) -> Step {
        let hub = &self.conn.hub;
        let mut flow = Flow::Continue;
        let session = &mut self.session;
        self.start += self.lines.feed(&self.buf[self.start..self.end], |input| {
            flow = session.input(hub, input);
            flow == Flow::Continue
        });
        match flow {
            Flow::Quit => {
                *quit = true;
                Step::End
            }
            Flow::Wait => {
                let stop = || self.conn.threads.stopping() || self.socket.lock().closed.is_some();
                let mut waited = false;
                for c in self.session.take_full() {
                    if c.id == self.session.client.id {
                        self.paused = true;
                    } else {
                        hub::wait_for_room(&*c.out, &stop);
                        waited = true;
                    }
                }
                // Closed (or stopping) meanwhile: not one more line.
                if waited && stop() {
                    Step::End
                } else {
                    Step::Again
                }
            }
            Flow::Continue => Step::Again,
        }
    }

    /// Write what is pending, resume reading once its own output is down
    /// to the low-water mark, then wait for input (or room to write) and
    /// read what came.
    fn flush_then_poll_and_read(&mut self, why: &mut String) -> Step {
        let socket = self.socket;
        let pending = {
            let mut p = socket.lock();
            if p.closed.is_some() {
                return Step::End;
            }
            if !p.bytes.is_empty() && !socket.flush(&mut p) {
                self.conn.hub.counters.io_errors.fetch_add(1, Relaxed);
                socket.fail(&mut p, "Write error", false);
                return Step::End;
            }
            p.bytes.len()
        };
        if self.paused && pending <= socket.low {
            self.paused = false;
            if self.start < self.end {
                return Step::Again;
            }
        }
        let mut flags = PollFlags::empty();
        if !self.paused {
            flags |= PollFlags::POLLIN;
        }
        if pending > 0 {
            flags |= PollFlags::POLLOUT;
        }
        // Paused, it does not wait for input, so a stop (a shutdown of the
        // reading side) would not wake it: it looks now and then.
        let timeout = self.paused.then(|| TimeSpec::from_duration(WAIT_SLICE));
        let mut fds = [PollFd::new(self.conn.stream.as_fd(), flags)];
        match nix::poll::ppoll(&mut fds, timeout, Some(self.in_ppoll)) {
            Ok(_) => {}
            // Woken: bytes were left pending, or it was closed (the top of
            // the loop looks).
            Err(Errno::EINTR) => return Step::Again,
            Err(_) => {
                *why = "Poll error".into();
                return Step::End;
            }
        }
        let revents = fds[0].revents().unwrap_or(PollFlags::empty());
        if self.paused
            || !revents.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR)
        {
            return Step::Again;
        }
        let n = match (&*self.conn.stream).read(&mut self.buf) {
            Ok(0) => return Step::End,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Step::Again,
            Err(_) => {
                *why = "Read error".into();
                return Step::End;
            }
        };
        (self.start, self.end) = (0, n);
        Step::Again
    }
}

/// The connection's end: the session leaves (QUIT to its channels), the
/// ERROR line is queued last unless the client's QUIT queued its own, and
/// what is left is written while the client takes it (not at all when the
/// server is stopping).
fn close(
    conn: &Conn,
    socket: &LockedSocket,
    mut session: Session,
    host: &str,
    mut why: String,
    quit: bool,
) {
    let hub = &conn.hub;
    let stopping = conn.threads.stopping();
    if let Some(reason) = socket.lock().closed.clone() {
        why = reason;
    } else if stopping {
        why = "Server stopping".into();
    }
    session.end(hub, &why);
    {
        let mut p = socket.lock();
        if p.closed.is_none() {
            // QUIT queued its own ERROR line; a close by the server its.
            p.closed = Some(why.clone());
            if !quit {
                p.bytes.extend_from_slice(&error_line(host, &why));
            }
        }
    }
    // Write what is left, the ERROR line last, while the client takes it.
    let grace = if stopping {
        Duration::ZERO
    } else {
        CLOSE_GRACE
    };
    let deadline = Instant::now() + grace;
    loop {
        {
            let mut p = socket.lock();
            if !socket.flush(&mut p) || p.bytes.is_empty() {
                p.bytes = Vec::new();
                break;
            }
        }
        let now = Instant::now();
        if now >= deadline || conn.threads.stopping() {
            break;
        }
        socket.poll_writable((deadline - now).min(WAIT_SLICE));
    }
    let _ = conn.stream.shutdown(Shutdown::Both);
}
