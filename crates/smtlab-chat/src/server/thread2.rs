//! `thread2`, VolanoMark's server design: each connection has a reader
//! thread (blocking reads, the session) and a writer thread that takes
//! lines from the connection's outgoing queue and writes them with
//! blocking writes. Whoever sends to the connection — its own reader or
//! another connection's — only appends to the queue and signals the
//! writer, so a client that does not read only fills its own queue; past
//! [`super::ChatConfig::send_queue`] bytes it is disconnected.
//!
//! Back-pressure (see `hub.rs`): a reader whose line filled a queue past
//! its high-water mark waits, before it handles its next line, on that
//! queue's `room` condition, which the queue's writer signals once it has
//! written it down to the low-water mark (only when someone waits: no
//! system call otherwise). Nothing waits while holding a lock, and a
//! writer waits for nothing but its socket, so waits cannot form a loop.
//!
//! Closing: the connection's last line is its `ERROR` line, queued after
//! what the writer already holds (whole lines), written within
//! [`CLOSE_GRACE`]. The writer's socket has a send timeout of
//! [`WAIT_SLICE`], so a blocked write returns now and then to look at that
//! deadline and at a stop; the reader is woken by a shutdown of the
//! socket's reading side only, so the writing side stays open for it.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::acceptor::{Conn, Threads};
use super::hub::{
    self, error_line, high_water, low_water, Hub, Line, Outbox, CLOSE_GRACE, WAIT_SLICE,
};
use super::irc::Lines;
use super::session::{Flow, Session};
use super::stats::SENDQ_EXCEEDED;

struct Queue {
    lines: VecDeque<Line>,
    /// Bytes in `lines`.
    queued: usize,
    /// Bytes the writer took and has not written yet.
    in_flight: usize,
    /// The reader ended: write what is queued (the `ERROR` line last),
    /// then end.
    finish: bool,
    /// Closed by the server, with why: what was queued is dropped, but for
    /// the `ERROR` line.
    closed: Option<String>,
    /// After `finish` or `closed`: until when the writer keeps trying.
    deadline: Option<Instant>,
    /// Marked not reading: senders do not wait for it.
    not_reading: bool,
    /// Threads waiting on `room`.
    waiting: usize,
}

impl Queue {
    fn bytes(&self) -> usize {
        self.queued + self.in_flight
    }
}

/// The outgoing queue: the connection's [`Outbox`].
struct QueueOutbox {
    queue: Mutex<Queue>,
    /// Lines for the writer.
    ready: Condvar,
    /// Room for senders waiting (down to the low-water mark, or closed).
    room: Condvar,
    bound: usize,
    high: usize,
    low: usize,
    /// `queue.closed` is set: the reader looks at it after each read
    /// without the lock.
    closed: AtomicBool,
    /// To wake the reader when the server closes the connection.
    stream: Arc<TcpStream>,
    host: String,
    hub: Arc<Hub>,
}

impl QueueOutbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends a line; true when the queue is now above its high-water
    /// mark (and not marked not reading).
    fn enqueue(&self, q: &mut Queue, line: &Line) -> bool {
        q.queued += line.len();
        q.lines.push_back(line.clone());
        if q.lines.len() == 1 {
            self.ready.notify_one();
        }
        q.bytes() > self.high && !q.not_reading
    }

    fn has_room_locked(&self, q: &Queue) -> bool {
        q.closed.is_some() || q.finish || q.not_reading || q.bytes() <= self.low
    }

    /// The server closes the connection: queued lines dropped (the writer
    /// finishes the whole lines it holds), the `ERROR` line queued unless
    /// writing failed, the reader woken.
    fn close(&self, q: &mut Queue, reason: &str, tell: bool) {
        if q.closed.is_some() {
            return;
        }
        q.closed = Some(reason.to_string());
        self.closed.store(true, Relaxed);
        q.lines.clear();
        q.queued = 0;
        if tell {
            self.enqueue(q, &error_line(&self.host, reason));
        }
        q.deadline = Some(Instant::now() + CLOSE_GRACE);
        self.hub.count_close(reason);
        self.ready.notify_one();
        if q.waiting > 0 {
            self.room.notify_all();
        }
        // The reader's blocked read returns; writing stays open for the
        // ERROR line.
        let _ = self.stream.shutdown(Shutdown::Read);
    }

    /// The reader ended: the writer writes what is queued, `last` after it,
    /// then ends (at once when the server stops).
    fn finish(&self, last: Option<Line>, stopping: bool) {
        let mut q = self.lock();
        if q.closed.is_none() && !q.finish {
            if let Some(line) = last {
                self.enqueue(&mut q, &line);
            }
            q.finish = true;
            let grace = if stopping {
                Duration::ZERO
            } else {
                CLOSE_GRACE
            };
            q.deadline = Some(Instant::now() + grace);
        }
        self.ready.notify_one();
        if q.waiting > 0 {
            self.room.notify_all();
        }
    }

    /// The reader's own output is above the high-water mark: it waits
    /// until the writer has it down to the low-water mark, however long
    /// (being marked not reading by a sender does not count: only its
    /// reading stops), or until `stop`.
    fn wait_drained(&self, stop: &dyn Fn() -> bool) {
        let drained = |q: &Queue| q.closed.is_some() || q.finish || q.bytes() <= self.low;
        loop {
            let mut q = self.lock();
            if drained(&q) {
                return;
            }
            q.waiting += 1;
            let (mut q, _) = self
                .room
                .wait_timeout_while(q, WAIT_SLICE, |q| !drained(q))
                .unwrap_or_else(|e| e.into_inner());
            q.waiting -= 1;
            if drained(&q) {
                return;
            }
            drop(q);
            if stop() {
                return;
            }
        }
    }

    fn closed(&self) -> Option<String> {
        self.lock().closed.clone()
    }

    /// `n` more bytes the writer held are written.
    fn wrote(&self, q: &mut Queue, n: usize) {
        q.in_flight -= n;
        if q.bytes() <= self.low {
            q.not_reading = false;
            if q.waiting > 0 {
                self.room.notify_all();
            }
        }
    }
}

impl Outbox for QueueOutbox {
    fn push(&self, line: &Line) -> bool {
        let mut q = self.lock();
        if q.closed.is_some() || q.finish {
            return false;
        }
        if q.bytes() > 0 && q.bytes() + line.len() > self.bound {
            self.hub.counters.send_queue_closes.fetch_add(1, Relaxed);
            self.close(&mut q, SENDQ_EXCEEDED, true);
            return false;
        }
        self.enqueue(&mut q, line)
    }

    fn reply(&self, line: &Line) -> bool {
        let mut q = self.lock();
        if q.closed.is_some() || q.finish {
            return false;
        }
        self.enqueue(&mut q, line)
    }

    fn has_room(&self) -> bool {
        self.has_room_locked(&self.lock())
    }

    fn mark_not_reading(&self) {
        self.lock().not_reading = true;
    }

    fn wait_room(&self, slice: Duration) -> bool {
        let mut q = self.lock();
        if self.has_room_locked(&q) {
            return true;
        }
        q.waiting += 1;
        let (mut q, _) = self
            .room
            .wait_timeout_while(q, slice, |q| !self.has_room_locked(q))
            .unwrap_or_else(|e| e.into_inner());
        q.waiting -= 1;
        self.has_room_locked(&q)
    }
}

/// The reader thread (the connection's first thread): starts the writer,
/// then reads and handles lines until the client leaves or is closed.
pub(super) fn serve(conn: Conn) {
    let host = conn
        .stream
        .peer_addr()
        .map_or_else(|_| "unknown".to_string(), |a| a.ip().to_string());
    let outbox = Arc::new(QueueOutbox {
        queue: Mutex::new(Queue {
            lines: VecDeque::new(),
            queued: 0,
            in_flight: 0,
            finish: false,
            closed: None,
            deadline: None,
            not_reading: false,
            waiting: 0,
        }),
        ready: Condvar::new(),
        room: Condvar::new(),
        bound: conn.send_queue,
        high: high_water(conn.send_queue),
        low: low_water(conn.send_queue),
        closed: AtomicBool::new(false),
        stream: conn.stream.clone(),
        host: host.clone(),
        hub: conn.hub.clone(),
    });
    let w = outbox.clone();
    let threads = conn.threads.clone();
    let write_half = conn.stream.clone();
    if conn
        .threads
        .spawn(move || write_loop(&w, write_half, &threads))
        .is_err()
    {
        conn.hub.counters.io_errors.fetch_add(1, Relaxed);
        conn.hub.count_close("no thread for the connection");
        let _ = conn.stream.set_nonblocking(true);
        let _ = (&*conn.stream).write_all(&error_line(&host, "no thread for the connection"));
        return;
    }
    let hub = &conn.hub;
    let client = hub.new_client(host.clone(), outbox.clone());
    let mut session = Session::new(client);
    let mut lines = Lines::default();
    let mut buf = [0u8; 4096];
    let mut stream = &*conn.stream;
    let mut why = "Connection closed".to_string();
    let mut quit = false;
    let stop = || conn.threads.stopping() || outbox.closed.load(Relaxed);
    'read: while !conn.threads.stopping() {
        let n = match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => {
                why = "Read error".into();
                break;
            }
        };
        if outbox.closed.load(Relaxed) {
            // Not one more line of a connection the server closed.
            break;
        }
        let mut data = &buf[..n];
        while !data.is_empty() {
            let mut flow = Flow::Continue;
            let used = lines.feed(data, |input| {
                flow = session.input(hub, input);
                flow == Flow::Continue
            });
            data = &data[used..];
            match flow {
                Flow::Quit => {
                    quit = true;
                    break 'read;
                }
                Flow::Wait => {
                    for c in session.take_full() {
                        if c.id == session.client.id {
                            outbox.wait_drained(&stop);
                        } else {
                            hub::wait_for_room(&*c.out, &stop);
                        }
                    }
                    if stop() {
                        break 'read;
                    }
                }
                Flow::Continue => {}
            }
        }
    }
    let stopping = conn.threads.stopping();
    if let Some(reason) = outbox.closed() {
        why = reason;
    } else if stopping {
        why = "Server stopping".into();
    }
    session.end(hub, &why);
    // QUIT queued its own ERROR line; a close by the server too.
    let last = (!quit).then(|| error_line(&host, &why));
    outbox.finish(last, stopping);
}

/// The writer thread: waits for lines and writes them, as many as are
/// queued in one `write`.
fn write_loop(outbox: &QueueOutbox, socket: Arc<TcpStream>, threads: &Threads) {
    // A blocked write returns within a slice with what it wrote (or
    // EAGAIN), so the writer can give up on a client that does not read
    // once its deadline passed or the server stops. Set once: no cost per
    // write.
    let _ = socket.set_write_timeout(Some(WAIT_SLICE));
    let mut stream = &*socket;
    let mut batch: Vec<u8> = Vec::new();
    // Written and not yet subtracted from the queue's `in_flight`.
    let mut unaccounted = 0;
    let mut failed = false;
    'write: loop {
        {
            let mut q = outbox.lock();
            outbox.wrote(&mut q, unaccounted);
            unaccounted = 0;
            while q.lines.is_empty() && !q.finish && q.closed.is_none() {
                q = outbox.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.lines.is_empty() {
                break;
            }
            batch.clear();
            for l in q.lines.drain(..) {
                batch.extend_from_slice(&l);
            }
            q.in_flight += q.queued;
            q.queued = 0;
        }
        let mut at = 0;
        while at < batch.len() {
            match stream.write(&batch[at..]) {
                Ok(0) => {
                    failed = true;
                    break 'write;
                }
                Ok(n) => {
                    at += n;
                    unaccounted += n;
                    outbox.hub.counters.bytes_out.fetch_add(n as u64, Relaxed);
                    if at < batch.len() {
                        // A slow reader: waiting senders may have room
                        // before the whole batch is out.
                        let mut q = outbox.lock();
                        outbox.wrote(&mut q, unaccounted);
                        unaccounted = 0;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    let q = outbox.lock();
                    let late = q.deadline.is_some_and(|d| Instant::now() >= d);
                    if late || threads.stopping() {
                        break 'write;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    failed = true;
                    break 'write;
                }
            }
        }
        // A burst may have grown the buffer: do not keep it while idle.
        if batch.capacity() > 64 << 10 {
            batch = Vec::new();
        }
    }
    if failed {
        let mut q = outbox.lock();
        // Once the connection ends (its ERROR line to a client that is
        // gone), a failed write is no error of its own.
        if !q.finish && q.closed.is_none() {
            outbox.hub.counters.io_errors.fetch_add(1, Relaxed);
            outbox.close(&mut q, "Write error", false);
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}
