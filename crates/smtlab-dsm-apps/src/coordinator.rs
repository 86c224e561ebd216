//! What the two in-process implementations of [`Shared`] ([`crate::local`]
//! and [`crate::scoped`]) have in common: one thread per rank, locks, a
//! barrier, the bookkeeping of collective allocation, and checks that turn
//! misuse of the interface into a panic naming the rank.
//!
//! A panic in one rank poisons the coordinator, which wakes every rank
//! waiting in a lock or barrier and panics it too, so a failing test fails
//! instead of hanging; [`run_threads`] then re-raises the first panic.

use std::cell::Cell;
use std::panic;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;

use crate::shared::{Home, Region, Shared};

/// The number of lock ids ([`Shared::lock`] takes `id < LOCKS`).
pub(crate) const LOCKS: usize = 64;

/// Words per 4096-byte page: allocations are page-aligned like the DSM's.
pub(crate) const PAGE_WORDS: usize = 4096 / 8;

/// One collective allocation as the first rank to make it recorded it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllocRecord {
    pub offset: usize,
    pub words: usize,
    pub home: Home,
}

struct BarrierState {
    arrived: usize,
    generation: u64,
}

struct LockSlot {
    /// The rank holding the lock.
    holder: Mutex<Option<usize>>,
    released: Condvar,
}

/// Locks, barrier and allocation log of one in-process run.
pub(crate) struct Coordinator {
    ranks: usize,
    poisoned: AtomicBool,
    /// The rank whose panic poisoned the run: its message is the one that
    /// matters, the others only say "another rank panicked".
    first_panic: OnceLock<usize>,
    barrier: Mutex<BarrierState>,
    barrier_done: Condvar,
    locks: Vec<LockSlot>,
    allocs: Mutex<Vec<AllocRecord>>,
}

/// A std mutex is poisoned when a rank panics while holding it; the state
/// behind ours stays consistent (every update is one assignment), and the
/// poison flag of the coordinator already stops the run.
fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Coordinator {
    pub(crate) fn new(ranks: usize) -> Coordinator {
        assert!(ranks >= 1, "a run needs at least one rank");
        Coordinator {
            ranks,
            poisoned: AtomicBool::new(false),
            first_panic: OnceLock::new(),
            barrier: Mutex::new(BarrierState {
                arrived: 0,
                generation: 0,
            }),
            barrier_done: Condvar::new(),
            locks: (0..LOCKS)
                .map(|_| LockSlot {
                    holder: Mutex::new(None),
                    released: Condvar::new(),
                })
                .collect(),
            allocs: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn ranks(&self) -> usize {
        self.ranks
    }

    fn check_poison(&self, rank: usize) {
        if self.poisoned.load(Ordering::SeqCst) {
            panic!("rank {rank}: stopped because another rank panicked");
        }
    }

    fn poison(&self, rank: usize) {
        let _ = self.first_panic.set(rank);
        self.poisoned.store(true, Ordering::SeqCst);
        // Notify under each mutex so that no waiter misses the wake-up
        // between its poison check and its wait.
        {
            let _b = guard(&self.barrier);
            self.barrier_done.notify_all();
        }
        for slot in &self.locks {
            let _h = guard(&slot.holder);
            slot.released.notify_all();
        }
    }

    pub(crate) fn lock(&self, rank: usize, id: usize) {
        assert!(
            id < LOCKS,
            "rank {rank}: lock id {id} out of range 0..{LOCKS}"
        );
        let slot = &self.locks[id];
        let mut holder = guard(&slot.holder);
        if *holder == Some(rank) {
            panic!("rank {rank}: lock {id} taken again by the rank holding it");
        }
        while holder.is_some() {
            self.check_poison(rank);
            holder = slot
                .released
                .wait(holder)
                .unwrap_or_else(|e| e.into_inner());
        }
        self.check_poison(rank);
        *holder = Some(rank);
    }

    /// Panic unless `rank` holds lock `id`.
    pub(crate) fn assert_holds(&self, rank: usize, id: usize) {
        assert!(
            id < LOCKS,
            "rank {rank}: lock id {id} out of range 0..{LOCKS}"
        );
        let holder = *guard(&self.locks[id].holder);
        if holder != Some(rank) {
            panic!("rank {rank}: unlock of lock {id}, held by {holder:?}");
        }
    }

    pub(crate) fn unlock(&self, rank: usize, id: usize) {
        self.assert_holds(rank, id);
        let slot = &self.locks[id];
        let mut holder = guard(&slot.holder);
        *holder = None;
        slot.released.notify_one();
    }

    pub(crate) fn barrier(&self, rank: usize) {
        let mut state = guard(&self.barrier);
        let generation = state.generation;
        state.arrived += 1;
        if state.arrived == self.ranks {
            state.arrived = 0;
            state.generation += 1;
            self.barrier_done.notify_all();
            return;
        }
        while state.generation == generation {
            self.check_poison(rank);
            state = self
                .barrier_done
                .wait(state)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Record allocation number `nth` of `rank` and return its index and
    /// region. The first rank to make it decides the offset; every other
    /// rank must ask for the same size and home (allocation is collective).
    pub(crate) fn alloc(&self, rank: usize, nth: usize, words: usize, home: Home) -> Region {
        if let Home::Rank(r) = home {
            assert!(
                r < self.ranks,
                "rank {rank}: allocation homed at rank {r} of {}",
                self.ranks
            );
        }
        let mut allocs = guard(&self.allocs);
        if nth == allocs.len() {
            let offset = allocs.last().map_or(0, |a| {
                // Even an empty allocation takes a page, so that offsets
                // identify allocations.
                a.offset + a.words.max(1).div_ceil(PAGE_WORDS) * PAGE_WORDS
            });
            allocs.push(AllocRecord {
                offset,
                words,
                home,
            });
        }
        let record = allocs[nth];
        assert!(
            record.words == words && record.home == home,
            "rank {rank}: allocation {nth} of {words} words at {home:?} is not collective: \
             another rank allocated {} words at {:?}",
            record.words,
            record.home
        );
        Region {
            offset: record.offset,
            len: words,
        }
    }

    /// Which allocation holds `region`, and where in it the region starts.
    pub(crate) fn find(&self, rank: usize, region: Region) -> (usize, usize) {
        let allocs = guard(&self.allocs);
        allocs
            .iter()
            .position(|a| {
                a.offset <= region.offset && region.offset + region.len <= a.offset + a.words
            })
            .map(|i| (i, region.offset - allocs[i].offset))
            .unwrap_or_else(|| panic!("rank {rank}: {region:?} is not inside any allocation"))
    }

    /// Allocation `nth` as recorded (every rank that asks has made it).
    pub(crate) fn record(&self, nth: usize) -> AllocRecord {
        guard(&self.allocs)[nth]
    }
}

impl AllocRecord {
    /// The home rank of page `page` of this allocation, as the DSM places
    /// it: for [`Home::Blocked`], page p of P at rank `p * ranks / P`.
    pub(crate) fn home_of(&self, page: usize, ranks: usize) -> usize {
        match self.home {
            Home::Rank(r) => r,
            Home::Blocked => {
                let pages = self.words.div_ceil(PAGE_WORDS).max(1);
                page * ranks / pages
            }
        }
    }
}

/// Counts one rank's allocations: the n-th call is matched with every
/// other rank's n-th call.
#[derive(Default)]
pub(crate) struct AllocCounter(Cell<usize>);

impl AllocCounter {
    /// The number of this allocation, counting from 0.
    pub(crate) fn next(&self) -> usize {
        let n = self.0.get();
        self.0.set(n + 1);
        n
    }
}

/// Poisons the coordinator if its rank's thread unwinds.
struct PoisonOnPanic<'a> {
    co: &'a Coordinator,
    rank: usize,
}

impl Drop for PoisonOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.co.poison(self.rank);
        }
    }
}

/// Run `body` on `co.ranks()` threads named `rank-K`, each with its own
/// view made by `make(K)`, and return the results in rank order. If a rank
/// panics, every rank stops and the first panic is re-raised here.
pub(crate) fn run_threads<U, S>(
    co: &Coordinator,
    make: impl Fn(usize) -> S + Sync,
    body: impl Fn(&S) -> U + Sync,
) -> Vec<U>
where
    U: Send,
    S: Shared,
{
    let joined: Vec<thread::Result<U>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..co.ranks())
            .map(|rank| {
                let (make, body) = (&make, &body);
                thread::Builder::new()
                    .name(format!("rank-{rank}"))
                    .spawn_scoped(scope, move || {
                        let _poison = PoisonOnPanic { co, rank };
                        let view = make(rank);
                        body(&view)
                    })
                    .expect("spawning a rank thread")
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut results = Vec::with_capacity(joined.len());
    let mut panics = Vec::new();
    for (rank, r) in joined.into_iter().enumerate() {
        match r {
            Ok(v) => results.push(v),
            Err(payload) => panics.push((rank, payload)),
        }
    }
    if !panics.is_empty() {
        let first = co.first_panic.get().copied();
        let i = panics
            .iter()
            .position(|(rank, _)| Some(*rank) == first)
            .unwrap_or(0);
        panic::resume_unwind(panics.swap_remove(i).1);
    }
    results
}
