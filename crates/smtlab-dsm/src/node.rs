//! One rank of the DSM: its region (mapped twice, see
//! `smtlab_sys::DsmRegion`), its communication [`Core`], the computation's
//! page table, and what the mechanism that notices requests shares with
//! the computation. The rest of the node, each in its own file: how the
//! mechanisms serve (`mechanism`), how the computation sends and waits
//! (`waiting`), the page state machine (`coherence`), the end of a run
//! (`gather`), the node as the applications' `Shared` (`shared`).

use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use smtlab_sys::{DsmRegion, PageAccess};
use smtlab_types::Comm;

use crate::core::Core;
use crate::page_table::Main;
use crate::protocol;
use crate::rendezvous::Rendezvous;
use crate::snapshot::Snapshot;

/// One rank.
pub struct Node {
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    pub(crate) comm: Comm,
    pub(crate) region: DsmRegion,
    pub(crate) core: Mutex<Core>,
    /// The computation waits on it (thread mechanisms).
    pub(crate) replies: Condvar,
    /// The sending thread waits on it (thr2, thr3).
    pub(crate) to_send: Condvar,
    /// The serving thread waits on it (thr3).
    pub(crate) to_serve: Condvar,
    /// The socket again, to wait on without holding the core.
    pub(crate) sock: std::net::UdpSocket,
    /// thr1: the computation wakes the communication thread through it.
    pub(crate) wake: Option<(UnixDatagram, UnixDatagram)>,
    pub(crate) main: Mutex<Main>,
    pub(crate) stop: AtomicBool,
    /// Time the computing thread spent serving outside its waits (sigio's
    /// handler, poll's checks), and whether it is waiting.
    pub(crate) serve_ns: AtomicU64,
    pub(crate) waiting: AtomicBool,
    /// `sigio`: handler runs, and those that found the core taken.
    pub(crate) io_signals: AtomicU64,
    pub(crate) io_busy: AtomicU64,
    pub(crate) last_poll: AtomicU64,
    /// Where `section_end` stopped the clock: the time and the counters.
    pub(crate) section_end: Mutex<Option<(f64, Snapshot)>>,
    /// CPU seconds (f64 bits) each communication thread last published.
    pub(crate) thread_cpu: Vec<(&'static str, AtomicU64)>,
    /// How long a wait may last before this rank gives up.
    pub(crate) stall_ns: u64,
    /// The rendezvous it leaves when it gives up (see
    /// [`Rendezvous::leave`]).
    pub(crate) rendezvous: Option<Rendezvous>,
}

/// The communication threads of a node, joined at [`Node::stop`].
pub struct Threads(pub(crate) Vec<std::thread::JoinHandle<()>>);

impl Node {
    /// A node over `core`, with a region of `pages` pages, computing on the
    /// calling thread; a wait longer than `stall` gives up, leaving
    /// `rendezvous` first.
    pub fn new(
        rank: usize,
        ranks: usize,
        comm: Comm,
        pages: usize,
        core: Core,
        stall: Duration,
        rendezvous: Option<Rendezvous>,
    ) -> std::io::Result<Node> {
        let region = DsmRegion::new(pages)?;
        let wake = if comm == Comm::Thr1 {
            let (a, b) = UnixDatagram::pair()?;
            a.set_nonblocking(true)?;
            b.set_nonblocking(true)?;
            Some((a, b))
        } else {
            None
        };
        let names: &[&'static str] = match comm {
            Comm::Thr1 => &["comm"],
            Comm::Thr2 => &["send", "recv"],
            Comm::Thr3 => &["send", "recv", "serve"],
            Comm::Sigio | Comm::Poll => &[],
        };
        let scratch = (1 + 12 + pages * 4).max(protocol::MAX_DIFF);
        let sock = core.socket_clone()?;
        Ok(Node {
            rank,
            ranks,
            comm,
            core: Mutex::new(core),
            sock,
            replies: Condvar::new(),
            to_send: Condvar::new(),
            to_serve: Condvar::new(),
            wake,
            main: Mutex::new(Main::new(pages, scratch)),
            region,
            stop: AtomicBool::new(false),
            serve_ns: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
            io_signals: AtomicU64::new(0),
            io_busy: AtomicU64::new(0),
            last_poll: AtomicU64::new(0),
            section_end: Mutex::new(None),
            thread_cpu: names.iter().map(|n| (*n, AtomicU64::new(0))).collect(),
            stall_ns: u64::try_from(stall.as_nanos()).unwrap_or(u64::MAX),
            rendezvous,
        })
    }

    /// Whether `addr` is in the application's view of the region.
    pub(crate) fn owns_addr(&self, addr: usize) -> bool {
        self.region.app_range().contains(&addr)
    }

    /// The core, locked. On a `sigio` rank's computing thread the signal
    /// must already be blocked (see [`Node::with_core`]).
    pub(crate) fn lock_core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `f` on the locked core from the computing thread: on a `sigio`
    /// rank with the signal blocked, so its handler cannot run on this
    /// thread while the lock is held.
    pub(crate) fn with_core<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        let sigio = self.comm == Comm::Sigio;
        if sigio {
            smtlab_sys::block_io_signal();
        }
        let r = f(&mut self.lock_core());
        if sigio {
            smtlab_sys::unblock_io_signal();
        }
        r
    }

    /// Set page `p`'s access in the application's view (a failure is a bug:
    /// the page is in the region).
    pub(crate) fn protect(&self, p: usize, access: PageAccess) {
        self.region
            .protect(p, 1, access)
            .unwrap_or_else(|e| panic!("mprotect of DSM page {p}: {e}"));
    }

    /// The time and counters of the application's `section_end`, if it
    /// called it.
    pub fn take_section_end(&self) -> Option<(f64, Snapshot)> {
        self.section_end
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The statistics so far (the caller takes differences).
    pub fn snapshot(&self) -> Snapshot {
        let m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let (counters, served) = self.with_core(|c| (c.counters().clone(), c.served));
        let serve_ns = self.serve_ns.load(std::sync::atomic::Ordering::Relaxed);
        Snapshot::take(&m, counters, served, serve_ns, &self.thread_cpu)
    }
}
