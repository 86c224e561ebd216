//! The `staged` architecture (Haboob on SEDA): a request goes through four
//! stages, each with its own pool of `workers` threads and a bounded queue
//! in front of it:
//!
//! ```text
//! listen backlog → accept → [read queue] → read → [file queue] → file → [send queue] → send
//!                              ↑                                                        │
//!                              └──────────── keep-alive (and lingering) connections ────┘
//! ```
//!
//! * **accept**: threads blocked in `accept` on the listening socket; each
//!   new connection is made non-blocking and queued for reading (its queue
//!   is the kernel's listen backlog, which it cannot see: its queue
//!   lengths are reported as 0);
//! * **read**: each thread has its own `mio::Poll` and waker, takes
//!   connections from the read queue, and reads them as they become
//!   readable until a whole request head is there, which it queues for the
//!   file stage — SEDA's asynchronous socket reads, so a client sending a
//!   byte a second holds no thread. It also answers 408 to connections
//!   past their deadline, and drains connections after a closing response;
//! * **file**: threads blocked on the file queue find the file and build
//!   the response ([`http::respond`]; a request the parser refused gets
//!   its error response here too);
//! * **send**: each thread has its own poll too: it writes a response as
//!   far as the socket takes it (the head, then the file with `sendfile`),
//!   waits for writable when the socket is full, so a slow reader holds no
//!   thread either, then hands a keep-alive connection back to the read
//!   stage.
//!
//! A connection belongs to one stage at a time: it is registered with a
//! stage thread's poll while that thread waits on it, and deregistered
//! when handed on.
//!
//! The queues are crossbeam-channel bounded channels: several threads take
//! from one queue (`std::sync::mpsc` has one receiver only), `try_send`
//! refuses at once when the queue is full, and `len` gives the queue
//! length seen by each item entering it. An item refused by a full queue
//! is answered 503 and its connection closed (counted in that stage's
//! `refused` and in `overloads`); so is a new connection past
//! `max_connections`. A thread that queues for a polling stage wakes one
//! of its threads (round robin) through its `mio::Waker`.
//!
//! Per stage, [`Server::stats`](super::Server::stats) reports items,
//! queue lengths at entry, mean time in the handler per item and refusals.
//! Thread k of every stage is pinned to `worker_cpus[k % len]`.
//!
//! Stopping: a flag; `shutdown` of the listening socket wakes the accept
//! threads; the wakers wake the read and send threads; the file threads
//! end when the read threads, which hold the only senders to their queue,
//! are gone. Threads are joined in pipeline order, and every connection,
//! in a poll or in a queue, is closed as it is dropped.

use std::io;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use super::config::ServerConfig;
use super::nonblocking::{self, Conn, End, Flow, Linger, Next, Outgoing, READ_CHUNK};
use super::running::Running;
use super::stats::{Counters, ServerStats, StageStats};
use crate::http::{self, Request, Site, Status};

const WAKER: Token = Token(usize::MAX);
/// How often a polling stage checks its connections' deadlines.
const TICK: Duration = Duration::from_millis(100);
const EVENTS: usize = 1024;
/// Items a polling thread takes from its queue in one turn before it looks
/// at its sockets again.
const TAKE_BATCH: usize = 64;

/// The stages, in pipeline order: indexes into the meters.
const ACCEPT: usize = 0;
const READ: usize = 1;
const FILE: usize = 2;
const SEND: usize = 3;
const NAMES: [&str; 4] = ["accept", "read", "file", "send"];

/// What one stage counted.
#[derive(Debug, Default)]
struct Meter {
    /// Items taken (counted as the handler starts, so a stuck handler's
    /// item shows).
    items: AtomicU64,
    /// Items that entered the queue, and the queue lengths they saw.
    queued: AtomicU64,
    queue_sum: AtomicU64,
    queue_max: AtomicU64,
    busy_ns: AtomicU64,
    refused: AtomicU64,
}

impl Meter {
    /// An item enters the handler: count it and start its clock.
    fn begin(&self) -> Instant {
        self.items.fetch_add(1, Ordering::Relaxed);
        Instant::now()
    }

    fn busy(&self, started: Instant) {
        let ns = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
    }

    fn stats(&self, name: &str, threads: usize) -> StageStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (items, queued) = (get(&self.items), get(&self.queued));
        StageStats {
            name: name.to_string(),
            threads,
            items,
            queue_mean: if queued == 0 {
                0.0
            } else {
                get(&self.queue_sum) as f64 / queued as f64
            },
            queue_max: get(&self.queue_max),
            busy_us_mean: if items == 0 {
                0.0
            } else {
                get(&self.busy_ns) as f64 / items as f64 / 1000.0
            },
            refused: get(&self.refused),
        }
    }
}

/// Queue `item` for the stage `meter` measures: `Err(Full)` when the
/// queue is full (the caller answers 503), `Err(Disconnected)` when the
/// stage has stopped.
fn hand<T>(tx: &Sender<T>, item: T, meter: &Meter) -> Result<(), TrySendError<T>> {
    let len = tx.len() as u64;
    tx.try_send(item)?;
    meter.queued.fetch_add(1, Ordering::Relaxed);
    meter.queue_sum.fetch_add(len, Ordering::Relaxed);
    meter.queue_max.fetch_max(len, Ordering::Relaxed);
    Ok(())
}

/// The wakers of a polling stage's threads.
struct Wakers {
    list: Vec<Waker>,
    next: AtomicUsize,
}

impl Wakers {
    /// Wake one thread (round robin): it takes what is queued.
    fn wake_one(&self) {
        let k = self.next.fetch_add(1, Ordering::Relaxed) % self.list.len();
        let _ = self.list[k].wake();
    }

    fn wake_all(&self) {
        for w in &self.list {
            let _ = w.wake();
        }
    }
}

/// What the file stage gets: a connection and what to answer.
struct FileJob {
    conn: Conn,
    wanted: Wanted,
}

enum Wanted {
    Request(Request),
    /// The parser refused the request: this error, then close.
    Error(Status, u8),
}

/// What the send stage gets.
struct SendJob {
    conn: Conn,
    out: Outgoing,
}

/// What every stage thread shares.
struct Shared {
    site: Site,
    counters: Arc<Counters>,
    meters: [Meter; 4],
    stop: AtomicBool,
    timeout: Duration,
    max_connections: usize,
    read_wakers: Wakers,
    send_wakers: Wakers,
}

/// A running `staged` server.
pub(crate) struct Staged {
    shared: Arc<Shared>,
    listener: Option<Arc<TcpListener>>,
    /// Threads by stage, in pipeline order.
    threads: [Vec<JoinHandle<()>>; 4],
    workers: usize,
}

pub(crate) fn start(
    config: &ServerConfig,
    listener: TcpListener,
    site: Site,
    counters: Arc<Counters>,
) -> io::Result<Staged> {
    smtlab_serving::check_worker_cpus(&config.worker_cpus)?;
    listener.set_nonblocking(false)?;
    let workers = config.workers;
    let capacity = config.queue_capacity.max(1);
    let (read_tx, read_rx) = crossbeam_channel::bounded::<Conn>(capacity);
    let (file_tx, file_rx) = crossbeam_channel::bounded::<FileJob>(capacity);
    let (send_tx, send_rx) = crossbeam_channel::bounded::<SendJob>(capacity);
    let mut read_polls = Vec::with_capacity(workers);
    let mut send_polls = Vec::with_capacity(workers);
    let mut read_wakers = Vec::with_capacity(workers);
    let mut send_wakers = Vec::with_capacity(workers);
    for _ in 0..workers {
        let poll = Poll::new()?;
        read_wakers.push(Waker::new(poll.registry(), WAKER)?);
        read_polls.push(poll);
        let poll = Poll::new()?;
        send_wakers.push(Waker::new(poll.registry(), WAKER)?);
        send_polls.push(poll);
    }
    let shared = Arc::new(Shared {
        site,
        counters,
        meters: Default::default(),
        stop: AtomicBool::new(false),
        timeout: config.request_timeout,
        max_connections: config.max_connections,
        read_wakers: Wakers {
            list: read_wakers,
            next: AtomicUsize::new(0),
        },
        send_wakers: Wakers {
            list: send_wakers,
            next: AtomicUsize::new(0),
        },
    });
    let listener = Arc::new(listener);
    let mut server = Staged {
        shared: shared.clone(),
        listener: Some(listener.clone()),
        threads: Default::default(),
        workers,
    };
    // Every thread says whether it could pin itself before it serves.
    let (ready_tx, ready) = mpsc::channel::<io::Result<()>>();
    let mut spawned = 0;
    let mut spawn = |stage: usize, k: usize, work: Box<dyn FnOnce() + Send>| -> io::Result<()> {
        let cpu = nonblocking::worker_cpu(&config.worker_cpus, k);
        let tx = ready_tx.clone();
        let handle = std::thread::Builder::new()
            .name(format!("web-{}-{k}", NAMES[stage]))
            .spawn(move || {
                let pinned = nonblocking::pin(cpu);
                let failed = pinned.is_err();
                let _ = tx.send(pinned);
                if !failed {
                    work();
                }
            })?;
        server.threads[stage].push(handle);
        spawned += 1;
        Ok(())
    };
    let mut started = Ok(());
    for k in 0..workers {
        let (shared, listener, read_tx) = (shared.clone(), listener.clone(), read_tx.clone());
        started = started.and_then(|()| {
            spawn(
                ACCEPT,
                k,
                Box::new(move || accept_stage(&shared, &listener, &read_tx)),
            )
        });
    }
    for (k, poll) in read_polls.into_iter().enumerate() {
        let stage = ReadStage {
            poll,
            conns: Slab::new(),
            rx: read_rx.clone(),
            file_tx: file_tx.clone(),
            shared: shared.clone(),
            scratch: vec![0u8; READ_CHUNK],
        };
        started = started.and_then(|()| spawn(READ, k, Box::new(move || run_poll_stage(stage))));
    }
    for k in 0..workers {
        let (shared, rx, send_tx) = (shared.clone(), file_rx.clone(), send_tx.clone());
        started = started.and_then(|()| {
            spawn(
                FILE,
                k,
                Box::new(move || file_stage(&shared, &rx, &send_tx)),
            )
        });
    }
    for (k, poll) in send_polls.into_iter().enumerate() {
        let stage = SendStage {
            poll,
            conns: Slab::new(),
            rx: send_rx.clone(),
            read_tx: read_tx.clone(),
            shared: shared.clone(),
        };
        started = started.and_then(|()| spawn(SEND, k, Box::new(move || run_poll_stage(stage))));
    }
    // The threads hold every sender and receiver now: a stage ends when
    // the one before it has.
    drop((
        read_tx, read_rx, file_tx, file_rx, send_tx, send_rx, ready_tx,
    ));
    for _ in 0..spawned {
        if started.is_err() {
            break;
        }
        started = ready
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("a stage thread ended before it started")));
    }
    if let Err(e) = started {
        let _ = server.stop();
        return Err(e);
    }
    Ok(server)
}

impl Running for Staged {
    fn stats(&self) -> ServerStats {
        ServerStats {
            counters: self.shared.counters.snapshot(),
            stages: NAMES
                .iter()
                .zip(&self.shared.meters)
                .map(|(name, meter)| meter.stats(name, self.workers))
                .collect(),
            processes: 1,
            // The stage threads this server started (not the caller).
            threads: 4 * self.workers,
            pids: vec![std::process::id() as i32],
        }
    }

    fn stop(&mut self) -> io::Result<()> {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(listener) = &self.listener {
            // Linux wakes every thread blocked in `accept` with EINVAL.
            let _ =
                nix::sys::socket::shutdown(listener.as_raw_fd(), nix::sys::socket::Shutdown::Both);
        }
        self.shared.read_wakers.wake_all();
        self.shared.send_wakers.wake_all();
        let mut panicked = 0;
        for stage in self.threads.iter_mut() {
            panicked += nonblocking::join_all(stage);
        }
        // The last reference: the listening socket is closed here.
        self.listener = None;
        if panicked > 0 {
            return Err(io::Error::other(format!(
                "{panicked} staged server threads panicked"
            )));
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The accept stage: accept, admit (or 503), queue for reading.
fn accept_stage(shared: &Shared, listener: &TcpListener, read_tx: &Sender<Conn>) {
    let meter = &shared.meters[ACCEPT];
    while !shared.stop.load(Ordering::SeqCst) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                after_accept_error(&e);
                continue;
            }
        };
        let started = meter.begin();
        let counters = &shared.counters;
        counters.connections.fetch_add(1, Ordering::Relaxed);
        if stream.set_nonblocking(true).is_err() {
            counters.io_errors.fetch_add(1, Ordering::Relaxed);
            meter.busy(started);
            continue;
        }
        let stream = mio::net::TcpStream::from_std(stream);
        let open = counters.open_connections.load(Ordering::Relaxed);
        if open >= shared.max_connections as u64 {
            counters.overloads.fetch_add(1, Ordering::Relaxed);
            nonblocking::refuse(stream, Status::Unavailable, counters);
            meter.busy(started);
            continue;
        }
        // A small body must not wait behind its head for an ACK.
        let _ = stream.set_nodelay(true);
        let conn = Conn::new(stream, counters.clone(), started + shared.timeout);
        to_read_stage(shared, read_tx, conn);
        meter.busy(started);
    }
}

/// What an accepting thread does after `accept` failed: try again at once
/// after an aborted connection or a signal; otherwise (out of descriptors
/// or memory) pause, so a full table does not spin a CPU.
fn after_accept_error(e: &io::Error) {
    let again = matches!(
        e.raw_os_error(),
        Some(libc::ECONNABORTED | libc::EINTR | libc::EPROTO | libc::EAGAIN)
    );
    if !again {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Queue a connection for the read stage and wake a reader; a full queue
/// refuses it with 503.
fn to_read_stage(shared: &Shared, read_tx: &Sender<Conn>, conn: Conn) {
    match hand(read_tx, conn, &shared.meters[READ]) {
        Ok(()) => shared.read_wakers.wake_one(),
        Err(TrySendError::Full(conn)) => refused(shared, READ, conn),
        // Stopping: dropping it closes it.
        Err(TrySendError::Disconnected(_)) => {}
    }
}

/// A queue of `stage` was full: 503 and close (a lingering connection,
/// whose response was sent, is just closed).
fn refused(shared: &Shared, stage: usize, conn: Conn) {
    shared.meters[stage].refused.fetch_add(1, Ordering::Relaxed);
    shared.counters.overloads.fetch_add(1, Ordering::Relaxed);
    if conn.is_lingering() {
        conn.close(End::Quiet);
    } else {
        conn.refuse(Status::Unavailable);
    }
}

/// A stage thread that waits on its connections' sockets (read, send):
/// the one loop both run, with what differs per stage.
trait PollStage {
    fn poll(&mut self) -> &mut Poll;
    fn shared(&self) -> &Shared;
    /// Take connections from the stage's queue (at most a batch: `true`
    /// when more may be waiting).
    fn take_arrivals(&mut self) -> bool;
    /// The connection with this slab key is ready.
    fn ready(&mut self, key: usize);
    /// Close what waited past its deadline.
    fn sweep(&mut self, now: Instant);
}

/// A poll-driven stage thread's loop: wait for events (not at all when
/// more arrivals may be queued, at most until the next tick), take
/// arrivals, serve the ready connections, and sweep once per tick, until
/// the server stops.
fn run_poll_stage<S: PollStage>(mut stage: S) {
    let mut events = Events::with_capacity(EVENTS);
    let mut next_tick = Instant::now() + TICK;
    let mut more = false;
    while !stage.shared().stop.load(Ordering::SeqCst) {
        let wait = if more {
            Duration::ZERO
        } else {
            next_tick.saturating_duration_since(Instant::now())
        };
        if let Err(e) = stage.poll().poll(&mut events, Some(wait)) {
            if e.kind() != io::ErrorKind::Interrupted {
                stage
                    .shared()
                    .counters
                    .io_errors
                    .fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(TICK);
            }
            continue;
        }
        if stage.shared().stop.load(Ordering::SeqCst) {
            break;
        }
        more = stage.take_arrivals();
        for event in events.iter() {
            if event.token() != WAKER {
                stage.ready(event.token().0);
            }
        }
        let now = Instant::now();
        if now >= next_tick {
            stage.sweep(now);
            next_tick = now + TICK;
        }
    }
}

/// Wait for `interest` on `item`'s socket: registered with the stage's
/// poll under its slot in `conns`, or given back if it cannot be.
fn park<T>(
    poll: &Poll,
    conns: &mut Slab<T>,
    mut item: T,
    interest: Interest,
    stream: impl Fn(&mut T) -> &mut mio::net::TcpStream,
) -> Result<(), T> {
    let slot = conns.vacant_entry();
    match poll
        .registry()
        .register(stream(&mut item), Token(slot.key()), interest)
    {
        Ok(()) => {
            slot.insert(item);
            Ok(())
        }
        Err(_) => Err(item),
    }
}

/// A read stage thread.
struct ReadStage {
    poll: Poll,
    /// The connections this thread waits on, by token.
    conns: Slab<Conn>,
    rx: Receiver<Conn>,
    file_tx: Sender<FileJob>,
    shared: Arc<Shared>,
    scratch: Vec<u8>,
}

/// What a stage thread does with a connection after a step.
enum Act<T> {
    Wait,
    /// Hand it on with this.
    Hand(T),
    Close(End),
}

impl PollStage for ReadStage {
    fn poll(&mut self) -> &mut Poll {
        &mut self.poll
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Take connections from the queue (at most a batch: `true` when more
    /// may be waiting).
    fn take_arrivals(&mut self) -> bool {
        for _ in 0..TAKE_BATCH {
            let Ok(mut conn) = self.rx.try_recv() else {
                return false;
            };
            let started = self.shared.meters[READ].begin();
            // A pipelined request may be buffered already, and data may be
            // waiting: try before registering, which costs a system call.
            match step_read(&mut conn, &mut self.scratch) {
                Act::Wait => {
                    let parked = park(&self.poll, &mut self.conns, conn, Interest::READABLE, |c| {
                        &mut c.stream
                    });
                    if let Err(conn) = parked {
                        conn.close(End::Failed);
                    }
                }
                Act::Hand(wanted) => self.forward(conn, wanted),
                Act::Close(end) => conn.close(end),
            }
            self.shared.meters[READ].busy(started);
        }
        true
    }

    /// Connection `key` is readable.
    fn ready(&mut self, key: usize) {
        let started = Instant::now();
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        let act = step_read(conn, &mut self.scratch);
        match act {
            Act::Wait => {}
            Act::Hand(wanted) => {
                let mut conn = self.conns.remove(key);
                let _ = self.poll.registry().deregister(&mut conn.stream);
                self.forward(conn, wanted);
            }
            Act::Close(end) => self.conns.remove(key).close(end),
        }
        self.shared.meters[READ].busy(started);
    }

    /// 408 (best effort) to connections past their deadline, and close.
    fn sweep(&mut self, now: Instant) {
        let expired: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(key, _)| key)
            .collect();
        for key in expired {
            self.conns.remove(key).expire();
        }
    }
}

impl ReadStage {
    fn forward(&self, conn: Conn, wanted: Wanted) {
        let job = FileJob { conn, wanted };
        match hand(&self.file_tx, job, &self.shared.meters[FILE]) {
            Ok(()) => {}
            Err(TrySendError::Full(job)) => refused(&self.shared, FILE, job.conn),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

/// Read (or drain) a connection as far as it goes.
fn step_read(conn: &mut Conn, scratch: &mut [u8]) -> Act<Wanted> {
    if conn.is_lingering() {
        return match conn.linger(scratch) {
            Linger::Wait => Act::Wait,
            Linger::Done => Act::Close(End::Quiet),
        };
    }
    match conn.next_request(scratch) {
        Next::Request(request) => Act::Hand(Wanted::Request(request)),
        Next::Error { status, minor } => Act::Hand(Wanted::Error(status, minor)),
        Next::Wait => Act::Wait,
        Next::End(end) => Act::Close(end),
    }
}

/// The file stage: find the file, build the response, queue it for
/// sending.
fn file_stage(shared: &Shared, rx: &Receiver<FileJob>, send_tx: &Sender<SendJob>) {
    let meter = &shared.meters[FILE];
    while let Ok(job) = rx.recv() {
        if shared.stop.load(Ordering::SeqCst) {
            // Dropping it closes the connection.
            return;
        }
        let started = meter.begin();
        let response = match &job.wanted {
            Wanted::Request(request) => http::respond(&shared.site, request),
            Wanted::Error(status, minor) => http::error_response(*status, *minor),
        };
        let send = SendJob {
            conn: job.conn,
            out: Outgoing::new(response),
        };
        match hand(send_tx, send, &shared.meters[SEND]) {
            Ok(()) => shared.send_wakers.wake_one(),
            Err(TrySendError::Full(send)) => refused(shared, SEND, send.conn),
            Err(TrySendError::Disconnected(_)) => {}
        }
        meter.busy(started);
    }
}

/// A send stage thread.
struct SendStage {
    poll: Poll,
    /// The responses this thread waits to write, by token.
    conns: Slab<SendJob>,
    rx: Receiver<SendJob>,
    read_tx: Sender<Conn>,
    shared: Arc<Shared>,
}

impl PollStage for SendStage {
    fn poll(&mut self) -> &mut Poll {
        &mut self.poll
    }

    fn shared(&self) -> &Shared {
        &self.shared
    }

    fn take_arrivals(&mut self) -> bool {
        for _ in 0..TAKE_BATCH {
            let Ok(mut job) = self.rx.try_recv() else {
                return false;
            };
            let started = self.shared.meters[SEND].begin();
            job.conn.deadline = started + self.shared.timeout;
            // Most responses fit in the socket buffer at once: register
            // only when it is full.
            match step_send(&mut job, &self.shared) {
                Act::Wait => {
                    let parked = park(&self.poll, &mut self.conns, job, Interest::WRITABLE, |j| {
                        &mut j.conn.stream
                    });
                    if let Err(job) = parked {
                        job.conn.close(End::Failed);
                    }
                }
                Act::Hand(keep_alive) => self.finish(job.conn, keep_alive),
                Act::Close(end) => job.conn.close(end),
            }
            self.shared.meters[SEND].busy(started);
        }
        true
    }

    fn ready(&mut self, key: usize) {
        let started = Instant::now();
        let Some(job) = self.conns.get_mut(key) else {
            return;
        };
        match step_send(job, &self.shared) {
            Act::Wait => {}
            Act::Hand(keep_alive) => {
                let mut job = self.conns.remove(key);
                let _ = self.poll.registry().deregister(&mut job.conn.stream);
                self.finish(job.conn, keep_alive);
            }
            Act::Close(end) => self.conns.remove(key).conn.close(end),
        }
        self.shared.meters[SEND].busy(started);
    }

    /// Close connections whose write made no progress within the timeout.
    fn sweep(&mut self, now: Instant) {
        let expired: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, j)| j.conn.deadline <= now)
            .map(|(key, _)| key)
            .collect();
        for key in expired {
            self.conns.remove(key).conn.close(End::Timeout);
        }
    }
}

impl SendStage {
    /// The response was sent: a keep-alive connection goes back to the
    /// read stage for its next request, another lingers there until the
    /// peer closes.
    fn finish(&self, mut conn: Conn, keep_alive: bool) {
        if keep_alive {
            conn.deadline = Instant::now() + self.shared.timeout;
        } else {
            conn.start_linger(self.shared.timeout);
        }
        to_read_stage(&self.shared, &self.read_tx, conn);
    }
}

/// Write a response as far as the socket takes it: `Hand(keep_alive)` once
/// all of it is sent (and counted).
fn step_send(job: &mut SendJob, shared: &Shared) -> Act<bool> {
    match job.out.write(&mut job.conn.stream) {
        Flow::Blocked { progress } => {
            if progress {
                job.conn.deadline = Instant::now() + shared.timeout;
            }
            Act::Wait
        }
        Flow::Failed => {
            shared
                .counters
                .bytes_sent
                .fetch_add(job.out.sent, Ordering::Relaxed);
            Act::Close(End::Failed)
        }
        Flow::Done => {
            shared.counters.response(job.out.status, job.out.sent);
            Act::Hand(job.out.keep_alive)
        }
    }
}
