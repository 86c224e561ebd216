//! One client thread: a mio event loop over its share of the connections
//! (one thread drives hundreds of them, like wrk), sending requests in a
//! closed loop (each connection sends its next request as soon as its
//! response is in) or an open loop (requests at their intended times from
//! an [`open_loop::Schedule`](super::open_loop::Schedule), on whichever
//! connection is free), and recording what happens in the window.
//!
//! What is recorded: closed loop, what ended inside the window (as wrk);
//! open loop, the requests intended inside the window. After the window
//! an open loop stops scheduling but lets the requests intended in it
//! finish (at most the request timeout longer), so a stall at the very end
//! still shows; those still unanswered then are timeouts. A closed loop
//! counts what is still waiting at the window's end apart
//! (`in_flight_at_end`), and both count the requests sent in the window.
//!
//! Timing resolution: the loop sleeps in `epoll_wait`, whose timeout is in
//! milliseconds, so an open-loop request may go out up to about 1 ms after
//! its intended time; that delay is in its latency, as it should be.

use std::net::SocketAddr;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use super::config::LoadConfig;
use super::connection::{write_request, Connection, Ended, InFlight};
use super::error::LoadError;
use super::open_loop::Schedule;
use super::record::{ErrorKind, Record, Window};
use super::urls::{Paths, Picker};
use smtlab_serving::cpu::thread_cpu_time;

/// Bytes read from a socket at once.
const READ_CHUNK: usize = 64 * 1024;
/// Readiness events taken from the poll at once.
const EVENTS: usize = 1024;
/// How long a connection whose request failed at once (connect refused)
/// waits before it tries again, so a dead server is not spun on.
const RETRY_AFTER: Duration = Duration::from_millis(1);

/// What one thread does.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    pub index: usize,
    pub connections: usize,
    /// Pin to this CPU first.
    pub cpu: Option<u32>,
    /// Open loop: this thread's requests per second, and when its first
    /// request is due after the start (threads are staggered so that their
    /// requests interleave evenly).
    pub rate: Option<(f64, Duration)>,
}

/// What one thread measured.
#[derive(Debug)]
pub struct ThreadResult {
    pub record: Record,
    /// Its CPU time in the window.
    pub cpu: Duration,
}

/// Run one client thread: pin and set up, say on `ready` whether that
/// worked, wait for the start instant on `start` (a closed channel means
/// the run was called off), then load until the window ends.
pub fn run_thread(
    config: &LoadConfig,
    paths: &Paths<'_>,
    plan: ThreadPlan,
    ready: Sender<bool>,
    start: Receiver<Instant>,
) -> Result<ThreadResult, LoadError> {
    let setup = set_up(&plan);
    let _ = ready.send(setup.is_ok());
    drop(ready);
    let poll = setup?;
    let Ok(begin) = start.recv() else {
        return Err(LoadError::CalledOff);
    };
    let window_start = begin + config.warmup;
    let window = Window {
        start: window_start,
        end: window_start + config.duration,
    };
    let client = Client {
        config,
        target: config.target,
        poll,
        conns: (0..plan.connections)
            .map(|_| Connection::default())
            .collect(),
        free: (0..plan.connections).rev().collect(),
        picker: Picker::new(paths, config.seed, plan.index, config.verify),
        record: Record::new(window),
        schedule: plan
            .rate
            .map(|(rate, offset)| Schedule::new(begin + offset, rate, window.end)),
        starved: false,
    };
    client.run(begin)
}

/// Pin the thread and make its poll.
fn set_up(plan: &ThreadPlan) -> Result<Poll, LoadError> {
    if let Some(cpu) = plan.cpu {
        smtlab_sys::set_affinity(0, &[cpu].into_iter().collect()).map_err(|error| {
            LoadError::Affinity {
                thread: plan.index,
                cpu,
                error,
            }
        })?;
    }
    Poll::new().map_err(|error| LoadError::Io {
        what: "creating an epoll instance",
        error,
    })
}

struct Client<'a> {
    config: &'a LoadConfig,
    target: SocketAddr,
    poll: Poll,
    conns: Vec<Connection>,
    /// Connections without a request, most recently freed last (so the
    /// open loop reuses a warm connection before a cold one).
    free: Vec<usize>,
    picker: Picker<'a>,
    record: Record,
    schedule: Option<Schedule>,
    /// Open loop: every connection was busy at the last dispatch, so what
    /// fell due until one is freed was due with no connection free.
    starved: bool,
}

impl Client<'_> {
    fn run(mut self, begin: Instant) -> Result<ThreadResult, LoadError> {
        let window = self.record.window();
        let timeout = self.config.request_timeout;
        // Timeouts are looked for a few times per timeout, not per event.
        let check_every = (timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(50));
        let mut next_check = begin + check_every;
        let drain_until = window.end + timeout;
        let mut cpu_start = None;
        let mut cpu_end = None;
        let mut events = Events::with_capacity(EVENTS);
        let mut ended = Vec::new();
        let mut scratch = vec![0u8; READ_CHUNK];
        let mut retry: Vec<usize> = Vec::new();

        if self.config.keep_alive {
            for k in 0..self.conns.len() {
                if let Err(kind) =
                    self.conns[k].connect(self.poll.registry(), Token(k), self.target)
                {
                    self.record.error(begin, kind);
                }
            }
        }

        loop {
            let now = Instant::now();
            if cpu_start.is_none() && now >= window.start {
                cpu_start = Some(thread_cpu_time());
            }
            if cpu_end.is_none() && now >= window.end {
                cpu_end = Some(thread_cpu_time());
            }
            if self.finished(now, drain_until) {
                break;
            }
            if now >= next_check {
                self.expire(now);
                next_check = now + check_every;
            }
            for k in std::mem::take(&mut retry) {
                self.freed(k, now);
            }
            self.dispatch(now, &mut retry);

            let mut wake = next_check.min(if self.schedule.is_some() {
                drain_until.max(window.end)
            } else {
                window.end
            });
            if cpu_start.is_none() {
                wake = wake.min(window.start);
            }
            if cpu_end.is_none() {
                wake = wake.min(window.end);
            }
            // The next intended time matters only with a connection to
            // send on; without one, a freed connection (an event) wakes us.
            if let Some(t) = self.schedule.as_ref().and_then(Schedule::next_time) {
                if !self.free.is_empty() {
                    wake = wake.min(t);
                }
            }
            if !retry.is_empty() {
                wake = wake.min(now + RETRY_AFTER);
            }
            let wait = wake.saturating_duration_since(Instant::now());
            if let Err(error) = self.poll.poll(&mut events, Some(wait)) {
                if error.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(LoadError::Io {
                    what: "waiting in epoll",
                    error,
                });
            }
            let now = Instant::now();
            for event in events.iter() {
                let k = event.token().0;
                let busy = self.conns[k].is_busy();
                self.conns[k].on_event(
                    self.poll.registry(),
                    event.token(),
                    now,
                    &mut scratch,
                    &mut ended,
                );
                for e in ended.drain(..) {
                    record(&mut self.record, self.schedule.is_some(), now, e);
                }
                if busy && !self.conns[k].is_busy() {
                    self.freed(k, now);
                    // Closed loop: the next request goes out at once, as
                    // wrk's does, not after the rest of the batch (a batch
                    // holding large bodies to check would leave the server
                    // idle meanwhile).
                    if self.schedule.is_none() {
                        self.dispatch(now, &mut retry);
                    }
                }
            }
        }

        let now = Instant::now();
        if let Some(s) = &self.schedule {
            // Open loop: what is left of the window's requests after the
            // drain never got an answer in time.
            for c in &mut self.conns {
                if let Some(r) = c.abandon() {
                    self.record.error(r.intended, ErrorKind::Timeout);
                }
            }
            let waiting = s.waiting_in(now, window.start);
            self.record.add_errors(ErrorKind::Timeout, waiting);
        } else {
            // Closed loop: what is still waiting when the window ends is
            // neither an answer nor an error; it is counted apart.
            let busy = self.conns.iter().filter(|c| c.is_busy()).count();
            self.record.in_flight_at_end += busy as u64;
        }
        let cpu_start = cpu_start.unwrap_or_default();
        let cpu_end = cpu_end.unwrap_or_else(thread_cpu_time);
        Ok(ThreadResult {
            record: self.record,
            cpu: cpu_end.saturating_sub(cpu_start),
        })
    }

    /// Closed loop: the window is over. Open loop: the window is over and
    /// every request intended in it ended, or the drain ran out.
    fn finished(&self, now: Instant, drain_until: Instant) -> bool {
        let end = self.record.window().end;
        match &self.schedule {
            None => now >= end,
            Some(s) => {
                now >= drain_until
                    || (now >= end
                        && s.next_time().is_none()
                        && self.conns.iter().all(|c| !c.is_busy()))
            }
        }
    }

    /// Send what is due on free connections; those whose request failed at
    /// once go to `retry`.
    fn dispatch(&mut self, now: Instant, retry: &mut Vec<usize>) {
        let Some(mut schedule) = self.schedule.take() else {
            let end = self.record.window().end;
            while let Some(&k) = self.free.last() {
                // Closed loop: the latency runs from the send itself, and
                // nothing goes out once the window is over, by the clock of
                // that send (a request sent just past the end was counted
                // neither as sent nor as answered, yet as still waiting).
                let sent = Instant::now();
                if sent >= end {
                    return;
                }
                self.free.pop();
                if let Err(kind) = self.send(k, sent, sent) {
                    self.record.error(sent, kind);
                    retry.push(k);
                }
            }
            return;
        };
        loop {
            let Some(&k) = self.free.last() else {
                schedule.no_free_connection(now);
                self.starved = true;
                break;
            };
            let Some(due) = schedule.take(now) else {
                break;
            };
            self.free.pop();
            if due.late {
                self.record.late_send(due.intended);
            }
            if let Err(kind) = self.send(k, due.intended, now) {
                self.record.error(due.intended, kind);
                retry.push(k);
            }
        }
        self.schedule = Some(schedule);
    }

    /// Connection `k` has no request any more (at `now`).
    fn freed(&mut self, k: usize, now: Instant) {
        if self.starved {
            // Everything due until now waited for this connection.
            if let Some(s) = self.schedule.as_mut() {
                s.no_free_connection(now);
            }
            self.starved = false;
        }
        self.free.push(k);
    }

    fn send(&mut self, k: usize, intended: Instant, now: Instant) -> Result<(), ErrorKind> {
        self.record.sent(intended);
        let (path, check) = self.picker.next();
        let request = InFlight {
            intended,
            deadline: now + self.config.request_timeout,
            check,
            close: !self.config.keep_alive,
        };
        let host = &self.config.host;
        let keep_alive = self.config.keep_alive;
        self.conns[k].send(
            self.poll.registry(),
            Token(k),
            self.target,
            request,
            |out| write_request(out, path, host, keep_alive),
        )
    }

    /// Requests past their deadline are timeouts; their connections are
    /// closed (and replaced on their next request).
    fn expire(&mut self, now: Instant) {
        let open = self.schedule.is_some();
        for k in 0..self.conns.len() {
            if let Some(r) = self.conns[k].expire(now) {
                self.record
                    .error(if open { r.intended } else { now }, ErrorKind::Timeout);
                self.freed(k, now);
            }
        }
    }
}

/// Record how a request ended: in the open loop by its intended time, in
/// the closed loop by when it ended (one that ended after the window was
/// still waiting at its end).
fn record(record: &mut Record, open: bool, now: Instant, e: Ended) {
    let after_end = |at: Instant| !open && at >= record.window().end;
    match e {
        Ended::Answered {
            intended,
            done,
            answer,
        } => {
            let at = if open { intended } else { done };
            if after_end(at) {
                record.in_flight_at_end += 1;
                return;
            }
            record.answer(at, intended, done, &answer);
        }
        Ended::Failed { intended, kind } => {
            let at = match intended {
                Some(t) if open => t,
                _ => now,
            };
            if intended.is_some() && after_end(at) {
                record.in_flight_at_end += 1;
                return;
            }
            record.error(at, kind);
        }
    }
}
