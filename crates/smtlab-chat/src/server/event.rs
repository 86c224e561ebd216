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
//! Back-pressure (see `hub.rs`): each connection's [`Backlog`] counts, in
//! atomics every loop can read, the bytes handed to it and not yet written
//! (in transit included). A line that takes a connection past its
//! high-water mark pauses its sender: the loop keeps the sender's input
//! not yet handled (at most one read) and stops reading it; after each
//! turn's writes it looks at its paused connections and reads again those
//! whose recipients have room. A loop that drains a connection some other
//! loop waits for wakes the loops once. Recipients still without room
//! [`STALL`] after the pause began are marked not reading, and the sender
//! goes on. The cost per delivered line: a few plain loads and a store (an
//! atomic add when it comes from another loop); per write a store and a
//! load; no system call, and nothing more while no queue is full.
//!
//! Closing: the session ends at once (the others are told), and the
//! connection stays only to write what it has — after `SendQ exceeded`
//! only the end of a line already started — and its `ERROR` line, for at
//! most [`CLOSE_GRACE`]; it reads nothing more.
//!
//! Memory: an idle connection holds its session, its slab entry and no
//! buffer (input is read into the loop's scratch buffer; a partial line,
//! input held while paused and output are kept only while they exist).

use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use super::config::ChatConfig;
use super::hub::{
    error_line, finish_line, high_water, low_water, Client, Hub, Line, Outbox, CLOSE_GRACE, STALL,
};
use super::irc::Lines;
use super::running::Running;
use super::session::{Flow, Session};
use super::stats::SENDQ_EXCEEDED;

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX - 2);
/// Bytes read from the sockets at a time (one per loop).
const SCRATCH: usize = 64 << 10;
/// Connections accepted in one turn before the loop serves the others.
const ACCEPT_BATCH: usize = 64;
/// Why a connection closed when its client said QUIT.
const QUIT: &str = "Quit";
const WRITE_ERROR: &str = "Write error";
const STOPPING: &str = "Server stopping";

/// What goes to a connection of a loop: a line, and whether it is a reply
/// to the connection's own command (never bounded).
type Item = (usize, u64, Line, bool);

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

/// One connection's output as every loop sees it: bytes handed to it (in
/// transit or buffered) and not yet written are `from_own + from_others -
/// written`, three counters that only grow (wrapping), so that its own
/// loop — which makes most deliveries, and all the writes — counts with
/// plain stores, and only other loops pay an atomic add.
#[derive(Default)]
struct Backlog {
    /// Bytes handed to it by its own loop (stored by that loop only).
    from_own: AtomicUsize,
    /// Bytes handed to it by other loops.
    from_others: AtomicUsize,
    /// Bytes written to its socket (stored by its loop only).
    written: AtomicUsize,
    not_reading: AtomicBool,
    closed: AtomicBool,
    /// A loop found it without room: wake the loops once it has.
    wanted: AtomicBool,
}

impl Backlog {
    fn queued(&self) -> usize {
        let handed = self
            .from_own
            .load(SeqCst)
            .wrapping_add(self.from_others.load(SeqCst));
        handed.wrapping_sub(self.written.load(SeqCst))
    }
}

/// A connection's [`Outbox`]: where it lives.
struct EventOutbox {
    loop_id: usize,
    key: usize,
    generation: u64,
    shared: Arc<Shared>,
    backlog: Backlog,
    high: usize,
    low: usize,
}

impl EventOutbox {
    fn deliver(&self, line: &Line, reply: bool) -> bool {
        let b = &self.backlog;
        if b.closed.load(Relaxed) {
            return false;
        }
        let item = (self.key, self.generation, line.clone(), reply);
        let item = LOCAL.with(|l| match l.borrow_mut().as_mut() {
            Some(local) if local.loop_id == self.loop_id => {
                local.items.push(item);
                None
            }
            _ => Some(item),
        });
        if item.is_none() {
            // Its own loop: the only thread that stores this counter.
            let own = b.from_own.load(Relaxed);
            b.from_own.store(own.wrapping_add(line.len()), Relaxed);
        } else {
            b.from_others.fetch_add(line.len(), Relaxed);
        }
        let queued = b.queued();
        if let Some(item) = item {
            let mut inbox = self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner());
            let was_empty = inbox.is_empty();
            inbox.push(item);
            drop(inbox);
            // One wake per batch: the loop takes the whole inbox at once.
            if was_empty {
                let _ = self.shared.waker.wake();
            }
        }
        queued > self.high && !b.not_reading.load(Relaxed)
    }

    /// Its own bytes are down to the low-water mark (replies wait for
    /// nothing else: being marked not reading does not count).
    fn drained(&self) -> bool {
        self.backlog.closed.load(Relaxed) || self.backlog.queued() <= self.low
    }
}

impl Outbox for EventOutbox {
    fn push(&self, line: &Line) -> bool {
        self.deliver(line, false)
    }

    fn reply(&self, line: &Line) -> bool {
        self.deliver(line, true)
    }

    /// Asked by a loop with a paused sender: a no also asks the owner's
    /// loop to wake the loops once there is room (the flag is set before
    /// the second look, and the owner clears it after it drained: one of
    /// the two sees the other).
    fn has_room(&self) -> bool {
        let b = &self.backlog;
        let room = || b.closed.load(SeqCst) || b.not_reading.load(SeqCst) || b.queued() <= self.low;
        if room() {
            return true;
        }
        b.wanted.store(true, SeqCst);
        room()
    }

    fn mark_not_reading(&self) {
        self.backlog.not_reading.store(true, SeqCst);
    }

    /// Loops never block: this only looks.
    fn wait_room(&self, _slice: Duration) -> bool {
        self.has_room()
    }
}

/// A running `event` server.
pub(super) struct Loops {
    stop: Arc<AtomicBool>,
    shared: Arc<Vec<Arc<Shared>>>,
    handles: Vec<JoinHandle<()>>,
}

pub(super) fn start(
    config: &ChatConfig,
    listener: TcpListener,
    hub: Arc<Hub>,
) -> io::Result<Loops> {
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut polls = Vec::new();
    let mut shared = Vec::new();
    for _ in 0..config.workers {
        let poll = Poll::new()?;
        shared.push(Arc::new(Shared {
            inbox: Mutex::new(Vec::new()),
            waker: Waker::new(poll.registry(), WAKER)?,
        }));
        polls.push(poll);
    }
    // Every loop can wake every other one.
    let shared = Arc::new(shared);
    let mut loops = Loops {
        stop: stop.clone(),
        shared: shared.clone(),
        handles: Vec::new(),
    };
    for (k, poll) in polls.into_iter().enumerate() {
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
            shared: shared[k].clone(),
            all: shared.clone(),
            hub: hub.clone(),
            stop: stop.clone(),
            bound: config.send_queue,
            max: config.max_connections,
            next_generation: 0,
            dirty: Vec::new(),
            paused: Vec::new(),
            closing: Vec::new(),
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
        for s in self.shared.iter() {
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

/// A sender waiting for room.
struct Pause {
    /// The connections it waits for.
    on: Vec<Arc<Client>>,
    /// When it stops waiting for the others than itself.
    until: Instant,
}

struct Conn {
    stream: mio::net::TcpStream,
    generation: u64,
    session: Session,
    lines: Lines,
    outbox: Arc<EventOutbox>,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    sent: usize,
    /// The last byte written did not end a line.
    mid_line: bool,
    /// Registered for writability too (output is blocked).
    writable: bool,
    /// Read and not yet handled, kept while paused.
    input: Vec<u8>,
    paused: Option<Pause>,
    /// Closed: the session ended, what is left is written until then.
    closing: Option<Instant>,
}

/// What handling some input ended with.
enum Handled {
    /// All of it.
    Done,
    /// Paused after `usize` bytes, waiting for these connections.
    Wait(usize, Vec<Arc<Client>>),
    Quit,
}

impl Conn {
    fn handle(&mut self, hub: &Hub, data: &[u8]) -> Handled {
        let (session, lines) = (&mut self.session, &mut self.lines);
        let mut flow = Flow::Continue;
        let used = lines.feed(data, |input| {
            flow = session.input(hub, input);
            flow == Flow::Continue
        });
        match flow {
            Flow::Continue => Handled::Done,
            Flow::Wait => Handled::Wait(used, session.take_full()),
            Flow::Quit => Handled::Quit,
        }
    }
}

struct Loop {
    id: usize,
    poll: Poll,
    listener: mio::net::TcpListener,
    conns: Slab<Conn>,
    shared: Arc<Shared>,
    all: Arc<Vec<Arc<Shared>>>,
    hub: Arc<Hub>,
    stop: Arc<AtomicBool>,
    bound: usize,
    max: usize,
    next_generation: u64,
    /// Connections with output to write before sleeping.
    dirty: Vec<usize>,
    /// Paused connections (key, generation).
    paused: Vec<(usize, u64)>,
    /// Closing connections (key, generation).
    closing: Vec<(usize, u64)>,
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
        let mut resume_again = false;
        while !self.stop.load(Ordering::SeqCst) {
            let timeout = if accept_again || resume_again {
                Some(Duration::ZERO)
            } else {
                self.next_timer()
            };
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
                        // An error also ends a paused or closing connection
                        // that has output: its write fails.
                        if event.is_writable() || event.is_error() {
                            self.dirty.push(key);
                        }
                    }
                }
            }
            self.take_inbox();
            self.flush_dirty();
            resume_again = self.resume(&mut scratch);
            self.flush_dirty();
            self.expire();
        }
        // Stopping: every connection told why, in one write, and closed.
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.close(key, STOPPING);
        }
        self.take_local();
        self.flush_dirty();
        let keys: Vec<usize> = self.conns.iter().map(|(k, _)| k).collect();
        for key in keys {
            self.remove(key);
        }
        LOCAL.with(|l| *l.borrow_mut() = None);
    }

    /// Until the next pause to look at or closing connection to end.
    fn next_timer(&self) -> Option<Duration> {
        let paused = self.paused.iter().filter_map(|&(k, g)| {
            let c = self.conns.get(k).filter(|c| c.generation == g)?;
            c.paused.as_ref().map(|p| p.until)
        });
        let closing = self.closing.iter().filter_map(|&(k, g)| {
            let c = self.conns.get(k).filter(|c| c.generation == g)?;
            c.closing
        });
        let next = paused.chain(closing).min()?;
        Some(next.saturating_duration_since(Instant::now()))
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
            let _ = stream.write(&error_line(&self.hub.server_name, "Server full"));
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
            backlog: Backlog::default(),
            high: high_water(self.bound),
            low: low_water(self.bound),
        });
        let client = self.hub.new_client(addr.ip().to_string(), outbox.clone());
        entry.insert(Conn {
            stream,
            generation: self.next_generation,
            session: Session::new(client),
            lines: Lines::default(),
            outbox,
            out: Vec::new(),
            sent: 0,
            mid_line: false,
            writable: false,
            input: Vec::new(),
            paused: None,
            closing: None,
        });
        counters.open.fetch_add(1, Relaxed);
    }

    /// Handles what is held, then reads until the socket has nothing more
    /// (mio is edge-triggered), handing each line to the session, unless
    /// the connection pauses.
    fn read(&mut self, key: usize, scratch: &mut [u8]) {
        let hub = self.hub.clone();
        let mut end: Option<&str> = None;
        let mut wait = None;
        {
            let Some(conn) = self.conns.get_mut(key) else {
                return;
            };
            if conn.closing.is_some() || conn.paused.is_some() {
                return;
            }
            let held = std::mem::take(&mut conn.input);
            match conn.handle(&hub, &held) {
                Handled::Done => {}
                Handled::Wait(used, full) => {
                    conn.input = held[used..].to_vec();
                    wait = Some(full);
                }
                Handled::Quit => end = Some(QUIT),
            }
            while end.is_none() && wait.is_none() {
                match conn.stream.read(scratch) {
                    Ok(0) => end = Some("Connection closed"),
                    Ok(n) => match conn.handle(&hub, &scratch[..n]) {
                        Handled::Done => {}
                        Handled::Wait(used, full) => {
                            conn.input = scratch[used..n].to_vec();
                            wait = Some(full);
                        }
                        Handled::Quit => end = Some(QUIT),
                    },
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => end = Some("Read error"),
                }
            }
        }
        // Its own replies (QUIT's ERROR line among them) first.
        self.take_local();
        if let Some(why) = end {
            self.close(key, why);
        } else if let Some(full) = wait {
            self.pause(key, full);
        }
    }

    fn pause(&mut self, key: usize, full: Vec<Arc<Client>>) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        conn.paused = Some(Pause {
            on: full,
            until: Instant::now() + STALL,
        });
        self.paused.push((key, conn.generation));
    }

    /// Reads again the paused connections whose recipients have room (or
    /// were found not reading); true if any did.
    fn resume(&mut self, scratch: &mut [u8]) -> bool {
        if self.paused.is_empty() {
            return false;
        }
        let now = Instant::now();
        let mut ready = Vec::new();
        for (key, generation) in std::mem::take(&mut self.paused) {
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            let own = conn.session.client.id;
            let outbox = conn.outbox.clone();
            let Some(pause) = conn
                .paused
                .as_mut()
                .filter(|_| conn.generation == generation)
            else {
                continue;
            };
            let late = now >= pause.until;
            pause.on.retain(|c| {
                if c.id == own {
                    // Its own replies: it waits as long as it takes.
                    return !outbox.drained();
                }
                if c.out.has_room() {
                    return false;
                }
                if late {
                    c.out.mark_not_reading();
                    return false;
                }
                true
            });
            if pause.on.is_empty() {
                conn.paused = None;
                ready.push(key);
            } else {
                self.paused.push((key, generation));
            }
        }
        for &key in &ready {
            self.read(key, scratch);
        }
        !ready.is_empty()
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
        for (key, generation, line, reply) in items {
            let Some(conn) = self.conns.get_mut(key) else {
                continue;
            };
            if conn.generation != generation || conn.closing.is_some() {
                continue;
            }
            let unsent = conn.out.len() - conn.sent;
            // An empty buffer always takes a line; replies are not bounded
            // (the connection stops reading instead).
            if !reply && unsent > 0 && unsent + line.len() > self.bound {
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
        let mut wrote = 0;
        while conn.sent < conn.out.len() {
            match conn.stream.write(&conn.out[conn.sent..]) {
                Ok(0) => {
                    failed = true;
                    break;
                }
                Ok(n) => {
                    conn.sent += n;
                    wrote += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if wrote > 0 {
            conn.mid_line = conn.out[conn.sent - 1] != b'\n';
            self.hub.counters.bytes_out.fetch_add(wrote as u64, Relaxed);
            let b = &conn.outbox.backlog;
            if conn.closing.is_none() {
                // Its own loop is the only thread that stores it; the
                // store is ordered before the look at `wanted` (see
                // `has_room`).
                let written = b.written.load(Relaxed).wrapping_add(wrote);
                b.written.store(written, SeqCst);
                let left = b.queued();
                if left <= conn.outbox.low {
                    b.not_reading.store(false, SeqCst);
                    if b.wanted.load(SeqCst) && b.wanted.swap(false, SeqCst) {
                        wake_others(&self.all, self.id);
                    }
                }
            }
        }
        if failed {
            if conn.closing.is_some() {
                // Its ERROR line to a client that is gone: no error of its
                // own.
                return self.remove(key);
            }
            self.hub.counters.io_errors.fetch_add(1, Relaxed);
            return self.close(key, WRITE_ERROR);
        }
        let drained = conn.sent == conn.out.len();
        if drained {
            // Idle connections keep no buffer.
            conn.out = Vec::new();
            conn.sent = 0;
            if conn.closing.is_some() {
                return self.remove(key);
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

    /// Ends a connection: the session tells the others now; what the
    /// connection still has to write, and its `ERROR` line, go out within
    /// the grace (at once when the server stops), then it is removed.
    fn close(&mut self, key: usize, why: &str) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if conn.closing.is_some() {
            return;
        }
        let b = &conn.outbox.backlog;
        b.closed.store(true, SeqCst);
        if b.wanted.swap(false, SeqCst) {
            wake_others(&self.all, self.id);
        }
        conn.paused = None;
        conn.input = Vec::new();
        if why == SENDQ_EXCEEDED {
            let keep = finish_line(&conn.out[conn.sent..], conn.mid_line);
            conn.out.truncate(conn.sent + keep);
        }
        // QUIT queued its own ERROR line; after a write error nothing goes.
        if why != QUIT && why != WRITE_ERROR {
            let line = error_line(&conn.session.client.host, why);
            conn.out.extend_from_slice(&line);
        }
        let grace = if why == STOPPING {
            Duration::ZERO
        } else {
            CLOSE_GRACE
        };
        conn.closing = Some(Instant::now() + grace);
        let generation = conn.generation;
        let told = if why == QUIT { "Client Quit" } else { why };
        conn.session.end(&self.hub, told);
        if why == WRITE_ERROR {
            return self.remove(key);
        }
        self.closing.push((key, generation));
        self.dirty.push(key);
    }

    /// Closing connections past their grace are removed.
    fn expire(&mut self) {
        if self.closing.is_empty() {
            return;
        }
        let now = Instant::now();
        for (key, generation) in std::mem::take(&mut self.closing) {
            let Some(conn) = self.conns.get(key).filter(|c| c.generation == generation) else {
                continue;
            };
            if conn.closing.is_some_and(|d| now >= d) {
                self.remove(key);
            } else {
                self.closing.push((key, generation));
            }
        }
    }

    /// The socket closes. What the client sent and nobody will read is
    /// taken first, so closing sends a FIN after the ERROR line rather than
    /// a reset that could discard it at the client.
    fn remove(&mut self, key: usize) {
        if !self.conns.contains(key) {
            return;
        }
        let mut conn = self.conns.remove(key);
        let _ = self.poll.registry().deregister(&mut conn.stream);
        let mut sink = [0u8; 512];
        for _ in 0..8 {
            match conn.stream.read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        self.hub.counters.open.fetch_sub(1, Relaxed);
    }
}

/// Wakes every loop but `me` (they look at their paused connections).
fn wake_others(all: &[Arc<Shared>], me: usize) {
    for (k, s) in all.iter().enumerate() {
        if k != me {
            let _ = s.waker.wake();
        }
    }
}
