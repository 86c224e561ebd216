//! `event`: N single-threaded epoll loops (`mio`), loop k pinned to
//! `worker_cpus[k % len]`, every socket non-blocking, each connection's
//! outgoing bytes in a buffer of its own, bounded by
//! [`super::ChatConfig::send_queue`] (past it: disconnected).
//!
//! Accepting: every loop registers its own `try_clone` of the listening
//! socket; whichever accepts first owns the connection for its life (the
//! same herd, and the same reasons, as the web server's `event`).
//!
//! Delivery: a line for a connection of the same loop (the common case with
//! one loop, and every reply to the sender) goes to a list of the loop's
//! own, no lock; a line for a connection of another loop goes to that
//! loop's inbox (a mutex'd list) and wakes it once per batch (its
//! `mio::Waker`). A loop appends what it got to the connections' buffers
//! after each connection's input, and writes them before it sleeps again,
//! so the lines of one turn leave in one `write` per connection.
//!
//! Memory: an idle connection holds its session, its slab entry and no
//! buffer (input is read into the loop's scratch buffer; a partial line and
//! output are kept only while they exist).

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use super::hub::{Hub, Line, Outbox};
use super::irc::Lines;
use super::session::{Flow, Session};
use super::{ChatConfig, Running, SENDQ_EXCEEDED};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
/// Bytes read from the sockets at a time (one per loop).
const SCRATCH: usize = 64 << 10;
/// Connections accepted in one turn before the loop serves the others.
const ACCEPT_BATCH: usize = 64;

/// What goes to a connection of a loop.
enum Delivery {
    Line(Line),
    Close(String),
}

/// (connection key, its generation, what).
type Item = (usize, u64, Delivery);

/// What other threads see of a loop.
struct Shared {
    inbox: Mutex<Vec<Item>>,
    waker: Waker,
}

/// This thread's loop, for deliveries that need no lock.
struct Local {
    loop_id: usize,
    items: Vec<Item>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// A connection's [`Outbox`]: where it lives.
struct EventOutbox {
    loop_id: usize,
    key: usize,
    generation: u64,
    shared: Arc<Shared>,
}

impl EventOutbox {
    fn deliver(&self, what: Delivery) {
        let what = LOCAL.with(|l| match l.borrow_mut().as_mut() {
            Some(local) if local.loop_id == self.loop_id => {
                local.items.push((self.key, self.generation, what));
                None
            }
            _ => Some(what),
        });
        if let Some(what) = what {
            let mut inbox = self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner());
            let was_empty = inbox.is_empty();
            inbox.push((self.key, self.generation, what));
            drop(inbox);
            // One wake per batch: the loop takes the whole inbox at once.
            if was_empty {
                let _ = self.shared.waker.wake();
            }
        }
    }
}

impl Outbox for EventOutbox {
    fn push(&self, line: &Line) {
        self.deliver(Delivery::Line(line.clone()));
    }

    fn close(&self, reason: &str) {
        self.deliver(Delivery::Close(reason.to_string()));
    }
}

/// A running `event` server.
pub(super) struct Loops {
    stop: Arc<AtomicBool>,
    shared: Vec<Arc<Shared>>,
    handles: Vec<JoinHandle<()>>,
}

pub(super) fn start(
    config: &ChatConfig,
    listener: TcpListener,
    hub: Arc<Hub>,
) -> io::Result<Loops> {
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut loops = Loops {
        stop: stop.clone(),
        shared: Vec::new(),
        handles: Vec::new(),
    };
    for k in 0..config.workers {
        let poll = Poll::new()?;
        let shared = Arc::new(Shared {
            inbox: Mutex::new(Vec::new()),
            waker: Waker::new(poll.registry(), WAKER)?,
        });
        let mut own = mio::net::TcpListener::from_std(listener.try_clone()?);
        poll.registry()
            .register(&mut own, LISTENER, Interest::READABLE)?;
        let cpu = (!config.worker_cpus.is_empty())
            .then(|| config.worker_cpus[k % config.worker_cpus.len()]);
        let lp = Loop {
            id: k,
            poll,
            listener: own,
            conns: Slab::new(),
            shared: shared.clone(),
            hub: hub.clone(),
            stop: stop.clone(),
            bound: config.send_queue,
            max: config.max_connections,
            next_generation: 0,
            dirty: Vec::new(),
        };
        let (ready_tx, ready_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(format!("chat-loop-{k}"))
            .spawn(move || {
                let pinned = match cpu {
                    Some(c) => smtlab_sys::set_affinity(0, &[c].into_iter().collect()),
                    None => Ok(()),
                };
                let ok = pinned.is_ok();
                let _ = ready_tx.send(pinned);
                if ok {
                    lp.run();
                }
            })?;
        loops.shared.push(shared);
        loops.handles.push(handle);
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(io::Error::other("a chat loop ended at start")),
        }
    }
    Ok(loops)
}

impl Running for Loops {
    fn stop(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        for s in &self.shared {
            let _ = s.waker.wake();
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        Ok(())
    }

    fn threads(&self) -> usize {
        self.handles.iter().filter(|h| !h.is_finished()).count()
    }
}

impl Drop for Loops {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

struct Conn {
    stream: mio::net::TcpStream,
    generation: u64,
    session: Session,
    lines: Lines,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    sent: usize,
    /// Registered for writability too (output is blocked).
    writable: bool,
    /// Close once `out` is written (after QUIT), with this reason.
    closing: Option<String>,
}

struct Loop {
    id: usize,
    poll: Poll,
    listener: mio::net::TcpListener,
    conns: Slab<Conn>,
    shared: Arc<Shared>,
    hub: Arc<Hub>,
    stop: Arc<AtomicBool>,
    bound: usize,
    max: usize,
    next_generation: u64,
    /// Connections with output to write before sleeping.
    dirty: Vec<usize>,
}

impl Loop {
    fn run(mut self) {
        LOCAL.with(|l| {
            *l.borrow_mut() = Some(Local {
                loop_id: self.id,
                items: Vec::new(),
            })
        });
        let mut events = Events::with_capacity(1024);
        let mut scratch = vec![0u8; SCRATCH];
        let mut accept_again = false;
        while !self.stop.load(Ordering::SeqCst) {
            let timeout = accept_again.then_some(std::time::Duration::ZERO);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break;
            }
            if accept_again {
                accept_again = self.accept();
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => accept_again = self.accept(),
                    WAKER => self.take_inbox(),
                    Token(key) => {
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            self.read(key, &mut scratch);
                        }
                        if event.is_writable() {
                            self.dirty.push(key);
                        }
                    }
                }
            }
            self.take_inbox();
            self.flush_dirty();
        }
        // Stopping: every connection closed, quietly.
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.close(key, "Server stopping");
        }
        LOCAL.with(|l| *l.borrow_mut() = None);
    }

    /// Accepts up to a batch; true if more may be waiting.
    fn accept(&mut self) -> bool {
        for _ in 0..ACCEPT_BATCH {
            match self.listener.accept() {
                Ok((stream, addr)) => self.admit(stream, addr),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    // Out of descriptors or memory: counted; the next
                    // readiness of the listener retries.
                    self.hub.counters.io_errors.fetch_add(1, Relaxed);
                    return false;
                }
            }
        }
        true
    }

    fn admit(&mut self, mut stream: mio::net::TcpStream, addr: std::net::SocketAddr) {
        let counters = &self.hub.counters;
        counters.accepted.fetch_add(1, Relaxed);
        if counters.open.load(Relaxed) as usize >= self.max {
            counters.overloads.fetch_add(1, Relaxed);
            let _ = stream.write(
                format!(
                    "ERROR :Closing Link: {} (Server full)\r\n",
                    self.hub.server_name
                )
                .as_bytes(),
            );
            return;
        }
        let _ = stream.set_nodelay(true);
        let entry = self.conns.vacant_entry();
        let key = entry.key();
        if self
            .poll
            .registry()
            .register(&mut stream, Token(key), Interest::READABLE)
            .is_err()
        {
            counters.io_errors.fetch_add(1, Relaxed);
            return;
        }
        self.next_generation += 1;
        let outbox = Arc::new(EventOutbox {
            loop_id: self.id,
            key,
            generation: self.next_generation,
            shared: self.shared.clone(),
        });
        let client = self.hub.new_client(addr.ip().to_string(), outbox);
        entry.insert(Conn {
            stream,
            generation: self.next_generation,
            session: Session::new(client),
            lines: Lines::default(),
            out: Vec::new(),
            sent: 0,
            writable: false,
            closing: None,
        });
        counters.open.fetch_add(1, Relaxed);
    }

    /// Reads until the socket has nothing more (mio is edge-triggered),
    /// handing each line to the session.
    fn read(&mut self, key: usize, scratch: &mut [u8]) {
        let hub = self.hub.clone();
        let mut end: Option<String> = None;
        {
            let Some(conn) = self.conns.get_mut(key) else {
                return;
            };
            if conn.closing.is_some() {
                return;
            }
            loop {
                match conn.stream.read(scratch) {
                    Ok(0) => {
                        end = Some("Connection closed".into());
                        break;
                    }
                    Ok(n) => {
                        let (session, lines) = (&mut conn.session, &mut conn.lines);
                        let mut quit = false;
                        lines.feed(&scratch[..n], |input| {
                            quit = session.input(&hub, input) == Flow::Quit;
                            !quit
                        });
                        if quit {
                            conn.closing = Some("Quit".into());
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        end = Some("Read error".into());
                        break;
                    }
                }
            }
        }
        self.take_local();
        if let Some(why) = end {
            self.close(key, &why);
        } else if self.conns.get(key).is_some_and(|c| c.closing.is_some()) {
            self.dirty.push(key);
        }
    }

    /// Deliveries this loop made to its own connections.
    fn take_local(&mut self) {
        loop {
            let items = LOCAL.with(|l| {
                l.borrow_mut()
                    .as_mut()
                    .map(|local| std::mem::take(&mut local.items))
                    .unwrap_or_default()
            });
            if items.is_empty() {
                return;
            }
            self.apply(items);
        }
    }

    /// Deliveries from other loops.
    fn take_inbox(&mut self) {
        let items =
            std::mem::take(&mut *self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner()));
        if !items.is_empty() {
            self.apply(items);
        }
        self.take_local();
    }

    fn apply(&mut self, items: Vec<Item>) {
        for (key, generation, what) in items {
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            // A closing connection (after QUIT) still gets what comes before
            // it is closed: its ERROR line is among it.
            if conn.generation != generation {
                continue;
            }
            match what {
                Delivery::Line(line) => {
                    if conn.out.len() - conn.sent + line.len() > self.bound {
                        self.hub.counters.send_queue_closes.fetch_add(1, Relaxed);
                        self.hub.count_close(SENDQ_EXCEEDED);
                        self.close(key, SENDQ_EXCEEDED);
                        continue;
                    }
                    if conn.out.is_empty() {
                        self.dirty.push(key);
                    }
                    conn.out.extend_from_slice(&line);
                }
                Delivery::Close(why) => {
                    self.hub.count_close(&why);
                    self.close(key, &why);
                }
            }
        }
    }

    fn flush_dirty(&mut self) {
        while !self.dirty.is_empty() {
            let dirty = std::mem::take(&mut self.dirty);
            for key in dirty {
                self.write(key);
            }
            // Closing connections may have told others (QUIT lines).
            self.take_local();
        }
    }

    fn write(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        let mut failed = false;
        while conn.sent < conn.out.len() {
            match conn.stream.write(&conn.out[conn.sent..]) {
                Ok(0) => {
                    failed = true;
                    break;
                }
                Ok(n) => {
                    conn.sent += n;
                    self.hub.counters.bytes_out.fetch_add(n as u64, Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            self.hub.counters.io_errors.fetch_add(1, Relaxed);
            return self.close(key, "Write error");
        }
        let drained = conn.sent == conn.out.len();
        if drained {
            // Idle connections keep no buffer.
            conn.out = Vec::new();
            conn.sent = 0;
            if let Some(why) = conn.closing.clone() {
                return self.close(key, &why);
            }
        } else if conn.sent > conn.out.len() / 2 {
            conn.out.drain(..conn.sent);
            conn.sent = 0;
        }
        // Ask for writability only while output is blocked.
        if drained == conn.writable {
            let interest = if drained {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            if self
                .poll
                .registry()
                .reregister(&mut conn.stream, Token(key), interest)
                .is_ok()
            {
                conn.writable = !drained;
            }
        }
    }

    /// Ends a connection: the session tells the others, the socket closes.
    fn close(&mut self, key: usize, why: &str) {
        if !self.conns.contains(key) {
            return;
        }
        let mut conn = self.conns.remove(key);
        let _ = self.poll.registry().deregister(&mut conn.stream);
        if why == SENDQ_EXCEEDED {
            let _ = conn.stream.write(
                format!(
                    "ERROR :Closing Link: {} ({why})\r\n",
                    conn.session.client.host
                )
                .as_bytes(),
            );
        }
        let why = if why == "Quit" { "Client Quit" } else { why };
        conn.session.end(&self.hub, why);
        self.hub.counters.open.fetch_sub(1, Relaxed);
    }
}
