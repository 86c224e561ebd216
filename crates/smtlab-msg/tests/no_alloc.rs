//! After `Endpoint::new` (and `UdpTransport::bind`/`set_peers`), the calls
//! a SIGIO handler makes — send, receive, tick, flush_acks, drain — must
//! not allocate: malloc is not async-signal-safe, and the DSM's handler
//! interrupts arbitrary code. This binary's global allocator counts the
//! allocations of the thread that asks it to, around a burst of traffic
//! that takes every path: fragments, loss, reordering, duplicates,
//! retransmissions, delayed and immediate acks.
//!
//! The one `unsafe` of this crate is here, because a `#[global_allocator]`
//! must implement the unsafe trait `GlobalAlloc`; it only forwards to
//! `System`. Test code, not the library: the library denies `unsafe`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use smtlab_msg::{Config, Endpoint, Fault, SendError, MAX_DATAGRAM, PAGE};

mod support;

/// Forwards to `System`, counting calls made while this thread's flag is
/// set.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const`: no lazy initialisation, which could itself allocate.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn note() {
    // `try_with`: during thread teardown the flag may be gone.
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, whose
// contract is the same; counting touches only a const-initialised
// thread-local `Cell` and an atomic, and allocates nothing itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller upholds `alloc`'s contract for `layout`.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (and reallocations) made by this thread while `f` runs.
fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// A tiny deterministic random source that does not allocate.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

/// A network of fixed capacity: datagram buffers made up front, taken
/// out in a slightly shuffled order; a full network drops.
struct Net {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    dests: Vec<usize>,
    queued: usize,
    rng: Lcg,
}

impl Net {
    fn new(capacity: usize) -> Net {
        Net {
            bufs: vec![vec![0; MAX_DATAGRAM]; capacity],
            lens: vec![0; capacity],
            dests: vec![0; capacity],
            queued: 0,
            rng: Lcg(7),
        }
    }

    fn push(&mut self, to: usize, d: &[u8]) {
        if self.queued == self.bufs.len() {
            return;
        }
        let i = self.queued;
        self.bufs[i][..d.len()].copy_from_slice(d);
        self.lens[i] = d.len();
        self.dests[i] = to;
        self.queued += 1;
    }

    /// Moves a datagram from among the first few to the end and returns
    /// its index (then `queued` excludes it); the caller reads it before
    /// the next push.
    fn pop(&mut self) -> Option<usize> {
        if self.queued == 0 {
            return None;
        }
        let pick = self.rng.below(self.queued.min(3));
        // Keep the rest in order: rotate the pick to the end.
        self.bufs[pick..self.queued].rotate_left(1);
        self.lens[pick..self.queued].rotate_left(1);
        self.dests[pick..self.queued].rotate_left(1);
        self.queued -= 1;
        Some(self.queued)
    }
}

/// The messages sent, made before counting starts.
fn messages() -> Vec<Vec<u8>> {
    [0, 100, PAGE, 3 * PAGE + 1, 20 * 1024]
        .iter()
        .map(|&len| (0..len).map(|j| (j % 251) as u8).collect())
        .collect()
}

/// What a burst achieved, gathered without allocating.
#[derive(Default)]
struct Tally {
    sent: u64,
    delivered: u64,
    bytes: u64,
}

/// Rounds of traffic between all ranks: sends for 400 rounds, then 200
/// of serving so retransmissions finish the work.
fn burst(endpoints: &mut [Endpoint], net: &mut Net, msgs: &[Vec<u8>], now: &mut u64) -> Tally {
    let ranks = endpoints.len();
    let mut tally = Tally::default();
    // A datagram leaves the network before it is received, as from a socket.
    let mut scratch = [0u8; MAX_DATAGRAM];
    for round in 0..600 {
        if round < 400 {
            for (from, e) in endpoints.iter_mut().enumerate() {
                let to = (from + 1 + round % (ranks - 1)) % ranks;
                let msg = &msgs[round % msgs.len()];
                match e.send(to, msg, *now, &mut |to, d| net.push(to, d)) {
                    Ok(()) => tally.sent += 1,
                    Err(SendError::WindowFull) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
        for _ in 0..8 {
            let Some(i) = net.pop() else { break };
            let len = net.lens[i];
            scratch[..len].copy_from_slice(&net.bufs[i][..len]);
            let to = net.dests[i];
            endpoints[to].receive(
                &scratch[..len],
                *now,
                &mut |to, d| net.push(to, d),
                &mut |_, m| {
                    tally.delivered += 1;
                    tally.bytes += m.len() as u64;
                },
            );
        }
        for e in endpoints.iter_mut() {
            e.tick(*now, &mut |to, d| net.push(to, d));
            if round % 50 == 0 {
                e.flush_acks(*now, &mut |to, d| net.push(to, d));
            }
            black_box(e.next_deadline());
        }
        *now += 300_000;
    }
    tally
}

#[test]
fn the_counter_sees_allocations() {
    // The check below must be able to fail.
    let n = allocations_during(|| drop(black_box(Box::new(1u64))));
    assert!(n >= 1);
    let n = allocations_during(|| drop(black_box(vec![0u8; 1 << 20])));
    assert!(n >= 1);
}

#[test]
fn endpoint_calls_do_not_allocate_after_new() {
    let config = Config {
        fault: Fault {
            loss: 0.1,
            reorder: 0.1,
            duplicate: 0.05,
            seed: 3,
        },
        ..Config::new(3)
    };
    let mut endpoints: Vec<Endpoint> = (0..3)
        .map(|r| Endpoint::new(r, config.clone()).unwrap())
        .collect();
    let mut net = Net::new(512);
    let msgs = messages();
    let mut now = 0;
    // Warm up: first use of anything lazily set up (none expected).
    burst(&mut endpoints, &mut net, &msgs, &mut now);
    let mut tally = Tally::default();
    let n = allocations_during(|| tally = burst(&mut endpoints, &mut net, &msgs, &mut now));
    assert_eq!(n, 0, "allocations during the burst");
    // The burst did take every path.
    assert!(
        tally.sent > 100 && tally.delivered > 100,
        "{} {}",
        tally.sent,
        tally.delivered
    );
    assert!(tally.bytes > 1 << 20);
    let mut total = smtlab_msg::Counters::default();
    for e in &endpoints {
        total.add(e.counters());
    }
    for (what, n) in [
        ("retransmissions", total.retransmissions),
        ("duplicates_dropped", total.duplicates_dropped),
        ("acks_sent", total.acks_sent),
        ("injected_drops", total.injected_drops),
        ("injected_reorders", total.injected_reorders),
        ("injected_duplicates", total.injected_duplicates),
    ] {
        assert!(n > 0, "no {what}: {total:?}");
    }
}

#[test]
fn udp_transport_calls_do_not_allocate_after_setup() {
    let (mut transports, mut endpoints) = support::udp_pair();
    let msgs = messages();
    let mut exchange = |rounds: usize| -> u64 {
        let mut delivered = 0;
        for round in 0..rounds {
            let msg = &msgs[round % msgs.len()];
            let (a, b) = transports.split_at_mut(1);
            let (ea, eb) = endpoints.split_at_mut(1);
            // Request, reply, with every datagram read as it lands.
            let mut sent = a[0].send(&mut ea[0], 1, msg).is_ok();
            while sent {
                b[0].drain(&mut eb[0], &mut |_, _| delivered += 1);
                if b[0].send(&mut eb[0], 0, msg).is_ok() {
                    sent = false;
                }
                a[0].drain(&mut ea[0], &mut |_, _| delivered += 1);
            }
            a[0].drain(&mut ea[0], &mut |_, _| delivered += 1);
            a[0].tick(&mut ea[0]);
            b[0].tick(&mut eb[0]);
            a[0].flush_acks(&mut ea[0]);
            b[0].drain(&mut eb[0], &mut |_, _| delivered += 1);
        }
        delivered
    };
    exchange(20);
    let mut delivered = 0;
    let n = allocations_during(|| delivered = exchange(100));
    assert_eq!(n, 0, "allocations during UDP traffic");
    assert!(
        delivered > 100,
        "only {delivered} messages crossed loopback"
    );

    // The same over connected sockets (a job of two ranks), and the
    // blocking read the `poll` mechanism sleeps in.
    transports[0].connect_peer(1).unwrap();
    transports[1].connect_peer(0).unwrap();
    let mut delivered = 0;
    let mut reads = 0;
    let n = allocations_during(|| {
        for msg in msgs.iter().cycle().take(10 * msgs.len()) {
            let (a, b) = transports.split_at_mut(1);
            let (ea, eb) = endpoints.split_at_mut(1);
            while a[0].send(&mut ea[0], 1, msg).is_err() {
                a[0].drain(&mut ea[0], &mut |_, _| {});
                b[0].flush_acks(&mut eb[0]);
            }
            // One datagram per read, until the message is whole.
            let before = delivered;
            while delivered == before && reads < 10_000 {
                reads += 1;
                b[0].receive_one(&mut eb[0], Duration::from_secs(1), &mut |_, _| {
                    delivered += 1
                });
            }
            b[0].flush_acks(&mut eb[0]);
            a[0].drain(&mut ea[0], &mut |_, _| {});
        }
    });
    assert_eq!(n, 0, "allocations during connected UDP traffic");
    assert_eq!(
        delivered,
        10 * msgs.len(),
        "messages delivered through blocking reads over connected loopback"
    );
}
