//! One rank of the DSM: its region (mapped twice, see
//! `smtlab_sys::DsmRegion`), its communication [`Core`], the computation's
//! own state (which pages it holds, twins, what it wrote), and the
//! mechanism that notices requests. Implements the applications' [`Shared`].
//!
//! Pages, at a rank that is not their home: **invalid** (no access; a
//! fault fetches the page from its home: GETP) → **read-only** (a write
//! faults: a twin is copied and the page opened) → **dirty**; at a release
//! (unlock, barrier) each dirty page's diff against its twin goes to the
//! home, which applies it and acknowledges, and the page is read-only
//! again. At its home a page is always valid: read-only at the start of an
//! interval so that a write is noticed (a write notice, no twin: the home
//! holds the master copy). Acquires (lock, barrier) invalidate the pages
//! other ranks wrote: the grant carries the lock's write notices, the
//! barrier's go the pages some other rank wrote since the last barrier.
//!
//! Who serves requests, by mechanism:
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

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout};
use smtlab_dsm_apps::{Home, Region, Shared};
use smtlab_dsm_params::pages_of;
use smtlab_sys::{DsmRegion, PageAccess, DSM_PAGE};
use smtlab_types::Comm;

use crate::clock::now_ns;
use crate::core::{Core, Waits};
use crate::managers::{Managers, LOCKS};
use crate::protocol::{self, PAGE_WORDS};
use crate::registry::SignalTarget;
use crate::rendezvous::Rendezvous;
use crate::report::ThreadTime;
use crate::stall::{self, Stalled};

/// How often a `poll` rank's `poll()` looks at the socket: often enough to
/// answer a page request within a few tens of microseconds, rarely enough
/// that a check per row of SOR costs nothing.
pub const POLL_EVERY_NS: u64 = 20_000;
/// The `sigio` timer's period: retransmissions and owed acknowledgements
/// while the computation runs.
const SIGIO_TICK: Duration = Duration::from_millis(1);
/// The longest a communication thread sleeps without looking at its timers.
const THREAD_NAP_MS: u64 = 2;
/// How late a read timeout of [`THREAD_NAP_MS`] may end: the kernel counts
/// it in scheduler ticks and the first tick may come at once, so it sleeps
/// up to one tick — 4 ms at Debian's HZ=250. A `poll` rank sleeps in a read
/// only while its next timer is at least this far away.
const READ_TIMEOUT_SLACK: Duration = Duration::from_millis(4);

/// Whom the computation waits to hear from, for a rank that waited too
/// long to name them.
#[derive(Debug, Clone, Copy)]
enum Awaited {
    /// These ranks (bit r: rank r; at most 64 ranks).
    Ranks(u64),
    /// At rank 0, the barrier's manager: the ranks that have not arrived.
    Arrivals,
    /// At rank 0, at the end: the ranks whose statistics have not come.
    Gathers,
}

impl Awaited {
    fn rank(r: usize) -> Awaited {
        Awaited::Ranks(1 << r)
    }
}

/// What the computation waits for (named only when it waited too long:
/// a wait costs no formatting).
#[derive(Debug, Clone, Copy)]
enum Wanted {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageState {
    Unallocated,
    Invalid,
    ReadOnly,
    Dirty,
    HomeClean,
    HomeDirty,
}

/// The computation's side: only its thread (and its own SIGSEGV handler)
/// touch it.
struct Main {
    pages: Vec<PageState>,
    homes: Vec<u16>,
    next_page: usize,
    /// Twins of dirty pages, one page of words per region page (a calloc'd
    /// mapping: only the pages used are ever touched).
    twins: Vec<u64>,
    dirty: Vec<u32>,
    /// Written since the last release (notices for the next one).
    interval: Bits,
    /// Written since the last barrier.
    since_barrier: Bits,
    epoch: u32,
    msg: Vec<u8>,
    getp: u64,
    diffs: u64,
    locks: u64,
    barriers: u64,
    fault_ns: u64,
    sync_ns: u64,
    wait_ns: u64,
}

/// A set of pages, with its members listed in the order they joined.
struct Bits {
    bits: Vec<u64>,
    list: Vec<u32>,
}

impl Bits {
    fn new(pages: usize) -> Bits {
        Bits {
            bits: vec![0; pages.div_ceil(64)],
            list: Vec::with_capacity(pages),
        }
    }
    fn insert(&mut self, p: u32) {
        let (w, b) = (p as usize / 64, p % 64);
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.list.push(p);
        }
    }
    fn clear(&mut self) {
        for &p in &self.list {
            self.bits[p as usize / 64] = 0;
        }
        self.list.clear();
    }
}

/// One rank.
pub struct Node {
    rank: usize,
    ranks: usize,
    comm: Comm,
    region: DsmRegion,
    core: Mutex<Core>,
    /// The computation waits on it (thread mechanisms).
    replies: Condvar,
    /// The sending thread waits on it (thr2, thr3).
    to_send: Condvar,
    /// The serving thread waits on it (thr3).
    to_serve: Condvar,
    /// The socket again, to wait on without holding the core.
    sock: std::net::UdpSocket,
    /// thr1: the computation wakes the communication thread through it.
    wake: Option<(UnixDatagram, UnixDatagram)>,
    main: Mutex<Main>,
    stop: AtomicBool,
    /// Time the computing thread spent serving outside its waits (sigio's
    /// handler, poll's checks), and whether it is waiting.
    serve_ns: AtomicU64,
    waiting: AtomicBool,
    /// `sigio`: handler runs, and those that found the core taken.
    io_signals: AtomicU64,
    io_busy: AtomicU64,
    last_poll: AtomicU64,
    /// Where `section_end` stopped the clock: the time and the counters.
    section_end: Mutex<Option<(f64, Snapshot)>>,
    /// CPU seconds (f64 bits) each communication thread last published.
    thread_cpu: Vec<(&'static str, AtomicU64)>,
    /// How long a wait may last before this rank gives up.
    stall_ns: u64,
    /// The rendezvous it leaves when it gives up (see
    /// [`Rendezvous::leave`]).
    rendezvous: Option<Rendezvous>,
}

/// The communication threads of a node, joined at [`Node::stop`].
pub struct Threads(Vec<std::thread::JoinHandle<()>>);

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
            main: Mutex::new(Main {
                pages: vec![PageState::Unallocated; pages],
                homes: vec![u16::MAX; pages],
                next_page: 0,
                twins: vec![0; pages * PAGE_WORDS],
                dirty: Vec::with_capacity(pages),
                interval: Bits::new(pages),
                since_barrier: Bits::new(pages),
                epoch: 0,
                msg: vec![0; scratch],
                getp: 0,
                diffs: 0,
                locks: 0,
                barriers: 0,
                fault_ns: 0,
                sync_ns: 0,
                wait_ns: 0,
            }),
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

    fn owns_addr(&self, addr: usize) -> bool {
        self.region.app_range().contains(&addr)
    }

    /// The core, locked. On a `sigio` rank's computing thread the signal
    /// must already be blocked (see [`Node::with_core`]).
    fn lock_core(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Run `f` on the locked core from the computing thread: on a `sigio`
    /// rank with the signal blocked, so its handler cannot run on this
    /// thread while the lock is held.
    fn with_core<R>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
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

    // ----- the mechanisms' serving sides -------------------------------

    /// SIGIO on thread `tid`: if it is this rank's computing thread, serve.
    /// Async-signal-safe: the computation blocks the signal whenever it
    /// holds the core, so the lock is free; serving allocates nothing.
    fn io_signal(&self) {
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
    fn poll_now(&self, force: bool) {
        let t0 = now_ns();
        if !force && t0 < self.last_poll.load(Ordering::Relaxed) + POLL_EVERY_NS {
            return;
        }
        self.last_poll.store(t0, Ordering::Relaxed);
        self.lock_core().service(&self.region);
        self.serve_ns.fetch_add(now_ns() - t0, Ordering::Relaxed);
    }

    fn publish_cpu(&self, slot: usize) {
        let cpu = smtlab_sys::thread_cpu_s();
        self.thread_cpu[slot]
            .1
            .store(cpu.to_bits(), Ordering::Relaxed);
    }

    fn wake_comm(&self) {
        if let Some((tx, _)) = &self.wake {
            let _ = tx.send(&[1]);
        }
    }

    /// How long a thread may sleep: until the endpoint's next timer, at
    /// most [`THREAD_NAP_MS`].
    fn nap_ms(core: &Core) -> u64 {
        Node::nap_until(core.until_deadline())
    }

    /// [`Node::nap_ms`] for a timer due in `due` (none: [`THREAD_NAP_MS`]).
    fn nap_until(due: Option<Duration>) -> u64 {
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

    // ----- the computation's requests ------------------------------------

    /// Send a message of the computation (after `prepare` ran on the
    /// locked core, e.g. resetting what will be waited for).
    fn request(&self, to: usize, msg: &[u8], prepare: impl FnOnce(&mut Waits)) {
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
    fn wait(&self, what: Wanted, from: Awaited, done: impl Fn(&Waits) -> bool) -> u64 {
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
            Comm::Sigio => {
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
            Comm::Poll => {
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
                            core.receive_waiting(
                                &self.region,
                                Duration::from_millis(THREAD_NAP_MS),
                            );
                        }
                    }
                }
            }
            Comm::Thr1 | Comm::Thr2 | Comm::Thr3 => {
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
        }
        self.waiting.store(false, Ordering::Relaxed);
        now_ns() - t0
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

    /// Fetch page `p` from its home into the DSM's view, and make it
    /// readable in the application's.
    fn fetch(&self, m: &mut Main, p: usize) {
        let len = protocol::start(&mut m.msg, protocol::GETP, p as u32);
        let home = m.homes[p] as usize;
        self.request(home, &m.msg[..len], |w| w.page_arrived = false);
        // The page is made readable while the request travels, so the
        // mprotect overlaps the round trip instead of following it. Safe:
        // only the computing thread reads the application's view, and it
        // is here, in the fault handler, until the reply is in the page
        // (written through the DSM's view, the same memory).
        self.protect(p, PageAccess::Read);
        m.wait_ns += self.wait(Wanted::Page(p), Awaited::rank(home), |w| w.page_arrived);
        m.getp += 1;
    }

    /// SIGSEGV at `addr` (in this node's region): serve it, or `false`
    /// when the access is not one the DSM allows (a real fault).
    fn serve_fault(&self, addr: usize) -> bool {
        let t0 = now_ns();
        let p = (addr - self.region.app_range().start) / DSM_PAGE;
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let ok = match m.pages[p] {
            PageState::Invalid => {
                self.fetch(&mut m, p);
                m.pages[p] = PageState::ReadOnly;
                true
            }
            PageState::ReadOnly => {
                let words = &self.region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
                let twin = &mut m.twins[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
                for (t, w) in twin.iter_mut().zip(words) {
                    *t = w.load(Ordering::Relaxed);
                }
                self.written(&mut m, p, PageState::Dirty);
                true
            }
            PageState::HomeClean => {
                self.written(&mut m, p, PageState::HomeDirty);
                true
            }
            _ => false,
        };
        m.fault_ns += now_ns() - t0;
        ok
    }

    fn written(&self, m: &mut Main, p: usize, state: PageState) {
        self.protect(p, PageAccess::ReadWrite);
        m.pages[p] = state;
        m.dirty.push(p as u32);
        m.interval.insert(p as u32);
        m.since_barrier.insert(p as u32);
    }

    fn protect(&self, p: usize, access: PageAccess) {
        self.region
            .protect(p, 1, access)
            .unwrap_or_else(|e| panic!("mprotect of DSM page {p}: {e}"));
    }

    /// Send every dirty page's diff home and wait until all are applied;
    /// every page is read-only again (the interval's notices are kept).
    fn flush_dirty(&self, m: &mut Main) {
        let dirty = std::mem::take(&mut m.dirty);
        let mut sent = 0;
        let mut homes = 0u64;
        for &p in &dirty {
            let p = p as usize;
            self.protect(p, PageAccess::Read);
            if m.pages[p] == PageState::HomeDirty {
                m.pages[p] = PageState::HomeClean;
                continue;
            }
            m.pages[p] = PageState::ReadOnly;
            let mut now = [0u64; PAGE_WORDS];
            for (n, w) in now
                .iter_mut()
                .zip(&self.region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS])
            {
                *n = w.load(Ordering::Relaxed);
            }
            let twin = &m.twins[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
            let mut msg = std::mem::take(&mut m.msg);
            if let Some(len) = protocol::encode_diff(&mut msg, p as u32, twin, &now) {
                let home = m.homes[p] as usize;
                self.request(home, &msg[..len], |w| w.diff_acks += 1);
                sent += 1;
                homes |= 1 << home;
            }
            m.msg = msg;
        }
        let mut dirty = dirty;
        dirty.clear();
        m.dirty = dirty;
        if sent > 0 {
            m.diffs += sent;
            m.wait_ns += self.wait(Wanted::DiffAcks, Awaited::Ranks(homes), |w| {
                w.diff_acks == 0
            });
        }
    }

    /// Invalidate the pages another rank wrote (the notices just received).
    fn invalidate(&self, m: &mut Main) {
        let notices = self.with_core(|core| std::mem::take(&mut core.waits.notices));
        for &p in &notices {
            let p = p as usize;
            if p < m.pages.len() && m.pages[p] == PageState::ReadOnly {
                self.protect(p, PageAccess::None);
                m.pages[p] = PageState::Invalid;
            }
        }
        let mut notices = notices;
        notices.clear();
        self.with_core(|core| core.waits.notices = notices);
    }

    /// Drop this rank's copies of pages `first..first + count` (those it
    /// holds clean), so the next access to each fetches it again: the
    /// page-fetch benchmark, which does this outside its timing. One
    /// `mprotect` per run of such pages.
    pub fn forget_pages(&self, first: usize, count: usize) {
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let end = (first + count).min(m.pages.len());
        let mut p = first;
        while p < end {
            let run = m.pages[p..end]
                .iter()
                .take_while(|s| **s == PageState::ReadOnly)
                .count();
            if run == 0 {
                p += 1;
                continue;
            }
            self.region
                .protect(p, run, PageAccess::None)
                .unwrap_or_else(|e| panic!("mprotect of DSM pages {p}..{}: {e}", p + run));
            m.pages[p..p + run].fill(PageState::Invalid);
            p += run;
        }
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
        let core = self.lock_core_for_snapshot();
        Snapshot {
            counters: core.0,
            served: core.1,
            getp: m.getp,
            diffs: m.diffs,
            locks: m.locks,
            barriers: m.barriers,
            fault_ns: m.fault_ns,
            sync_ns: m.sync_ns,
            wait_ns: m.wait_ns,
            serve_ns: self.serve_ns.load(Ordering::Relaxed),
            main_cpu_s: smtlab_sys::thread_cpu_s(),
            threads: self
                .thread_cpu
                .iter()
                .map(|(n, v)| ThreadTime {
                    name: n.to_string(),
                    cpu_s: f64::from_bits(v.load(Ordering::Relaxed)),
                })
                .collect(),
        }
    }

    fn lock_core_for_snapshot(&self) -> (smtlab_msg::Counters, u64) {
        self.with_core(|c| (c.counters().clone(), c.served))
    }

    /// Gather: send this rank's statistics to rank 0 (or, at rank 0,
    /// wait for everybody's and say goodbye). Returns the gathered JSON at
    /// rank 0.
    pub fn finish(&self, stats_json: &[u8], limit: Duration) -> Result<Vec<Vec<u8>>, String> {
        let deadline = now_ns() + limit.as_nanos() as u64;
        if self.rank != 0 {
            let mut msg = vec![protocol::GATHER];
            msg.extend_from_slice(stats_json);
            self.request(0, &msg, |_| {});
            self.wait_until(|w| w.bye, deadline)
                .map_err(|_| "rank 0 did not confirm the end of the run".to_string())?;
            // Our last messages acknowledged; linger briefly to acknowledge
            // a retransmitted goodbye.
            let linger = now_ns() + 50_000_000;
            let _ = self.wait_idle(linger.min(deadline));
            return Ok(Vec::new());
        }
        let ranks = self.ranks;
        self.wait_until(|w| w.gathers + 1 >= ranks, deadline)
            .map_err(|_| "not every rank sent its statistics".to_string())?;
        let mut gathered = self.with_core(|c| std::mem::take(&mut c.waits.gathered));
        gathered[0] = stats_json.to_vec();
        for r in 1..self.ranks {
            self.request(r, &[protocol::BYE], |_| {});
        }
        let _ = self.wait_idle(now_ns() + 1_000_000_000);
        Ok(gathered)
    }

    /// Wait for `done`, giving up at `deadline` (ns).
    fn wait_until(&self, done: impl Fn(&Waits) -> bool, deadline: u64) -> Result<(), ()> {
        // `wait` returns only once its condition holds: `done`, or the
        // deadline passed; which of the two is read back once.
        let from = if self.rank == 0 {
            Awaited::Gathers
        } else {
            Awaited::rank(0)
        };
        self.wait(Wanted::End, from, |w| done(w) || now_ns() >= deadline);
        if self.with_core(|c| done(&c.waits)) {
            Ok(())
        } else {
            Err(())
        }
    }

    /// Serve until nothing this rank sent is unacknowledged, or `deadline`.
    fn wait_idle(&self, deadline: u64) -> Result<(), ()> {
        while now_ns() < deadline {
            let idle = self.with_core(|c| {
                if matches!(self.comm, Comm::Poll) {
                    c.service(&self.region);
                }
                c.flush_acks();
                c.idle()
            });
            if idle {
                return Ok(());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Err(())
    }
}

impl SignalTarget for Node {
    fn owns(&self, addr: usize) -> bool {
        self.owns_addr(addr)
    }
    fn fault(&self, addr: usize) -> bool {
        self.serve_fault(addr)
    }
    fn on_io_signal(&self) {
        self.io_signal()
    }
}

thread_local! {
    /// The `sigio` timer of the rank computing on this thread.
    static SIGIO_TIMER: std::cell::RefCell<Option<smtlab_sys::IoTimer>> = const { std::cell::RefCell::new(None) };
}

/// Counters of a node at one instant.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub counters: smtlab_msg::Counters,
    pub served: u64,
    pub getp: u64,
    pub diffs: u64,
    pub locks: u64,
    pub barriers: u64,
    pub fault_ns: u64,
    pub sync_ns: u64,
    pub wait_ns: u64,
    pub serve_ns: u64,
    pub main_cpu_s: f64,
    pub threads: Vec<ThreadTime>,
}

/// Sleep until one of `fds` is readable or `ms` pass.
fn wait_readable(fds: &[BorrowedFd<'_>], ms: u64) {
    let mut polls: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    let timeout = PollTimeout::try_from(ms.min(60_000) as i32).unwrap_or(PollTimeout::NONE);
    let _ = nix::poll::poll(&mut polls, timeout);
}

impl Shared for Node {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn alloc(&self, words: usize, home: Home) -> Region {
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let pages = pages_of(words);
        let first = m.next_page;
        // The region is sized from the application's allocations
        // (`rank::region_pages`): one beyond it is a bug of that sizing.
        assert!(
            first + pages <= m.pages.len(),
            "the DSM region ({} pages) is full: the application asked for {} more pages",
            m.pages.len(),
            pages
        );
        for i in 0..pages {
            let h = match home {
                Home::Blocked => i * self.ranks / pages,
                Home::Rank(r) => r % self.ranks,
            };
            m.homes[first + i] = h as u16;
            if h == self.rank {
                m.pages[first + i] = PageState::HomeClean;
                self.protect(first + i, PageAccess::Read);
            } else {
                m.pages[first + i] = PageState::Invalid;
            }
        }
        m.next_page += pages;
        Region {
            offset: first * PAGE_WORDS,
            len: words,
        }
    }

    fn words(&self, region: Region) -> &[std::sync::atomic::AtomicU64] {
        &self.region.app_words()[region.offset..region.offset + region.len]
    }

    fn lock(&self, id: usize) {
        assert!(id < LOCKS, "lock {id}: the DSM has locks 0..{LOCKS}");
        let t0 = now_ns();
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        // Writes made so far go home first: an invalidation the grant
        // brings must not drop them.
        self.flush_dirty(&mut m);
        let len = protocol::start(&mut m.msg, protocol::ACQ, id as u32);
        let manager = Managers::manager_of(id, self.ranks);
        self.request(manager, &m.msg[..len], |w| w.granted = false);
        m.wait_ns += self.wait(Wanted::Lock(id), Awaited::rank(manager), |w| w.granted);
        self.invalidate(&mut m);
        m.locks += 1;
        m.sync_ns += now_ns() - t0;
    }

    fn unlock(&self, id: usize) {
        assert!(id < LOCKS, "lock {id}: the DSM has locks 0..{LOCKS}");
        let t0 = now_ns();
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_dirty(&mut m);
        let mut msg = std::mem::take(&mut m.msg);
        let len = protocol::start(&mut msg, protocol::REL, id as u32);
        msg[len..len + 4].copy_from_slice(&m.epoch.to_le_bytes());
        let len = protocol::put_pages(&mut msg, len + 4, m.interval.list.iter().copied());
        m.interval.clear();
        let manager = Managers::manager_of(id, self.ranks);
        self.request(manager, &msg[..len], |_| {});
        m.msg = msg;
        m.sync_ns += now_ns() - t0;
    }

    fn barrier(&self) {
        let t0 = now_ns();
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_dirty(&mut m);
        let mut msg = std::mem::take(&mut m.msg);
        let len = protocol::bare(&mut msg, protocol::BARR);
        let len = protocol::put_pages(&mut msg, len, m.since_barrier.list.iter().copied());
        m.since_barrier.clear();
        m.interval.clear();
        self.request(0, &msg[..len], |w| w.go = false);
        m.msg = msg;
        // Rank 0 manages the barrier: it waits for the others' arrivals,
        // they wait for its go.
        let from = if self.rank == 0 {
            Awaited::Arrivals
        } else {
            Awaited::rank(0)
        };
        m.wait_ns += self.wait(Wanted::Barrier, from, |w| w.go);
        self.invalidate(&mut m);
        m.epoch += 1;
        m.barriers += 1;
        m.sync_ns += now_ns() - t0;
    }

    fn poll(&self) {
        if self.comm == Comm::Poll {
            self.poll_now(false);
        }
    }

    fn section_end(&self) {
        let end = (smtlab_sys::monotonic_s(), self.snapshot());
        *self.section_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
    }
}
