//! How the computation talks to other ranks: it sends a request and
//! blocks until the reply it needs has come, serving meanwhile as its
//! mechanism does (`sigio`: in `sigsuspend`, the handler serving; `poll`:
//! reading the socket itself; the thread mechanisms: on a condition
//! variable), and gives up, naming whom it waited for and what, when a
//! wait lasts longer than the stall timeout.

use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Duration;

use smtlab_types::Comm;

use crate::clock::now_ns;
use crate::core::{Core, Waits};
use crate::error::Stalled;
use crate::mechanism::{wait_readable, READ_TIMEOUT_SLACK, THREAD_NAP_MS};
use crate::node::Node;
use crate::stall;

/// Whom the computation waits to hear from, for a rank that waited too
/// long to name them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Awaited {
    /// These ranks (bit r: rank r; at most 64 ranks).
    Ranks(u64),
    /// At rank 0, the barrier's manager: the ranks that have not arrived.
    Arrivals,
    /// At rank 0, at the end: the ranks whose statistics have not come.
    Gathers,
}

impl Awaited {
    /// Rank `r` alone.
    pub(crate) fn rank(r: usize) -> Awaited {
        Awaited::Ranks(1 << r)
    }
}

/// What the computation waits for (named only when it waited too long:
/// a wait costs no formatting).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Wanted {
    Page(usize),
    DiffAcks,
    Lock(usize),
    Barrier,
    End,
}

impl std::fmt::Display for Wanted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wanted::Page(p) => write!(f, "page {p} from its home"),
            Wanted::DiffAcks => f.write_str("the acknowledgements of its diffs"),
            Wanted::Lock(id) => write!(f, "lock {id} from its manager"),
            Wanted::Barrier => f.write_str("a barrier"),
            Wanted::End => f.write_str("the end of the run"),
        }
    }
}

impl Node {
    /// Send a message of the computation (after `prepare` ran on the
    /// locked core, e.g. resetting what will be waited for).
    pub(crate) fn request(&self, to: usize, msg: &[u8], prepare: impl FnOnce(&mut Waits)) {
        let threaded = matches!(self.comm, Comm::Thr1 | Comm::Thr2 | Comm::Thr3);
        self.with_core(|core| {
            prepare(&mut core.waits);
            if threaded && to != self.rank {
                core.enqueue(to, msg);
            } else {
                core.send(to, msg, &self.region);
            }
        });
        if threaded {
            self.to_send.notify_one();
            self.wake_comm();
        }
    }

    /// Block until `done` holds; returns nanoseconds waited. A wait longer
    /// than the stall timeout means a rank died or stopped, or the network
    /// is gone: this rank gives up ([`Node::give_up`]), naming whom it was
    /// waiting to hear from (`from`) and for what.
    pub(crate) fn wait(&self, what: Wanted, from: Awaited, done: impl Fn(&Waits) -> bool) -> u64 {
        let t0 = now_ns();
        // With the core locked: done, not yet, or given up (the reason is
        // built while the core's state is at hand).
        let check = |core: &Core| -> Result<bool, Stalled> {
            if done(&core.waits) {
                return Ok(true);
            }
            let waited = now_ns().saturating_sub(t0);
            if waited > self.stall_ns {
                return Err(self.stalled(core, what, from, waited));
            }
            Ok(false)
        };
        self.waiting.store(true, Ordering::Relaxed);
        match self.comm {
            Comm::Sigio => self.wait_sigio(check),
            Comm::Poll => self.wait_poll(check),
            Comm::Thr1 | Comm::Thr2 | Comm::Thr3 => self.wait_threads(check),
        }
        self.waiting.store(false, Ordering::Relaxed);
        now_ns() - t0
    }

    /// `sigio`'s wait until `check` says done (or gives up): asleep in
    /// `sigsuspend` with the signal's handler serving.
    fn wait_sigio(&self, check: impl Fn(&Core) -> Result<bool, Stalled>) {
        smtlab_sys::block_io_signal();
        loop {
            let state = {
                let mut core = self.lock_core();
                let state = check(&core);
                if matches!(state, Ok(false)) {
                    core.flush_acks();
                }
                state
            };
            match state {
                Ok(true) => break,
                // Atomically unblock and sleep: the handler serves
                // (the reply among what it serves) and wakes us;
                // the timer wakes us at least every millisecond.
                Ok(false) => smtlab_sys::suspend_for_io_signal(),
                Err(stalled) => self.give_up(stalled),
            }
        }
        smtlab_sys::unblock_io_signal();
    }

    /// `poll`'s wait until `check` says done (or gives up): the computing
    /// thread reads and serves the socket itself.
    fn wait_poll(&self, check: impl Fn(&Core) -> Result<bool, Stalled>) {
        // The computing thread is the socket's only reader: it
        // sleeps in the read itself (one system call per wake-up,
        // as in a blocking ping-pong), serving requests as they
        // come, until what it waits for arrived. A read timeout
        // counts in scheduler ticks, though, and may end up to a
        // tick late; when a timer is due sooner than
        // READ_TIMEOUT_SLACK, poll (precise) and then read.
        let mut core = self.lock_core();
        loop {
            match check(&core) {
                Ok(true) => break,
                Ok(false) => {}
                Err(stalled) => {
                    drop(core);
                    self.give_up(stalled)
                }
            }
            core.flush_pending();
            core.tick();
            core.flush_acks();
            match core.until_deadline() {
                Some(d) if d < READ_TIMEOUT_SLACK => {
                    wait_readable(&[self.sock.as_fd()], Node::nap_until(Some(d)).max(1));
                    core.receive(&self.region);
                }
                _ => {
                    core.receive_waiting(&self.region, Duration::from_millis(THREAD_NAP_MS));
                }
            }
        }
    }

    /// The thread mechanisms' wait until `check` says done (or gives up):
    /// on the condition variable the communication threads signal.
    fn wait_threads(&self, check: impl Fn(&Core) -> Result<bool, Stalled>) {
        let mut core = self.lock_core();
        loop {
            match check(&core) {
                Ok(true) => break,
                Ok(false) => {}
                Err(stalled) => {
                    drop(core);
                    self.give_up(stalled)
                }
            }
            core = self
                .replies
                .wait_timeout(core, Duration::from_millis(10))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Why this rank gives up, from its core's state.
    fn stalled(&self, core: &Core, what: Wanted, from: Awaited, waited_ns: u64) -> Stalled {
        let mask = match from {
            Awaited::Ranks(mask) => mask,
            Awaited::Arrivals => core.missing_arrivals(),
            Awaited::Gathers => (1..self.ranks)
                .filter(|&r| core.waits.gathered.get(r).is_none_or(Vec::is_empty))
                .fold(0, |m, r| m | 1 << r),
        };
        let silent = (0..self.ranks.min(64))
            .filter(|r| mask & (1 << r) != 0)
            .collect();
        let signals = if self.comm == Comm::Sigio {
            format!(
                "; I/O signals {}, {} of them finding the core taken",
                self.io_signals.load(Ordering::Relaxed),
                self.io_busy.load(Ordering::Relaxed)
            )
        } else {
            String::new()
        };
        Stalled {
            rank: self.rank,
            silent,
            what: what.to_string(),
            waited: Duration::from_nanos(waited_ns),
            detail: format!("{}; {}{signals}", core.waits.summary(), core.state_line()),
        }
    }

    /// Give up waiting: leave the rendezvous (so the last rank out of a
    /// failed run removes it), then end as the program said
    /// ([`stall::on_stall`]). Called without the core locked.
    fn give_up(&self, stalled: Stalled) -> ! {
        if let Some(rv) = &self.rendezvous {
            rv.leave(self.rank);
        }
        stall::give_up(stalled)
    }
}
