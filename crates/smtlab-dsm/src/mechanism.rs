//! The mechanisms that notice and serve requests while the computation
//! runs, and their start and stop:
//! * `sigio`: the socket raises SIGIO at the computing thread, whose
//!   handler serves; a 1 ms timer raises it too, for retransmissions. The
//!   computation blocks the signal while it touches the core and sleeps in
//!   `sigsuspend` while it waits.
//! * `poll`: the computation serves at its `poll()` points (at most every
//!   [`POLL_EVERY_NS`]) and while it waits (in `poll(2)` on the socket).
//! * `thr1`: one thread sends the computation's requests, receives and
//!   serves; `thr2`: a sending thread, and a receiving thread that serves;
//!   `thr3`: sending, receiving and serving threads. The computation waits
//!   on a condition variable.
//!
//! How the computation itself waits, by mechanism, is `waiting`'s.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout};
use smtlab_types::Comm;

use crate::clock::now_ns;
use crate::core::Core;
use crate::node::{Node, Threads};
use crate::protocol;
use crate::registry::SignalTarget;

/// How often a `poll` rank's `poll()` looks at the socket: often enough to
/// answer a page request within a few tens of microseconds, rarely enough
/// that a check per row of SOR costs nothing.
pub const POLL_EVERY_NS: u64 = 20_000;
/// The `sigio` timer's period: retransmissions and owed acknowledgements
/// while the computation runs.
const SIGIO_TICK: Duration = Duration::from_millis(1);
/// The longest a communication thread sleeps without looking at its timers.
pub(crate) const THREAD_NAP_MS: u64 = 2;
/// How late a read timeout of [`THREAD_NAP_MS`] may end: the kernel counts
/// it in scheduler ticks and the first tick may come at once, so it sleeps
/// up to one tick — 4 ms at Debian's HZ=250. A `poll` rank sleeps in a read
/// only while its next timer is at least this far away.
pub(crate) const READ_TIMEOUT_SLACK: Duration = Duration::from_millis(4);

thread_local! {
    /// The `sigio` timer of the rank computing on this thread.
    static SIGIO_TIMER: std::cell::RefCell<Option<smtlab_sys::IoTimer>> = const { std::cell::RefCell::new(None) };
}

impl Node {
    /// Start the mechanism: the signal set-up or the threads.
    pub fn start(self: &Arc<Self>) -> std::io::Result<Threads> {
        crate::registry::register(Arc::clone(self) as Arc<dyn SignalTarget>)?;
        let mut threads = Vec::new();
        let spawn = |name: &'static str, f: fn(&Node, usize), slot: usize| {
            let node = Arc::clone(self);
            std::thread::Builder::new()
                .name(format!("dsm-{name}"))
                .spawn(move || f(&node, slot))
        };
        match self.comm {
            Comm::Sigio => {
                let fd = self.lock_core().raw_fd();
                smtlab_sys::own_async_io(fd)?;
                SIGIO_TIMER.with(|t| -> std::io::Result<()> {
                    *t.borrow_mut() = Some(smtlab_sys::IoTimer::start(SIGIO_TICK)?);
                    Ok(())
                })?;
            }
            Comm::Poll => {}
            Comm::Thr1 => threads.push(spawn("comm", Node::comm_thread, 0)?),
            Comm::Thr2 => {
                threads.push(spawn("send", Node::send_thread, 0)?);
                threads.push(spawn("recv", Node::recv_thread, 1)?);
            }
            Comm::Thr3 => {
                threads.push(spawn("send", Node::send_thread, 0)?);
                threads.push(spawn("recv", Node::recv_thread, 1)?);
                threads.push(spawn("serve", Node::serve_thread, 2)?);
            }
        }
        Ok(Threads(threads))
    }

    /// Stop the mechanism and join its threads.
    pub fn stop(self: &Arc<Self>, threads: Threads) {
        self.stop.store(true, Ordering::SeqCst);
        if self.comm == Comm::Sigio {
            SIGIO_TIMER.with(|t| t.borrow_mut().take());
            smtlab_sys::disown_async_io(self.lock_core().raw_fd());
        }
        self.to_send.notify_all();
        self.to_serve.notify_all();
        self.wake_comm();
        for t in threads.0 {
            let _ = t.join();
        }
        crate::registry::unregister();
    }

    /// SIGIO on thread `tid`: if it is this rank's computing thread, serve.
    /// Async-signal-safe: the computation blocks the signal whenever it
    /// holds the core, so the lock is free; serving allocates nothing.
    pub(crate) fn io_signal(&self) {
        if self.comm != Comm::Sigio || self.stop.load(Ordering::Relaxed) {
            return;
        }
        let t0 = now_ns();
        self.io_signals.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut core) = self.core.try_lock() {
            core.service(&self.region);
        } else {
            self.io_busy.fetch_add(1, Ordering::Relaxed);
        }
        if !self.waiting.load(Ordering::Relaxed) {
            self.serve_ns.fetch_add(now_ns() - t0, Ordering::Relaxed);
        }
    }

    /// poll: serve what arrived, at most every [`POLL_EVERY_NS`].
    pub(crate) fn poll_now(&self, force: bool) {
        let t0 = now_ns();
        if !force && t0 < self.last_poll.load(Ordering::Relaxed) + POLL_EVERY_NS {
            return;
        }
        self.last_poll.store(t0, Ordering::Relaxed);
        self.lock_core().service(&self.region);
        self.serve_ns.fetch_add(now_ns() - t0, Ordering::Relaxed);
    }

    /// Publish this communication thread's CPU time in its `slot`, for
    /// the statistics (a thread's CPU time is read on that thread).
    pub(crate) fn publish_cpu(&self, slot: usize) {
        let cpu = smtlab_sys::thread_cpu_s();
        self.thread_cpu[slot]
            .1
            .store(cpu.to_bits(), Ordering::Relaxed);
    }

    /// thr1: wake the communication thread (it sleeps in `poll(2)` on
    /// the socket and the wake pair).
    pub(crate) fn wake_comm(&self) {
        if let Some((tx, _)) = &self.wake {
            let _ = tx.send(&[1]);
        }
    }

    /// How long a thread may sleep: until the endpoint's next timer, at
    /// most [`THREAD_NAP_MS`].
    pub(crate) fn nap_ms(core: &Core) -> u64 {
        Node::nap_until(core.until_deadline())
    }

    /// [`Node::nap_ms`] for a timer due in `due` (none: [`THREAD_NAP_MS`]).
    pub(crate) fn nap_until(due: Option<Duration>) -> u64 {
        due.map_or(THREAD_NAP_MS, |d| d.as_nanos().div_ceil(1_000_000) as u64)
            .min(THREAD_NAP_MS)
    }

    /// thr1: one thread sends, receives and serves.
    fn comm_thread(&self, slot: usize) {
        let (_, wake_rx) = self.wake.as_ref().expect("thr1 has a wake pair");
        while !self.stop.load(Ordering::Relaxed) {
            let nap = Node::nap_ms(&self.lock_core());
            wait_readable(&[self.sock.as_fd(), wake_rx.as_fd()], nap);
            let mut buf = [0u8; 64];
            while wake_rx.recv(&mut buf).is_ok() {}
            let mut core = self.lock_core();
            core.flush_pending();
            core.service(&self.region);
            drop(core);
            self.replies.notify_all();
            self.publish_cpu(slot);
        }
    }

    /// thr2, thr3: the sending thread sends the computation's requests and
    /// retransmits.
    fn send_thread(&self, slot: usize) {
        let mut core = self.lock_core();
        while !self.stop.load(Ordering::Relaxed) {
            core.flush_pending();
            core.tick();
            let nap = Node::nap_ms(&core);
            core = if core.has_pending() {
                // A full window: the receiving thread's acks will open it.
                self.to_send
                    .wait_timeout(core, Duration::from_micros(100))
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            } else {
                self.to_send
                    .wait_timeout(core, Duration::from_millis(nap.max(1)))
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            };
            self.publish_cpu(slot);
        }
    }

    /// thr2: receive and serve; thr3: receive, leaving requests to the
    /// serving thread.
    fn recv_thread(&self, slot: usize) {
        while !self.stop.load(Ordering::Relaxed) {
            wait_readable(&[self.sock.as_fd()], THREAD_NAP_MS);
            let mut core = self.lock_core();
            core.receive(&self.region);
            let queued = core.serve_queue.as_ref().is_some_and(|q| !q.is_empty());
            drop(core);
            self.replies.notify_all();
            if queued {
                self.to_serve.notify_one();
            }
            self.publish_cpu(slot);
        }
    }

    /// thr3: serve the requests the receiving thread queued.
    fn serve_thread(&self, slot: usize) {
        let mut core = self.lock_core();
        while !self.stop.load(Ordering::Relaxed) {
            let next = core.serve_queue.as_mut().and_then(|q| q.pop_front());
            match next {
                Some((from, msg)) => {
                    if let Some((kind, body)) = protocol::split(&msg) {
                        core.serve(from, kind, body, &self.region);
                    }
                    self.replies.notify_all();
                }
                None => {
                    core = self
                        .to_serve
                        .wait_timeout(core, Duration::from_millis(THREAD_NAP_MS))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                    self.publish_cpu(slot);
                }
            }
        }
    }
}

/// Sleep until one of `fds` is readable or `ms` pass.
pub(crate) fn wait_readable(fds: &[BorrowedFd<'_>], ms: u64) {
    let mut polls: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    let timeout = PollTimeout::try_from(ms.min(60_000) as i32).unwrap_or(PollTimeout::NONE);
    let _ = nix::poll::poll(&mut polls, timeout);
}
