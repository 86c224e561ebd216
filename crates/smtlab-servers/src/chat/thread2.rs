//! `thread2`, VolanoMark's server design: each connection has a reader
//! thread (blocking reads, the session) and a writer thread that takes
//! lines from the connection's outgoing queue and writes them with
//! blocking writes. Whoever sends to the connection — its own reader or
//! another connection's — only appends to the queue and signals the
//! writer, so a client that does not read only fills its own queue; past
//! [`super::ChatConfig::send_queue`] bytes it is disconnected.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};

use super::acceptor::Conn;
use super::hub::{Hub, Line, Outbox};
use super::irc::Lines;
use super::session::{Flow, Session};
use super::SENDQ_EXCEEDED;

struct Queue {
    lines: VecDeque<Line>,
    bytes: usize,
    /// Write what is queued, then end (after QUIT or the reader's end).
    finish: bool,
    /// Closed by the server, with why; what is queued is dropped.
    closed: Option<String>,
}

/// The outgoing queue: the connection's [`Outbox`].
struct QueueOutbox {
    queue: Mutex<Queue>,
    ready: Condvar,
    bound: usize,
    /// To wake the reader when the server closes the connection.
    stream: Arc<TcpStream>,
    hub: Arc<Hub>,
}

impl Outbox for QueueOutbox {
    fn push(&self, line: &Line) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.closed.is_some() || q.finish {
            return;
        }
        if q.bytes + line.len() > self.bound {
            drop(q);
            self.hub.counters.send_queue_closes.fetch_add(1, Relaxed);
            self.close(SENDQ_EXCEEDED);
            return;
        }
        q.bytes += line.len();
        q.lines.push_back(line.clone());
        if q.lines.len() == 1 {
            self.ready.notify_one();
        }
    }

    fn close(&self, reason: &str) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.closed.is_none() {
            q.closed = Some(reason.to_string());
            q.lines.clear();
            q.bytes = 0;
            self.hub.count_close(reason);
        }
        drop(q);
        self.ready.notify_one();
        // The reader's blocked read returns; the writer sees `closed`.
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

impl QueueOutbox {
    fn finish(&self) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).finish = true;
        self.ready.notify_one();
    }

    fn closed(&self) -> Option<String> {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed
            .clone()
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
            bytes: 0,
            finish: false,
            closed: None,
        }),
        ready: Condvar::new(),
        bound: conn.send_queue,
        stream: conn.stream.clone(),
        hub: conn.hub.clone(),
    });
    let w = outbox.clone();
    let hub = conn.hub.clone();
    let write_half = conn.stream.clone();
    if conn
        .threads
        .spawn(move || write_loop(&w, write_half, &hub))
        .is_err()
    {
        conn.hub.counters.io_errors.fetch_add(1, Relaxed);
        conn.hub.count_close("no thread for the connection");
        return;
    }
    let client = conn.hub.new_client(host, outbox.clone());
    let mut session = Session::new(client);
    let mut lines = Lines::default();
    let mut buf = [0u8; 4096];
    let mut stream = &*conn.stream;
    let mut why = "Connection closed".to_string();
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
        let mut quit = false;
        lines.feed(&buf[..n], |input| {
            quit = session.input(&conn.hub, input) == Flow::Quit;
            !quit
        });
        if quit {
            break 'read;
        }
    }
    if let Some(reason) = outbox.closed() {
        why = reason;
    }
    session.end(&conn.hub, &why);
    outbox.finish();
}

/// The writer thread: waits for lines and writes them, as many as are
/// queued in one `write`.
fn write_loop(outbox: &QueueOutbox, socket: Arc<TcpStream>, hub: &Hub) {
    let mut stream = &*socket;
    let mut batch: Vec<u8> = Vec::new();
    loop {
        let lines: Vec<Line> = {
            let mut q = outbox.queue.lock().unwrap_or_else(|e| e.into_inner());
            while q.lines.is_empty() && !q.finish && q.closed.is_none() {
                q = outbox.ready.wait(q).unwrap_or_else(|e| e.into_inner());
            }
            if q.closed.is_some() || (q.lines.is_empty() && q.finish) {
                break;
            }
            q.bytes = 0;
            q.lines.drain(..).collect()
        };
        batch.clear();
        for l in &lines {
            batch.extend_from_slice(l);
        }
        if stream.write_all(&batch).is_err() {
            hub.counters.io_errors.fetch_add(1, Relaxed);
            outbox.close("Write error");
            break;
        }
        hub.counters
            .bytes_out
            .fetch_add(batch.len() as u64, Relaxed);
        // A burst may have grown the buffer: do not keep it while idle.
        if batch.capacity() > 64 << 10 {
            batch = Vec::new();
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}
