//! What the two non-blocking architectures, `event` and `staged`, share:
//!
//! * [`Conn`]: an open connection, its bytes received but not yet parsed,
//!   its deadline; [`Conn::next_request`] reads and parses what has
//!   arrived (pipelined requests wait in the buffer), [`Conn::linger`]
//!   drains it after a closing response, and dropping it counts it out of
//!   `open_connections` wherever that happens (a queue torn down at stop
//!   included);
//! * [`Outgoing`]: a response written as far as the socket takes it, the
//!   head from memory and a file body with `sendfile`, resumed when the
//!   socket is writable again;
//! * [`refuse`]: the best-effort answer (503, 408) to a connection the
//!   server will not serve, then the close;
//! * worker CPUs checked and pinned.
//!
//! Nothing here waits: `WouldBlock` means "wait for the poller". mio
//! registers sockets edge-triggered, so each step goes on reading or
//! writing until the socket says `WouldBlock` (or the step has what it
//! needs), and no readiness goes unseen.

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use nix::errno::Errno;

use super::stats::Counters;
use crate::http::{self, Body, Parsed, Request, Response, Status};

/// Bytes asked of one `read`.
pub(super) const READ_CHUNK: usize = 16 * 1024;
/// After a closing response, unread request bytes are drained for at most
/// this long (and [`LINGER_BYTES`]): closing a socket with unread input
/// resets the connection, and the reset can destroy the response before
/// the client has read it (Apache's lingering close; `blocking` does the
/// same).
const LINGER: Duration = Duration::from_secs(2);
const LINGER_BYTES: usize = 1 << 20;
/// Bytes asked of one `sendfile` (Linux sends at most 0x7ffff000 a call).
const SENDFILE_MAX: u64 = 1 << 30;
/// Bytes copied at a time where `sendfile` is refused.
const COPY_CHUNK: usize = 64 * 1024;
/// A receive buffer emptied by a request is given back when it grew past
/// this, so thousands of idle connections hold no memory.
const KEEP_BUF: usize = 2 * READ_CHUNK;

/// How a connection ended, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    /// The peer closed its side, or a closing response was sent (and the
    /// connection drained): nothing to count.
    Quiet,
    /// No progress within the request timeout.
    Timeout,
    /// Reset, broken pipe, another socket or file error.
    Failed,
}

/// What [`Conn::next_request`] found.
#[derive(Debug)]
pub(super) enum Next {
    Request(Request),
    /// The parser refused what arrived: answer this and close.
    Error {
        status: Status,
        minor: u8,
    },
    /// No whole request yet and nothing more to read now.
    Wait,
    /// The connection is over.
    End(End),
}

/// What [`Conn::linger`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Linger {
    Wait,
    Done,
}

/// An open connection, counted in `open_connections` from [`Conn::new`]
/// until it is dropped.
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    /// Received bytes not yet parsed: the start of the next request.
    buf: Vec<u8>,
    /// When the connection times out: the whole next request head must
    /// have arrived by then, or the write in progress must have moved.
    pub(super) deadline: Instant,
    /// The peer sent FIN: what is in `buf` is all there will be.
    peer_closed: bool,
    /// A closing response was sent: reads only drain (`Some(bytes so far)`).
    lingering: Option<usize>,
    counters: Arc<Counters>,
}

impl Conn {
    pub(super) fn new(stream: TcpStream, counters: Arc<Counters>, deadline: Instant) -> Conn {
        counters.open_connections.fetch_add(1, Ordering::Relaxed);
        Conn {
            stream,
            buf: Vec::new(),
            deadline,
            peer_closed: false,
            lingering: None,
            counters,
        }
    }

    pub(super) fn is_lingering(&self) -> bool {
        self.lingering.is_some()
    }

    /// The next request: parsed from what is buffered, reading more while
    /// the socket has more. `scratch` is the caller's read buffer.
    pub(super) fn next_request(&mut self, scratch: &mut [u8]) -> Next {
        loop {
            match http::parse_request(&self.buf) {
                Parsed::Request { request, used } => {
                    self.buf.drain(..used);
                    if self.buf.is_empty() && self.buf.capacity() > KEEP_BUF {
                        self.buf = Vec::new();
                    }
                    return Next::Request(request);
                }
                Parsed::Error { status, minor } => return Next::Error { status, minor },
                Parsed::Partial => {}
            }
            if self.peer_closed {
                // A partial request the client will never finish.
                return Next::End(End::Quiet);
            }
            match self.stream.read(scratch) {
                Ok(0) => self.peer_closed = true,
                Ok(n) => self.buf.extend_from_slice(&scratch[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Next::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Next::End(End::Failed),
            }
        }
    }

    /// After a closing response: say so with FIN and from now on only
    /// drain what the peer still sends, until it closes or `timeout` (at
    /// most [`LINGER`]) passes.
    pub(super) fn start_linger(&mut self, timeout: Duration) {
        let _ = self.stream.shutdown(Shutdown::Write);
        self.buf = Vec::new();
        self.lingering = Some(0);
        self.deadline = Instant::now() + LINGER.min(timeout);
    }

    /// Drain what has arrived; `Done` when the peer closed, erred, or sent
    /// more than [`LINGER_BYTES`].
    pub(super) fn linger(&mut self, scratch: &mut [u8]) -> Linger {
        loop {
            let drained = self.lingering.unwrap_or(0);
            if drained > LINGER_BYTES {
                return Linger::Done;
            }
            match self.stream.read(scratch) {
                Ok(0) => return Linger::Done,
                Ok(n) => self.lingering = Some(drained + n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Linger::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Linger::Done,
            }
        }
    }

    /// Close, counting how it ended.
    pub(super) fn close(self, end: End) {
        match end {
            End::Quiet => {}
            End::Timeout => {
                self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            }
            End::Failed => {
                self.counters.io_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The deadline passed: a connection waiting for a request head gets
    /// 408 (best effort) and is closed; one lingering is just closed.
    pub(super) fn expire(mut self) {
        if self.is_lingering() {
            return;
        }
        self.counters.timeouts.fetch_add(1, Ordering::Relaxed);
        let counters = self.counters.clone();
        refuse_on(&mut self.stream, Status::RequestTimeout, &counters);
    }

    /// Answer `status` (best effort: 503 when a queue or the connection
    /// table is full) and close.
    pub(super) fn refuse(mut self, status: Status) {
        let counters = self.counters.clone();
        refuse_on(&mut self.stream, status, &counters);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.counters
            .open_connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// Answer a connection that is not admitted (no [`Conn`] yet) with
/// `status`, best effort, and close it.
pub(super) fn refuse(mut stream: TcpStream, status: Status, counters: &Counters) {
    refuse_on(&mut stream, status, counters);
}

/// One write of a short error response (a fresh or idle socket takes it
/// whole), FIN, then what the peer already sent is read and dropped so the
/// close is not a reset that could destroy the response.
fn refuse_on(stream: &mut TcpStream, status: Status, counters: &Counters) {
    let mut out = Outgoing::new(http::error_response(status, 1));
    match out.write(stream) {
        Flow::Done => counters.response(status, out.sent),
        Flow::Blocked { .. } | Flow::Failed => {
            counters.bytes_sent.fetch_add(out.sent, Ordering::Relaxed);
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
    let mut chunk = [0u8; 4096];
    let mut drained = 0;
    while drained < LINGER_BYTES {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// How far [`Outgoing::write`] got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// All sent.
    Done,
    /// The socket is full: wait until it is writable (`progress` when some
    /// bytes left this time).
    Blocked { progress: bool },
    /// The connection or the file failed: close it.
    Failed,
}

/// A response being sent.
pub(super) struct Outgoing {
    pub(super) status: Status,
    pub(super) keep_alive: bool,
    /// The head, and a short body (error pages) after it: one write.
    head: Vec<u8>,
    head_at: usize,
    file: Option<FileBody>,
    /// Bytes that left (head and body).
    pub(super) sent: u64,
}

struct FileBody {
    file: File,
    len: u64,
    /// Bytes of the file sent so far.
    offset: u64,
    /// Where `sendfile` is refused: bytes read from the file not yet
    /// written, and how many of them were.
    copy: Option<(Vec<u8>, usize)>,
}

impl Outgoing {
    pub(super) fn new(response: Response) -> Outgoing {
        let mut head = response.head;
        let file = match response.body {
            Body::None => None,
            Body::Bytes(bytes) => {
                head.extend_from_slice(&bytes);
                None
            }
            Body::File { file, len } => Some(FileBody {
                file,
                len,
                offset: 0,
                copy: None,
            }),
        };
        Outgoing {
            status: response.status,
            keep_alive: response.keep_alive,
            head,
            head_at: 0,
            file,
            sent: 0,
        }
    }

    /// Write as much as the socket takes now.
    pub(super) fn write(&mut self, stream: &mut TcpStream) -> Flow {
        let mut progress = false;
        // With a file body to follow, the head is corked (MSG_MORE) so that
        // a small file leaves in the same segment as its head.
        let more = self.file.as_ref().is_some_and(|f| f.len > 0);
        while self.head_at < self.head.len() {
            let rest = &self.head[self.head_at..];
            let wrote = if more {
                smtlab_sys::send_more(stream.as_fd(), rest)
            } else {
                stream.write(rest)
            };
            match wrote {
                Ok(0) => return Flow::Failed,
                Ok(n) => {
                    self.head_at += n;
                    self.sent += n as u64;
                    progress = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Flow::Blocked { progress }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Flow::Failed,
            }
        }
        let Some(body) = self.file.as_mut() else {
            return Flow::Done;
        };
        while body.offset < body.len {
            match body.send(stream) {
                Ok(0) => return Flow::Failed,
                Ok(n) => {
                    self.sent += n as u64;
                    progress = true;
                }
                Err(Errno::EAGAIN) => return Flow::Blocked { progress },
                Err(Errno::EINTR) => {}
                Err(_) => return Flow::Failed,
            }
        }
        Flow::Done
    }
}

impl FileBody {
    /// One `sendfile` (or, where the file system refuses it, one read and
    /// write); `Ok(0)` means the file is shorter than its Content-Length,
    /// and the connection must close or the client would read the next
    /// response as this body.
    fn send(&mut self, stream: &mut TcpStream) -> Result<usize, Errno> {
        if self.copy.is_some() {
            return self.copy_some(stream);
        }
        let mut offset = self.offset as libc::off_t;
        let count = (self.len - self.offset).min(SENDFILE_MAX) as usize;
        match nix::sys::sendfile::sendfile(
            stream.as_fd(),
            self.file.as_fd(),
            Some(&mut offset),
            count,
        ) {
            Ok(n) => {
                self.offset += n as u64;
                Ok(n)
            }
            Err(Errno::EINVAL | Errno::ENOSYS) if self.offset == 0 => {
                self.copy = Some((Vec::new(), 0));
                self.copy_some(stream)
            }
            Err(e) => Err(e),
        }
    }

    fn copy_some(&mut self, stream: &mut TcpStream) -> Result<usize, Errno> {
        let (pending, at) = self.copy.get_or_insert_with(|| (Vec::new(), 0));
        if *at == pending.len() {
            let want = (self.len - self.offset).min(COPY_CHUNK as u64) as usize;
            pending.resize(want, 0);
            let n = self.file.read_at(pending, self.offset).map_err(errno)?;
            pending.truncate(n);
            *at = 0;
            if n == 0 {
                return Ok(0);
            }
        }
        let n = stream.write(&pending[*at..]).map_err(errno)?;
        *at += n;
        self.offset += n as u64;
        Ok(n)
    }
}

fn errno(e: io::Error) -> Errno {
    match e.kind() {
        io::ErrorKind::WouldBlock => Errno::EAGAIN,
        io::ErrorKind::Interrupted => Errno::EINTR,
        _ => e.raw_os_error().map_or(Errno::EIO, Errno::from_raw),
    }
}

/// The CPU of worker `k`, if workers are pinned.
pub(super) fn worker_cpu(cpus: &[u32], k: usize) -> Option<u32> {
    (!cpus.is_empty()).then(|| cpus[k % cpus.len()])
}

/// Pin the calling thread (tid 0) to `cpu`, if any.
pub(super) fn pin(cpu: Option<u32>) -> io::Result<()> {
    match cpu {
        Some(cpu) => smtlab_sys::set_affinity(0, &[cpu].into_iter().collect()),
        None => Ok(()),
    }
}

/// Join `handles`, counting the threads that panicked (a bug: the
/// connections they held were closed by unwinding).
pub(super) fn join_all(handles: &mut Vec<std::thread::JoinHandle<()>>) -> usize {
    handles
        .drain(..)
        .map(|h| h.join())
        .filter(Result::is_err)
        .count()
}
