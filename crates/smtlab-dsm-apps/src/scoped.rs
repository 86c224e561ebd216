//! [`ScopedShared`]: the DSM interface with each rank on a private copy of
//! shared memory, where a write travels only as scope consistency
//! guarantees it must: from a release (`unlock(l)` or `barrier`) to a
//! matching acquire (`lock(l)` after that unlock, or the same barrier).
//! A real DSM often shows more (a page fetched for another reason carries
//! other writes too); this shows the least it may, so an application that
//! reads without the right lock or barrier sees stale data here every
//! time, not only on an unlucky run.
//!
//! Writes are found as the real DSM finds them: each rank keeps a twin of
//! its copy as of its last synchronisation, and a release sends the words
//! that differ from the twin. An acquire takes the new values of the words
//! this rank has not written since its last release (a rank never loses
//! its own unreleased writes).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::append_only::AppendOnly;
use crate::coordinator::{run_threads, AllocCounter, Coordinator, LOCKS, PAGE_WORDS};
use crate::shared::{Home, Region, Shared};

/// A released write: word `index` of allocation `alloc` became `value`.
#[derive(Debug, Clone, Copy)]
struct Write {
    alloc: usize,
    index: usize,
    value: u64,
}

/// The released state every rank acquires from.
struct Master {
    /// Every allocation with every released write applied: what a rank
    /// sees after a barrier.
    memory: Vec<Vec<u64>>,
    /// Per lock, the writes released by its unlocks, in order: what a rank
    /// sees after acquiring that lock.
    logs: Vec<Vec<Write>>,
}

struct ScopedWorld {
    co: Coordinator,
    master: Mutex<Master>,
}

impl ScopedWorld {
    fn master(&self) -> MutexGuard<'_, Master> {
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What one rank's releases sent, counted as a home-based DSM sends it:
/// a diff per page written since the previous release, to the page's
/// home. A rank that writes mostly pages it is home of keeps
/// `remote_diffs` small; that is what the data placement of an app is for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Diffs of pages this rank is home of (no message in a real DSM).
    pub home_diffs: u64,
    /// Diffs of pages homed at another rank (a message each).
    pub remote_diffs: u64,
}

/// One rank's private view of a [`run_ranks_scoped`] run.
pub struct ScopedShared<'w> {
    rank: usize,
    world: &'w ScopedWorld,
    allocs: AllocCounter,
    /// This rank's copy of each allocation.
    copies: AppendOnly<Box<[AtomicU64]>>,
    /// Each allocation as of this rank's last release or acquire.
    twins: RefCell<Vec<Vec<u64>>>,
    /// Per lock, how much of its log this rank has applied.
    seen: RefCell<Vec<usize>>,
    traffic: Cell<Traffic>,
}

/// Run `f` on `ranks` threads, each with a [`ScopedShared`], and return
/// what each returned, in rank order: like [`crate::local::run_ranks`],
/// but a write reaches another rank only through a release and a matching
/// acquire. A panic in any rank stops them all and is re-raised here.
pub fn run_ranks_scoped<T: Send>(ranks: usize, f: impl Fn(&dyn Shared) -> T + Sync) -> Vec<T> {
    run_ranks_scoped_traffic(ranks, f)
        .into_iter()
        .map(|(t, _)| t)
        .collect()
}

/// [`run_ranks_scoped`], also returning each rank's [`Traffic`].
pub fn run_ranks_scoped_traffic<T: Send>(
    ranks: usize,
    f: impl Fn(&dyn Shared) -> T + Sync,
) -> Vec<(T, Traffic)> {
    let world = ScopedWorld {
        co: Coordinator::new(ranks),
        master: Mutex::new(Master {
            memory: Vec::new(),
            logs: vec![Vec::new(); LOCKS],
        }),
    };
    run_threads(
        &world.co,
        |rank| ScopedShared {
            rank,
            world: &world,
            allocs: AllocCounter::default(),
            copies: AppendOnly::new(),
            twins: RefCell::new(Vec::new()),
            seen: RefCell::new(vec![0; LOCKS]),
            traffic: Cell::new(Traffic::default()),
        },
        |view| {
            let t = f(view);
            (t, view.traffic.get())
        },
    )
}

impl ScopedShared<'_> {
    fn copy(&self, nth: usize) -> &[AtomicU64] {
        self.copies.get(nth).expect("this rank made the allocation")
    }

    /// Send the words written since the last synchronisation to the
    /// master copy and, for an unlock, to the lock's log.
    fn release(&self, lock: Option<usize>) {
        let mut master = self.world.master();
        let master = &mut *master;
        let mut twins = self.twins.borrow_mut();
        let mut traffic = self.traffic.get();
        for (alloc, twin) in twins.iter_mut().enumerate() {
            let copy = self.copy(alloc);
            let record = self.world.co.record(alloc);
            let mut last_page = None;
            for (index, old) in twin.iter_mut().enumerate() {
                let value = copy[index].load(Ordering::Relaxed);
                if value != *old {
                    let page = index / PAGE_WORDS;
                    if last_page != Some(page) {
                        last_page = Some(page);
                        if record.home_of(page, self.world.co.ranks()) == self.rank {
                            traffic.home_diffs += 1;
                        } else {
                            traffic.remote_diffs += 1;
                        }
                    }
                    *old = value;
                    master.memory[alloc][index] = value;
                    if let Some(l) = lock {
                        master.logs[l].push(Write {
                            alloc,
                            index,
                            value,
                        });
                    }
                }
            }
        }
        self.traffic.set(traffic);
    }

    /// Take `value` for a word unless this rank wrote it since its last
    /// release.
    fn take(copy: &AtomicU64, twin: &mut u64, value: u64) {
        if copy.load(Ordering::Relaxed) == *twin {
            copy.store(value, Ordering::Relaxed);
            *twin = value;
        }
    }

    /// After acquiring lock `l`: the writes released by its unlocks.
    fn acquire_lock(&self, l: usize) {
        let master = self.world.master();
        let mut twins = self.twins.borrow_mut();
        let mut seen = self.seen.borrow_mut();
        for w in &master.logs[l][seen[l]..] {
            // An allocation this rank has not made yet starts from the
            // master copy, which has this write, when it is made.
            if w.alloc < twins.len() {
                Self::take(
                    &self.copy(w.alloc)[w.index],
                    &mut twins[w.alloc][w.index],
                    w.value,
                );
            }
        }
        seen[l] = master.logs[l].len();
    }

    /// After a barrier: everything released so far.
    fn acquire_all(&self) {
        let master = self.world.master();
        let mut twins = self.twins.borrow_mut();
        for (alloc, twin) in twins.iter_mut().enumerate() {
            let copy = self.copy(alloc);
            for (index, t) in twin.iter_mut().enumerate() {
                Self::take(&copy[index], t, master.memory[alloc][index]);
            }
        }
        // The logs' writes so far are in the master copy just taken;
        // applying them again later could undo a newer write taken here.
        let mut seen = self.seen.borrow_mut();
        for (l, log) in master.logs.iter().enumerate() {
            seen[l] = log.len();
        }
    }
}

impl Shared for ScopedShared<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.world.co.ranks()
    }

    fn alloc(&self, words: usize, home: Home) -> Region {
        let nth = self.allocs.next();
        let region = self.world.co.alloc(self.rank, nth, words, home);
        let mut master = self.world.master();
        if master.memory.len() == nth {
            master.memory.push(vec![0; words]);
        }
        // Like a page fetched from its home: what has been released so
        // far (zeros, unless a faster rank already released writes to it).
        let current = master.memory[nth].clone();
        self.copies
            .get_or_init(nth, || current.iter().map(|&v| AtomicU64::new(v)).collect());
        self.twins.borrow_mut().push(current);
        region
    }

    fn words(&self, region: Region) -> &[AtomicU64] {
        let (nth, start) = self.world.co.find(self.rank, region);
        &self.copy(nth)[start..start + region.len]
    }

    fn lock(&self, id: usize) {
        self.world.co.lock(self.rank, id);
        self.acquire_lock(id);
    }

    fn unlock(&self, id: usize) {
        // Check the holder first so that a wrong unlock panics before its
        // writes are published as if released.
        self.world.co.assert_holds(self.rank, id);
        self.release(Some(id));
        self.world.co.unlock(self.rank, id);
    }

    fn barrier(&self) {
        self.release(None);
        self.world.co.barrier(self.rank);
        self.acquire_all();
        // Nobody leaves before everybody has taken the barrier's state: a
        // fast rank's next release (a lock's, after the barrier) would
        // otherwise reach a slow rank's `acquire_all` as if it had been
        // released before the barrier.
        self.world.co.barrier(self.rank);
    }

    fn poll(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::Words;
    use std::time::Duration;

    #[test]
    fn a_write_without_release_and_acquire_stays_invisible() {
        let seen = run_ranks_scoped(2, |sh| {
            let w = sh.words(sh.alloc(1, Home::Rank(0)));
            sh.barrier();
            if sh.rank() == 0 {
                w.set_u64(0, 7);
            }
            // Give rank 0 ample time: with shared memory rank 1 would see 7.
            std::thread::sleep(Duration::from_millis(20));
            let before = w.u64_at(0);
            sh.barrier();
            (before, w.u64_at(0))
        });
        assert_eq!(seen[0], (7, 7));
        assert_eq!(
            seen[1],
            (0, 7),
            "rank 1 saw rank 0's write only after the barrier"
        );
    }

    #[test]
    fn lock_handover_without_barrier() {
        // Rank 0 writes under lock 4 and signals through the same lock;
        // rank 1 spins taking lock 4 until it sees the flag, then must see
        // the data written before it, and must not see a write released
        // under another lock.
        let seen = run_ranks_scoped(2, |sh| {
            let w = sh.words(sh.alloc(3, Home::Rank(0)));
            sh.barrier();
            if sh.rank() == 0 {
                sh.lock(9);
                w.set_u64(2, 99);
                sh.unlock(9);
                sh.lock(4);
                w.set_u64(0, 5);
                w.set_u64(1, 1);
                sh.unlock(4);
                (0, 0)
            } else {
                loop {
                    sh.lock(4);
                    let (flag, data, other) = (w.u64_at(1), w.u64_at(0), w.u64_at(2));
                    sh.unlock(4);
                    if flag == 1 {
                        return (data, other);
                    }
                    std::thread::yield_now();
                }
            }
        });
        assert_eq!(seen[1], (5, 0));
    }

    #[test]
    fn unreleased_own_writes_survive_an_acquire() {
        let seen = run_ranks_scoped(2, |sh| {
            let w = sh.words(sh.alloc(2, Home::Blocked));
            // Each rank writes its word, then both take the other's.
            w.set_u64(sh.rank(), 1 + sh.rank() as u64);
            sh.lock(0);
            let mine = w.u64_at(sh.rank());
            sh.unlock(0);
            sh.barrier();
            (mine, w.u64_at(0), w.u64_at(1))
        });
        assert_eq!(seen, vec![(1, 1, 2), (2, 1, 2)]);
    }
}
