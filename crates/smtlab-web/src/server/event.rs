//! The `event` architecture (Flash, nginx): `workers` single-threaded
//! event loops, each with its own `mio::Poll` (epoll), loop k pinned to
//! `worker_cpus[k % len]`. Every socket is non-blocking and every
//! connection a small state machine — reading a request head, writing a
//! response (the head from memory, a file body with `sendfile`, resumed
//! when the socket is writable again), waiting for a helper, lingering
//! after a closing response — so a slow client only ever makes its own
//! connection wait, never the loop.
//!
//! Accepting: every loop registers its own `try_clone` of the one listening
//! socket, and whichever loop accepts first gets the connection. Epoll
//! wakes every loop for each new connection (a thundering herd of
//! `workers` threads, at most a few, which is acceptable: the losers see
//! `WouldBlock` and go back to sleep). `SO_REUSEPORT` listeners would
//! avoid the herd, but they must all be created with the option before
//! binding, and the caller hands over one already bound listener (the
//! `serve` command and the other models use it as it is); the kernel would
//! also hash a connection to a busy loop while another sits idle.
//!
//! Limits: past `max_connections` open connections (the whole server's,
//! read from the shared counter, so it may be passed by up to `workers - 1`
//! in a race) a new connection gets 503 and is closed. Every connection
//! has a deadline, checked by a sweep every [`TICK`]: a request head not
//! whole within `request_timeout` of the accept or the previous response
//! (a slow or idle keep-alive client) gets 408 and the close; a write that
//! made no progress for as long is closed.
//!
//! Flash's AMPED (`helpers = K > 0`): a parsed request goes to K helper
//! threads, which open the file ([`http::respond`], the path translation)
//! and read it once through a throwaway buffer, so its pages are in the
//! page cache when the loop `sendfile`s it: the loop never blocks on a
//! cold file. Reading rather than `posix_fadvise(WILLNEED)`: the advice
//! only starts readahead and returns, so the loop's `sendfile` could still
//! wait for the disk, which is what helpers are for; the price is one
//! copy of each body in a helper thread (Flash's helpers touched the pages
//! too). The response comes back through the loop's channel, and the
//! loop's `mio::Waker` wakes it.
//!
//! Stopping: a shared flag, then every loop's waker; each loop closes its
//! connections and its listener and ends; the helpers end when the loops'
//! job senders are gone. Every thread is joined.

use std::fs::File;
use std::io;
use std::net::TcpListener;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use super::config::ServerConfig;
use super::nonblocking::{self, Conn, End, Flow, Linger, Next, Outgoing, READ_CHUNK};
use super::running::Running;
use super::stats::{Counters, ServerStats};
use crate::http::{self, Body, Request, Response, Site, Status};

const LISTENER: Token = Token(usize::MAX - 1);
const WAKER: Token = Token(usize::MAX);
/// How often deadlines are checked (and a failed accept retried).
const TICK: Duration = Duration::from_millis(100);
const EVENTS: usize = 1024;
/// Steps one connection may take in one turn of the loop before the others
/// get theirs (a client pipelining without end cannot hog a loop).
const BUDGET: usize = 64;
/// Connections accepted in one turn before the loop serves the others.
const ACCEPT_BATCH: usize = 64;
/// A helper reads a file through this much memory to warm its pages.
const WARM_CHUNK: usize = 64 * 1024;

/// A running `event` server.
pub(crate) struct EventServer {
    stop: Arc<AtomicBool>,
    wakers: Vec<Arc<Waker>>,
    loops: Vec<JoinHandle<()>>,
    helpers: Vec<JoinHandle<()>>,
    counters: Arc<Counters>,
    threads: usize,
}

/// A request for a helper, and its answer.
struct Job {
    loop_k: usize,
    key: usize,
    serial: u64,
    request: Request,
}

struct Done {
    key: usize,
    serial: u64,
    response: Response,
}

pub(crate) fn start(
    config: &ServerConfig,
    listener: TcpListener,
    site: Site,
    counters: Arc<Counters>,
) -> io::Result<EventServer> {
    smtlab_serving::check_worker_cpus(&config.worker_cpus)?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (jobs_tx, jobs_rx) = crossbeam_channel::unbounded::<Job>();
    // Every poll, waker and listener is made here, so a failure is returned
    // to the caller rather than lost in a thread.
    let mut loops = Vec::with_capacity(config.workers);
    let mut wakers = Vec::with_capacity(config.workers);
    let mut back = Vec::with_capacity(config.workers);
    for k in 0..config.workers {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let mut own = mio::net::TcpListener::from_std(listener.try_clone()?);
        poll.registry()
            .register(&mut own, LISTENER, Interest::READABLE)?;
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<Done>();
        back.push((done_tx, waker.clone()));
        wakers.push(waker);
        loops.push(Loop {
            k,
            cpu: nonblocking::worker_cpu(&config.worker_cpus, k),
            poll,
            listener: own,
            conns: Slab::new(),
            site: site.clone(),
            counters: counters.clone(),
            stop: stop.clone(),
            timeout: config.request_timeout,
            max_connections: config.max_connections,
            amped: (config.helpers > 0).then(|| Amped {
                jobs: jobs_tx.clone(),
                done: done_rx,
            }),
            serial: 0,
            again: Vec::new(),
            accept_now: false,
            accept_later: false,
            scratch: vec![0u8; READ_CHUNK],
        });
    }
    // The loops hold the only job senders: when they end, helpers do.
    drop(jobs_tx);
    drop(listener);
    let mut server = EventServer {
        stop,
        wakers,
        loops: Vec::with_capacity(config.workers),
        helpers: Vec::with_capacity(config.helpers),
        counters,
        threads: config.workers + config.helpers,
    };
    let back = Arc::new(back);
    for h in 0..config.helpers {
        let (jobs, back, site) = (jobs_rx.clone(), back.clone(), site.clone());
        let stop = server.stop.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("web-helper-{h}"))
            .spawn(move || help(&jobs, &back, &site, &stop));
        match spawned {
            Ok(handle) => server.helpers.push(handle),
            Err(e) => {
                let _ = server.stop();
                return Err(e);
            }
        }
    }
    drop(jobs_rx);
    // Each loop says whether it could pin itself before it serves.
    let (ready_tx, ready) = mpsc::channel::<io::Result<()>>();
    let count = loops.len();
    for lp in loops {
        let tx = ready_tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("web-event-{}", lp.k))
            .spawn(move || lp.run(&tx));
        match spawned {
            Ok(handle) => server.loops.push(handle),
            Err(e) => {
                let _ = server.stop();
                return Err(e);
            }
        }
    }
    drop(ready_tx);
    for _ in 0..count {
        let outcome = ready
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("an event loop ended before it started")));
        if let Err(e) = outcome {
            let _ = server.stop();
            return Err(e);
        }
    }
    Ok(server)
}

impl Running for EventServer {
    fn stats(&self) -> ServerStats {
        ServerStats {
            counters: self.counters.snapshot(),
            stages: Vec::new(),
            processes: 1,
            // The loops and helpers this server started (not the caller).
            threads: self.threads,
            pids: vec![std::process::id() as i32],
        }
    }

    fn stop(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        for w in &self.wakers {
            let _ = w.wake();
        }
        // Loops first: their job senders dropped, the helpers' queue ends.
        let panicked =
            nonblocking::join_all(&mut self.loops) + nonblocking::join_all(&mut self.helpers);
        if panicked > 0 {
            return Err(io::Error::other(format!(
                "{panicked} event server threads panicked"
            )));
        }
        Ok(())
    }
}

impl Drop for EventServer {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// A helper thread: answer requests, warming each file's pages, until the
/// loops are gone. It may block on the disk (that is its job); the loop
/// that asked goes on serving others.
fn help(jobs: &Receiver<Job>, back: &[(Sender<Done>, Arc<Waker>)], site: &Site, stop: &AtomicBool) {
    let mut buf = vec![0u8; WARM_CHUNK];
    while let Ok(job) = jobs.recv() {
        let response = http::respond(site, &job.request);
        if let Body::File { file, len } = &response.body {
            warm(file, *len, &mut buf, stop);
        }
        let (tx, waker) = &back[job.loop_k];
        let done = Done {
            key: job.key,
            serial: job.serial,
            response,
        };
        if tx.send(done).is_ok() {
            let _ = waker.wake();
        }
    }
}

/// Read `len` bytes of `file` once and forget them: its pages are then in
/// the page cache. An error is left for the loop's `sendfile` to meet.
/// A stop ends it between two chunks: warming a file of many gigabytes
/// takes seconds, and a stop must not wait for it.
fn warm(file: &File, len: u64, buf: &mut [u8], stop: &AtomicBool) {
    let mut at = 0u64;
    while at < len && !stop.load(Ordering::Relaxed) {
        match file.read_at(buf, at) {
            Ok(0) => return,
            Ok(n) => at += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// A loop's side of the helpers.
struct Amped {
    jobs: Sender<Job>,
    done: Receiver<Done>,
}

/// One event loop and everything it owns.
struct Loop {
    k: usize,
    cpu: Option<u32>,
    poll: Poll,
    listener: mio::net::TcpListener,
    conns: Slab<Entry>,
    site: Site,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    timeout: Duration,
    max_connections: usize,
    amped: Option<Amped>,
    /// Numbers connections, so a helper's answer for a connection that is
    /// gone (its slab key reused) is recognised and dropped.
    serial: u64,
    /// Connections that spent their budget with work left.
    again: Vec<usize>,
    /// The accept batch was spent with connections perhaps still waiting.
    accept_now: bool,
    /// `accept` failed (out of descriptors or memory): retry at the tick.
    accept_later: bool,
    scratch: Vec<u8>,
}

/// A connection and where it is.
struct Entry {
    conn: Conn,
    state: State,
    serial: u64,
}

enum State {
    /// Waiting for (the rest of) a request head.
    Reading,
    Writing(Outgoing),
    /// A helper has the request.
    Helping,
    /// After a closing response: draining until the peer closes.
    Lingering,
}

/// What a connection needs after a step.
enum Step {
    /// Readiness (or a helper).
    Wait,
    /// Its budget is spent: another turn soon.
    Again,
    Close(End),
}

/// What a step needs from the loop, apart from the connection table.
struct Ctx<'a> {
    site: &'a Site,
    counters: &'a Counters,
    timeout: Duration,
    jobs: Option<&'a Sender<Job>>,
    loop_k: usize,
}

impl Loop {
    fn run(mut self, ready: &mpsc::Sender<io::Result<()>>) {
        let pinned = nonblocking::pin(self.cpu);
        let failed = pinned.is_err();
        let _ = ready.send(pinned);
        if failed {
            return;
        }
        let mut events = Events::with_capacity(EVENTS);
        let mut next_tick = Instant::now() + TICK;
        while !self.stop.load(Ordering::SeqCst) {
            let wait = if self.again.is_empty() && !self.accept_now {
                next_tick.saturating_duration_since(Instant::now())
            } else {
                Duration::ZERO
            };
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    // Not expected from epoll_wait; do not spin on it.
                    self.counters.io_errors.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(TICK);
                }
                continue;
            }
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            for key in std::mem::take(&mut self.again) {
                self.drive(key);
            }
            if self.accept_now {
                self.accept();
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept(),
                    WAKER => {}
                    Token(key) => self.drive(key),
                }
            }
            self.take_answers();
            let now = Instant::now();
            if now >= next_tick {
                if self.accept_later {
                    self.accept();
                }
                self.sweep(now);
                next_tick = now + TICK;
            }
        }
        // Returning drops every connection (closed, counted out) and the
        // listener.
    }

    fn accept(&mut self) {
        self.accept_now = false;
        self.accept_later = false;
        for _ in 0..ACCEPT_BATCH {
            match self.listener.accept() {
                Ok((stream, _)) => self.admit(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ECONNABORTED | libc::EINTR | libc::EPROTO)
                    ) => {}
                Err(_) => {
                    // Out of descriptors or memory: the connection waits in
                    // the backlog, and epoll (edge-triggered) will not say
                    // so again: retry at the tick, not in a spin.
                    self.accept_later = true;
                    return;
                }
            }
        }
        self.accept_now = true;
    }

    fn admit(&mut self, stream: mio::net::TcpStream) {
        self.counters.connections.fetch_add(1, Ordering::Relaxed);
        let open = self.counters.open_connections.load(Ordering::Relaxed);
        if open >= self.max_connections as u64 {
            self.counters.overloads.fetch_add(1, Ordering::Relaxed);
            nonblocking::refuse(stream, Status::Unavailable, &self.counters);
            return;
        }
        // A small body must not wait behind its head for an ACK (Nagle
        // with delayed ACKs costs 40 ms).
        let _ = stream.set_nodelay(true);
        let mut conn = Conn::new(stream, self.counters.clone(), Instant::now() + self.timeout);
        let slot = self.conns.vacant_entry();
        // Readable and writable once, edge-triggered: no re-registration
        // as the connection moves between reading and writing.
        let registered = self.poll.registry().register(
            &mut conn.stream,
            Token(slot.key()),
            Interest::READABLE | Interest::WRITABLE,
        );
        if registered.is_err() {
            conn.close(End::Failed);
            return;
        }
        self.serial += 1;
        slot.insert(Entry {
            conn,
            state: State::Reading,
            serial: self.serial,
        });
    }

    /// Move connection `key` on as far as it goes. Safe to call at any
    /// time: a step only does what the socket lets it.
    fn drive(&mut self, key: usize) {
        let ctx = Ctx {
            site: &self.site,
            counters: &self.counters,
            timeout: self.timeout,
            jobs: self.amped.as_ref().map(|a| &a.jobs),
            loop_k: self.k,
        };
        let Some(entry) = self.conns.get_mut(key) else {
            return;
        };
        match entry.step(&ctx, key, &mut self.scratch) {
            Step::Wait => {}
            Step::Again => self.again.push(key),
            Step::Close(end) => {
                // Closing the socket takes it out of the epoll set.
                self.conns.remove(key).conn.close(end);
            }
        }
    }

    /// Responses the helpers made, handed to their connections.
    fn take_answers(&mut self) {
        let answers: Vec<Done> = match &self.amped {
            Some(amped) => amped.done.try_iter().collect(),
            None => return,
        };
        for done in answers {
            match self.conns.get_mut(done.key) {
                Some(entry)
                    if entry.serial == done.serial && matches!(entry.state, State::Helping) =>
                {
                    entry.state = State::Writing(Outgoing::new(done.response));
                    entry.conn.deadline = Instant::now() + self.timeout;
                    self.drive(done.key);
                }
                // The connection is gone: the answer (its file) is dropped.
                _ => {}
            }
        }
    }

    /// Close every connection past its deadline.
    fn sweep(&mut self, now: Instant) {
        let expired: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, e)| e.conn.deadline <= now)
            .map(|(key, _)| key)
            .collect();
        for key in expired {
            let entry = self.conns.remove(key);
            match entry.state {
                // 408 (best effort) and close.
                State::Reading => entry.conn.expire(),
                State::Writing(_) | State::Helping => entry.conn.close(End::Timeout),
                State::Lingering => entry.conn.close(End::Quiet),
            }
        }
    }
}

impl Entry {
    fn step(&mut self, ctx: &Ctx<'_>, key: usize, scratch: &mut [u8]) -> Step {
        for _ in 0..BUDGET {
            match &mut self.state {
                State::Helping => return Step::Wait,
                State::Lingering => {
                    return match self.conn.linger(scratch) {
                        Linger::Wait => Step::Wait,
                        Linger::Done => Step::Close(End::Quiet),
                    };
                }
                State::Writing(out) => match out.write(&mut self.conn.stream) {
                    Flow::Blocked { progress } => {
                        if progress {
                            self.conn.deadline = Instant::now() + ctx.timeout;
                        }
                        return Step::Wait;
                    }
                    Flow::Failed => {
                        ctx.counters
                            .bytes_sent
                            .fetch_add(out.sent, Ordering::Relaxed);
                        return Step::Close(End::Failed);
                    }
                    Flow::Done => {
                        ctx.counters.response(out.status, out.sent);
                        if out.keep_alive {
                            self.state = State::Reading;
                            self.conn.deadline = Instant::now() + ctx.timeout;
                        } else {
                            self.conn.start_linger(ctx.timeout);
                            self.state = State::Lingering;
                        }
                    }
                },
                State::Reading => match self.conn.next_request(scratch) {
                    Next::Wait => return Step::Wait,
                    Next::End(end) => return Step::Close(end),
                    Next::Error { status, minor } => {
                        self.write(http::error_response(status, minor), ctx);
                    }
                    Next::Request(request) => {
                        let Some(jobs) = ctx.jobs else {
                            self.write(http::respond(ctx.site, &request), ctx);
                            continue;
                        };
                        let job = Job {
                            loop_k: ctx.loop_k,
                            key,
                            serial: self.serial,
                            request,
                        };
                        match jobs.send(job) {
                            Ok(()) => {
                                self.state = State::Helping;
                                self.conn.deadline = Instant::now() + ctx.timeout;
                                return Step::Wait;
                            }
                            // No helper left (only while stopping): answer here.
                            Err(e) => self.write(http::respond(ctx.site, &e.0.request), ctx),
                        }
                    }
                },
            }
        }
        Step::Again
    }

    fn write(&mut self, response: Response, ctx: &Ctx<'_>) {
        self.state = State::Writing(Outgoing::new(response));
        self.conn.deadline = Instant::now() + ctx.timeout;
    }
}
