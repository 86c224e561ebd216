//! One client thread: a mio event loop over whole rooms of clients (every
//! member of a room is on the thread that sends to it, so the thread sees
//! each message's every delivery and needs no lock or channel on the hot
//! path).
//!
//! Three stages:
//!
//! 1. set-up: clients connect in order, at most `max_in_progress` of them
//!    between `connect()` and their `366` at once (and at most
//!    `connect_rate` per second), register (`NICK`, `USER`, wait for
//!    `001`) and join their room (`JOIN`, wait for `366`); a refused
//!    connection is tried three times; a numeric error reply, a closed
//!    connection or the `connect_timeout` ends the set-up, which the
//!    thread reports on `ready`;
//! 2. waiting: every client joined, the thread keeps answering `PING`s
//!    until the run's start instant arrives on `start` (the barrier: no
//!    message goes before every client of every thread has joined);
//! 3. the measured run, closed or open loop, until every message sent has
//!    reached every member still connected, or `timeout` after the last
//!    send.
//!
//! `PING :x` is answered with `PONG :x` in every stage. Lines the
//! generator has no use for (other numerics, `NOTICE`, `MODE`, the echo of
//! a `JOIN`, `353` names) are ignored.
//!
//! What "still waiting" means is kept as one counter, `awaiting`: the sum
//! over connected receivers r and the senders s of r's room of (messages s
//! queued - messages of s that r has had). A send adds the room's other
//! connected members, a first arrival takes one, a member that leaves
//! takes what it still missed, a sender that leaves takes its messages
//! that never left its queue.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::ops::Range;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use super::arrivals::{Arrival, Arrivals};
use super::config::ChatLoadConfig;
use super::connection::{split_lines, Connect, Connection, Incoming};
use super::error::{seconds, ChatLoadError};
use super::finish::Finish;
use super::message::{self, Header};
use super::record::{ErrorKind, Record};
use super::schedule::Schedule;
use super::window::Window;
use crate::server::irc::{self, Message as Line};
use smtlab_serving::cpu::thread_cpu_time;

/// Bytes read from a socket at once.
const READ_CHUNK: usize = 64 * 1024;
/// Readiness events taken from the poll at once.
const EVENTS: usize = 1024;
/// Connect attempts per client during set-up (a loaded listener may
/// refuse one when its backlog is full).
const CONNECT_ATTEMPTS: u8 = 3;
/// How long after a failed connect attempt the next begins, times the
/// attempts so far.
const RETRY_AFTER: Duration = Duration::from_millis(100);
/// How often a waiting thread looks for the start instant.
const WAIT_TICK: Duration = Duration::from_millis(5);
/// The longest sleep of the set-up loop (deadline and pacing are checked
/// at least this often).
const SETUP_TICK: Duration = Duration::from_millis(100);

/// What one thread does.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    pub index: usize,
    /// Its rooms, by index in the whole run.
    pub rooms: Range<usize>,
    /// Pin to this CPU first.
    pub cpu: Option<u32>,
    /// Its clients between `connect()` and `366` at once, at most.
    pub max_in_progress: usize,
    /// Its connects per second, at most.
    pub connect_rate: Option<f64>,
}

/// How a thread's set-up ended.
#[derive(Debug)]
pub enum SetUp {
    /// Every client joined.
    Joined,
    /// Some did not: `reasons` counts them by why.
    Failed {
        clients: usize,
        reasons: BTreeMap<String, u64>,
    },
    /// The thread could not start (pinning, epoll).
    Error(ChatLoadError),
}

/// What one thread measured.
#[derive(Debug)]
pub struct ThreadResult {
    pub record: Record,
    /// Its CPU time in the measured run, up to its last delivery.
    pub cpu: Duration,
}

/// Run one client thread: set up and say how that went on `ready`, wait
/// for the start instant on `start` (a closed channel calls the run off:
/// `Ok(None)`), then run.
pub fn run_thread(
    config: &ChatLoadConfig,
    plan: ThreadPlan,
    epoch: Instant,
    ready: Sender<SetUp>,
    start: Receiver<Instant>,
    finish: &Finish,
) -> Result<Option<ThreadResult>, ChatLoadError> {
    // Every way out counts this thread as done; only the measured path
    // waits for the others with its connections open.
    struct Arrive<'a>(&'a Finish, &'a ChatLoadConfig, bool);
    impl Drop for Arrive<'_> {
        fn drop(&mut self) {
            if !self.2 {
                self.0.arrive(self.1.on_end.as_ref(), false, Duration::ZERO);
            }
        }
    }
    let mut arrive = Arrive(finish, config, false);
    let poll = match prepare(&plan) {
        Ok(p) => p,
        Err(e) => {
            let _ = ready.send(SetUp::Error(e));
            return Ok(None);
        }
    };
    let mut thread = Thread::new(config, &plan, poll, epoch);
    let deadline = Instant::now() + config.connect_timeout;
    let set_up = thread.set_up(&plan, deadline);
    let outcome = match set_up {
        Err(e) => SetUp::Error(e),
        Ok(()) if thread.joined == thread.members.len() => SetUp::Joined,
        Ok(()) => SetUp::Failed {
            clients: thread.members.len() - thread.joined,
            reasons: thread.unfinished_reasons(config.connect_timeout),
        },
    };
    let joined = matches!(outcome, SetUp::Joined);
    let _ = ready.send(outcome);
    drop(ready);
    if !joined {
        return Ok(None);
    }
    let Some(begin) = thread.wait(&start)? else {
        return Ok(None);
    };
    let cpu = thread.run(begin)?;
    arrive.2 = true;
    finish.arrive(
        config.on_end.as_ref(),
        true,
        config.timeout + config.timeout,
    );
    drop(arrive);
    Ok(Some(ThreadResult {
        record: thread.record,
        cpu,
    }))
}

/// Pin the thread and make its poll.
fn prepare(plan: &ThreadPlan) -> Result<Poll, ChatLoadError> {
    if let Some(cpu) = plan.cpu {
        smtlab_sys::set_affinity(0, &[cpu].into_iter().collect()).map_err(|e| {
            ChatLoadError::Io(
                format!("pinning client thread {} to CPU {cpu}", plan.index),
                e,
            )
        })?;
    }
    Poll::new().map_err(|e| ChatLoadError::Io("creating an epoll instance".into(), e))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not connecting (yet, or again after a refused attempt).
    Idle,
    Connecting,
    /// `NICK`/`USER` sent, waiting for `001`.
    Registering,
    /// `JOIN` sent, waiting for `366`.
    Joining,
    Joined,
    /// Failed or closed.
    Gone,
}

#[derive(Debug)]
struct Member {
    phase: Phase,
    /// The first connect attempt began (its connect time runs from here).
    began: Option<Instant>,
    attempts: u8,
    /// Messages queued (the sequence number of the next).
    queued: u32,
    /// Of them, out whole.
    written: u32,
    /// Closed loop: its messages not yet at every member.
    window: Window,
    /// The text of the server's `ERROR` line, if it sent one.
    error: Option<String>,
}

#[derive(Debug)]
struct Room {
    channel: String,
    /// Members joined and connected.
    live: u32,
}

struct Thread<'a> {
    config: &'a ChatLoadConfig,
    poll: Poll,
    epoch: Instant,
    users: usize,
    messages: u32,
    /// The run-wide index of this thread's first client.
    first_client: usize,
    rooms: Vec<Room>,
    members: Vec<Member>,
    conns: Vec<Connection>,
    /// `[receiver * users + sender's position in the room]`.
    arrivals: Vec<Arrivals>,
    record: Record,
    running: bool,
    /// Open loop.
    schedule: Option<Schedule>,
    /// (receiver, message) pairs still to arrive: see the module's doc.
    awaiting: u64,
    last_send: Instant,
    /// Closed loop: senders whose window may have opened.
    ready: Vec<usize>,
    /// Clients between `connect()` and `366`.
    in_progress: usize,
    joined: usize,
    /// Clients that will not join.
    failed: usize,
    /// Set-up failures by reason.
    failures: BTreeMap<String, u64>,
    /// Clients whose connect attempt failed, to try again from then on.
    retry: VecDeque<(usize, Instant)>,
    scratch: Vec<u8>,
}

impl<'a> Thread<'a> {
    fn new(config: &'a ChatLoadConfig, plan: &ThreadPlan, poll: Poll, epoch: Instant) -> Self {
        let users = config.users;
        let clients = plan.rooms.len() * users;
        let rooms = plan
            .rooms
            .clone()
            .map(|r| Room {
                channel: message::channel(&config.channel_prefix, r),
                live: 0,
            })
            .collect();
        let members = (0..clients)
            .map(|_| Member {
                phase: Phase::Idle,
                began: None,
                attempts: 0,
                queued: 0,
                written: 0,
                window: Window::default(),
                error: None,
            })
            .collect();
        Thread {
            config,
            poll,
            epoch,
            users,
            messages: config.messages as u32,
            first_client: plan.rooms.start * users,
            rooms,
            members,
            conns: (0..clients).map(|_| Connection::default()).collect(),
            arrivals: vec![Arrivals::default(); clients * users],
            record: Record::default(),
            running: false,
            schedule: None,
            awaiting: 0,
            last_send: epoch,
            ready: Vec::new(),
            in_progress: 0,
            joined: 0,
            failed: 0,
            failures: BTreeMap::new(),
            retry: VecDeque::new(),
            scratch: vec![0; READ_CHUNK],
        }
    }

    fn room_of(&self, k: usize) -> usize {
        k / self.users
    }

    // ---- set-up ----

    /// Connect, register and join every client, or stop at `deadline`.
    fn set_up(&mut self, plan: &ThreadPlan, deadline: Instant) -> Result<(), ChatLoadError> {
        let total = self.members.len();
        let interval = plan.connect_rate.map(|r| Duration::from_secs_f64(1.0 / r));
        let mut next_new = 0;
        let mut next_connect = Instant::now();
        let mut events = Events::with_capacity(EVENTS);
        loop {
            let now = Instant::now();
            while self.in_progress < plan.max_in_progress && now >= next_connect {
                let k = match self.retry.front() {
                    Some(&(k, at)) if at <= now => {
                        self.retry.pop_front();
                        k
                    }
                    _ if next_new < total => {
                        next_new += 1;
                        next_new - 1
                    }
                    _ => break,
                };
                self.start_connect(k, now);
                if let Some(i) = interval {
                    next_connect = next_connect.max(now) + i;
                }
            }
            if self.joined + self.failed == total || now >= deadline {
                return Ok(());
            }
            let mut wake = deadline.min(now + SETUP_TICK);
            if self.in_progress < plan.max_in_progress {
                if next_new < total {
                    wake = wake.min(next_connect);
                }
                if let Some(&(_, at)) = self.retry.front() {
                    wake = wake.min(at.max(next_connect));
                }
            }
            self.poll_once(&mut events, wake.saturating_duration_since(now))?;
        }
    }

    fn start_connect(&mut self, k: usize, now: Instant) {
        self.members[k].began.get_or_insert(now);
        match self.conns[k].connect(self.poll.registry(), Token(k), self.config.target) {
            Ok(()) => {
                self.members[k].phase = Phase::Connecting;
                self.in_progress += 1;
            }
            Err(e) => self.connect_failed(k, &e, false),
        }
    }

    /// A connect attempt of client `k` failed: again, or give up.
    fn connect_failed(&mut self, k: usize, e: &io::Error, was_in_progress: bool) {
        self.record.error(ErrorKind::Connect);
        self.conns[k].close(self.poll.registry());
        if was_in_progress {
            self.in_progress -= 1;
        }
        let m = &mut self.members[k];
        m.attempts += 1;
        if m.attempts < CONNECT_ATTEMPTS {
            m.phase = Phase::Idle;
            let at = Instant::now() + RETRY_AFTER * u32::from(m.attempts);
            self.retry.push_back((k, at));
        } else {
            m.phase = Phase::Gone;
            *self.failures.entry(format!("connect: {e}")).or_default() += 1;
            self.failed += 1;
        }
    }

    /// Client `k` failed its set-up for `reason`.
    fn setup_failed(&mut self, k: usize, kind: ErrorKind, reason: String) {
        self.record.error(kind);
        self.conns[k].close(self.poll.registry());
        self.give_up(k, reason);
    }

    /// Client `k`, in progress, will not join: for `reason`.
    fn give_up(&mut self, k: usize, reason: String) {
        *self.failures.entry(reason).or_default() += 1;
        self.members[k].phase = Phase::Gone;
        self.in_progress -= 1;
        self.failed += 1;
    }

    /// Why the clients that did not join did not, by reason.
    fn unfinished_reasons(&self, timeout: Duration) -> BTreeMap<String, u64> {
        let mut reasons = self.failures.clone();
        let within = format!("within {}", seconds(timeout));
        for m in &self.members {
            let why = match m.phase {
                Phase::Idle => format!("not connected {within}"),
                Phase::Connecting => format!("connect not finished {within}"),
                Phase::Registering => format!("no 001 (welcome) {within}"),
                Phase::Joining => format!("no 366 (end of NAMES) {within}"),
                Phase::Joined | Phase::Gone => continue,
            };
            *reasons.entry(why).or_default() += 1;
        }
        reasons
    }

    /// Wait for the start instant, answering the server meanwhile; `None`
    /// when the run is called off.
    fn wait(&mut self, start: &Receiver<Instant>) -> Result<Option<Instant>, ChatLoadError> {
        let mut events = Events::with_capacity(EVENTS);
        loop {
            match start.try_recv() {
                Ok(begin) => return Ok(Some(begin)),
                Err(TryRecvError::Disconnected) => return Ok(None),
                Err(TryRecvError::Empty) => self.poll_once(&mut events, WAIT_TICK)?,
            }
        }
    }

    // ---- the run ----

    /// The measured run from `begin`; returns the thread's CPU time from
    /// there to its last delivery (the wait for lost messages at the end
    /// costs the client nothing, and would only dilute its share).
    fn run(&mut self, begin: Instant) -> Result<Duration, ChatLoadError> {
        let cpu_start = thread_cpu_time();
        let config = self.config;
        self.running = true;
        self.last_send = begin;
        if let Some(rate) = config.rate {
            self.schedule = Some(Schedule::new(
                begin,
                rate,
                config.rooms * config.users,
                self.first_client,
                self.members.len(),
                config.messages,
            ));
        } else {
            self.ready.extend(0..self.members.len());
            self.send_ready(begin);
        }
        // Given-up messages are looked for a few times per timeout.
        let check_every =
            (config.timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_check = begin + check_every;
        let mut events = Events::with_capacity(EVENTS);
        let mut cpu_last = None;
        loop {
            let now = Instant::now();
            self.dispatch(now);
            // Every message still in flight once `timeout` has passed
            // since the last send is older than that: give them up before
            // deciding the run is over, so their senders go on.
            if now >= next_check || now >= self.last_send + config.timeout {
                self.expire(now);
                next_check = now + check_every;
            }
            if self.finished(now) {
                break;
            }
            let mut wake = next_check.min(self.last_send + config.timeout);
            if let Some(t) = self.schedule.as_ref().and_then(Schedule::next_time) {
                wake = wake.min(t);
            }
            let before = self.record.deliveries;
            self.poll_once(&mut events, wake.saturating_duration_since(now))?;
            if self.record.deliveries > before {
                // Once per batch of events, not per delivery: the thread
                // clock is a system call.
                cpu_last = Some(thread_cpu_time());
            }
        }
        let cpu_end = cpu_last.unwrap_or_else(thread_cpu_time);
        Ok(cpu_end.saturating_sub(cpu_start))
    }

    /// Every message sent has reached every connected member and nothing
    /// is left to send, or `timeout` has passed since the last send.
    fn finished(&self, now: Instant) -> bool {
        if now >= self.last_send + self.config.timeout {
            return true;
        }
        if self.awaiting > 0 {
            return false;
        }
        match &self.schedule {
            Some(s) => s.done(),
            None => (0..self.members.len()).all(|s| !self.may_send(s)),
        }
    }

    /// Closed loop: sender `s` may send now.
    fn may_send(&self, s: usize) -> bool {
        let m = &self.members[s];
        m.phase == Phase::Joined
            && m.queued < self.messages
            && self.rooms[self.room_of(s)].live >= 2
            && (m.window.incomplete() as usize) < self.config.window
    }

    /// Closed loop: send what the ready senders may.
    fn send_ready(&mut self, now: Instant) {
        while let Some(s) = self.ready.pop() {
            let mut any = false;
            while self.may_send(s) {
                self.queue_message(s, now, now);
                any = true;
            }
            if any {
                self.flush(s, now);
            }
        }
    }

    /// Open loop: send what is due.
    fn dispatch(&mut self, now: Instant) {
        let Some(mut schedule) = self.schedule.take() else {
            return;
        };
        while let Some(due) = schedule.take(now) {
            let s = due.sender;
            if self.members[s].phase == Phase::Joined && self.rooms[self.room_of(s)].live >= 2 {
                self.queue_message(s, due.intended, now);
                self.flush(s, now);
            }
        }
        self.schedule = Some(schedule);
    }

    /// Queue sender `s`'s next message, its latency running from `from`.
    fn queue_message(&mut self, s: usize, from: Instant, now: Instant) {
        let room = self.room_of(s);
        let others = self.rooms[room].live - 1;
        let m = &mut self.members[s];
        let header = Header {
            sender: (self.first_client + s) as u32,
            seq: m.queued,
            time_ns: from.saturating_duration_since(self.epoch).as_nanos() as u64,
        };
        let channel = &self.rooms[room].channel;
        let bytes = self.config.message_bytes;
        self.conns[s].queue(true, |out| {
            message::write_privmsg(out, channel, header, bytes)
        });
        m.queued += 1;
        if self.schedule.is_none() {
            m.window.sent(header.seq, others, now);
        }
        self.awaiting += u64::from(others);
        self.last_send = now;
    }

    /// Closed loop: give up messages older than the timeout; their senders
    /// may go on.
    fn expire(&mut self, now: Instant) {
        if self.schedule.is_some() {
            return;
        }
        for s in 0..self.members.len() {
            if self.members[s].window.expire(now, self.config.timeout) > 0 {
                self.ready.push(s);
            }
        }
        self.send_ready(now);
    }

    // ---- events ----

    /// Wait up to `timeout` and handle what happened.
    fn poll_once(&mut self, events: &mut Events, timeout: Duration) -> Result<(), ChatLoadError> {
        if let Err(e) = self.poll.poll(events, Some(timeout)) {
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(());
            }
            return Err(ChatLoadError::Io("waiting in epoll".into(), e));
        }
        let now = Instant::now();
        for event in events.iter() {
            self.on_event(event.token().0, now);
        }
        Ok(())
    }

    fn on_event(&mut self, k: usize, now: Instant) {
        match self.members[k].phase {
            // A stale event of a socket closed in this batch.
            Phase::Idle | Phase::Gone => return,
            Phase::Connecting => match self.conns[k].finish_connect() {
                Connect::Pending => return,
                Connect::Failed(e) => return self.connect_failed(k, &e, true),
                Connect::Done => {
                    let nick = message::nick(&self.config.nick_prefix, self.first_client + k);
                    self.conns[k].queue(false, |out| message::write_registration(out, &nick));
                    self.members[k].phase = Phase::Registering;
                }
            },
            _ => {}
        }
        if self.flush(k, now) {
            self.read_all(k, now);
        }
    }

    /// Write what client `k` has queued; false when that closed it.
    fn flush(&mut self, k: usize, now: Instant) -> bool {
        match self.conns[k].flush(self.poll.registry(), Token(k)) {
            Ok(n) => {
                self.members[k].written += n as u32;
                self.record.sent(n, now);
                true
            }
            Err(_) => {
                self.connection_lost(k, ErrorKind::Write);
                false
            }
        }
    }

    /// Read everything client `k`'s socket has (the poll is edge
    /// triggered) and handle it line by line.
    fn read_all(&mut self, k: usize, now: Instant) {
        let mut scratch = std::mem::take(&mut self.scratch);
        loop {
            match self.conns[k].read(&mut scratch) {
                Incoming::Data(n) => {
                    let mut partial = self.conns[k].take_partial();
                    let split = split_lines(&mut partial, &scratch[..n], |line| {
                        self.on_line(k, line, now)
                    });
                    if self.members[k].phase == Phase::Gone {
                        break;
                    }
                    if split.is_err() {
                        self.record.error(ErrorKind::Parse);
                        partial.clear();
                    }
                    self.conns[k].keep_partial(partial);
                    self.send_ready(now);
                }
                Incoming::Empty => {
                    // PONGs, JOIN, the next message.
                    self.flush(k, now);
                    break;
                }
                Incoming::Closed => {
                    self.connection_lost(k, ErrorKind::Closed);
                    break;
                }
                Incoming::Failed => {
                    self.connection_lost(k, ErrorKind::Read);
                    break;
                }
            }
        }
        self.scratch = scratch;
    }

    fn on_line(&mut self, k: usize, line: &[u8], now: Instant) {
        if self.members[k].phase == Phase::Gone {
            return;
        }
        let Some(l) = irc::parse(line) else {
            if !line.is_empty() {
                self.record.error(ErrorKind::Parse);
            }
            return;
        };
        match l.command {
            b"PING" => {
                let token = l.last().unwrap_or_default();
                self.conns[k].queue(false, |out| message::write_pong(out, token));
            }
            b"ERROR" => {
                let text = l.last().map(String::from_utf8_lossy).unwrap_or_default();
                self.members[k].error = Some(text.trim().to_string());
            }
            b"PRIVMSG" if self.running => self.privmsg(k, &l, now),
            _ => {
                if let Some(code) = l.numeric() {
                    self.numeric(k, code, &l, now);
                }
            }
        }
    }

    fn numeric(&mut self, k: usize, code: u16, l: &Line<'_>, now: Instant) {
        let room = self.room_of(k);
        let error = (400..600).contains(&code);
        match self.members[k].phase {
            Phase::Registering if code == 1 => {
                let channel = &self.rooms[room].channel;
                self.conns[k].queue(false, |out| message::write_join(out, channel));
                self.members[k].phase = Phase::Joining;
            }
            Phase::Registering if error => {
                let reason = format!("registration refused: {}", l.reason());
                self.setup_failed(k, ErrorKind::Register, reason);
            }
            Phase::Joining => {
                let about_ours = l
                    .param(1)
                    .is_some_and(|p| message::same_name(p, self.rooms[room].channel.as_bytes()));
                if code == 366 && about_ours {
                    self.members[k].phase = Phase::Joined;
                    self.rooms[room].live += 1;
                    self.in_progress -= 1;
                    self.joined += 1;
                    let began = self.members[k].began.unwrap_or(now);
                    self.record.joined(now.saturating_duration_since(began));
                } else if error && (about_ours || l.param(1) == Some(&b"JOIN"[..])) {
                    let reason = format!("JOIN refused: {}", l.reason());
                    self.setup_failed(k, ErrorKind::Join, reason);
                }
            }
            // 422: no MOTD, a normal part of registration.
            Phase::Joined if error && code != 422 => self.record.error(ErrorKind::Refused),
            _ => {}
        }
    }

    /// A PRIVMSG arrived at member `r`.
    fn privmsg(&mut self, r: usize, l: &Line<'_>, now: Instant) {
        if self.members[r].phase != Phase::Joined {
            return;
        }
        let room = self.room_of(r);
        let (Some(target), Some(text)) = (l.param(0), l.param(1)) else {
            self.record.error(ErrorKind::Parse);
            return;
        };
        if !message::same_name(target, self.rooms[room].channel.as_bytes()) {
            self.record.error(ErrorKind::Misrouted);
            return;
        }
        let Some(h) = message::parse_text(text, self.config.message_bytes) else {
            self.record.error(ErrorKind::Parse);
            return;
        };
        let Some(s) = (h.sender as usize)
            .checked_sub(self.first_client)
            .filter(|&s| s < self.members.len() && self.room_of(s) == room)
        else {
            self.record.error(ErrorKind::Misrouted);
            return;
        };
        if s == r {
            // An echo of its own message (a server with echo-message on):
            // not a delivery.
            return;
        }
        if h.seq >= self.members[s].queued {
            // Never sent: not one of this run's messages.
            self.record.error(ErrorKind::Parse);
            return;
        }
        let pair = r * self.users + s % self.users;
        match self.arrivals[pair].receive(h.seq) {
            Arrival::First { out_of_order } => {
                let from = self.epoch + Duration::from_nanos(h.time_ns);
                self.record.delivered(from, now, out_of_order);
                self.awaiting -= 1;
                if self.schedule.is_none() && self.members[s].window.delivered(h.seq) {
                    self.ready.push(s);
                }
            }
            Arrival::Duplicate => self.record.duplicates += 1,
        }
    }

    /// Client `k`'s connection ended (`kind`: closed by the server, or a
    /// read or write error).
    fn connection_lost(&mut self, k: usize, kind: ErrorKind) {
        let phase = self.members[k].phase;
        self.conns[k].close(self.poll.registry());
        let reason = self.members[k].error.take();
        if kind == ErrorKind::Closed {
            self.record.closed(reason.as_deref());
        } else {
            self.record.error(kind);
        }
        match phase {
            Phase::Idle | Phase::Gone => {}
            Phase::Connecting | Phase::Registering | Phase::Joining => {
                let why = match (kind, reason) {
                    (ErrorKind::Closed, Some(r)) => format!("closed by the server: {r}"),
                    (ErrorKind::Closed, None) => "closed by the server".to_string(),
                    (ErrorKind::Read, _) => "read error".to_string(),
                    _ => "write error".to_string(),
                };
                self.give_up(k, why);
            }
            Phase::Joined => self.member_left(k),
        }
    }

    /// Joined member `k` is gone: what waited for it waits no more, and
    /// what it never got out is not awaited.
    fn member_left(&mut self, k: usize) {
        self.members[k].phase = Phase::Gone;
        let room = self.room_of(k);
        self.rooms[room].live -= 1;
        let first = room * self.users;
        for s in first..first + self.users {
            if s == k {
                continue;
            }
            let pair = self.arrivals[k * self.users + s % self.users];
            let missed = self.members[s].queued.saturating_sub(pair.received());
            self.awaiting = self.awaiting.saturating_sub(u64::from(missed));
            if self.members[s].window.member_gone(|seq| pair.has(seq)) > 0 {
                self.ready.push(s);
            }
        }
        let m = &mut self.members[k];
        let unsent = m.queued - m.written;
        m.queued = m.written;
        let receivers = u64::from(self.rooms[room].live);
        self.awaiting = self.awaiting.saturating_sub(u64::from(unsent) * receivers);
    }
}
