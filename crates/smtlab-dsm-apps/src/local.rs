//! [`LocalShared`]: the DSM interface over plain memory shared by threads,
//! one thread per rank. For tests of the applications here and of code
//! that drives them: every write is visible to every rank at once, so it
//! checks the arithmetic and the partitioning, not the synchronisation
//! (that is [`crate::scoped`]'s job).

use std::sync::atomic::AtomicU64;

use crate::append_only::AppendOnly;
use crate::coordinator::{run_threads, AllocCounter, Coordinator};
use crate::shared::{Home, Region, Shared};

/// What the ranks of one [`run_ranks`] share: the memory of every
/// allocation (element `k` is allocation `k`) and the coordinator.
struct LocalWorld {
    co: Coordinator,
    memory: AppendOnly<Box<[AtomicU64]>>,
}

/// One rank's view of a [`run_ranks`] run. Locks are real mutual
/// exclusion (a mutex and condition variable per id), the barrier is a
/// real barrier, `poll` does nothing. Misuse panics with the rank: a lock
/// id out of range, unlocking a lock the rank does not hold, an allocation
/// that differs between ranks, a region outside every allocation.
pub struct LocalShared<'w> {
    rank: usize,
    world: &'w LocalWorld,
    allocs: AllocCounter,
}

/// Run `f` on `ranks` threads, each with a [`LocalShared`] over the same
/// memory, and return what each returned, in rank order. A panic in any
/// rank stops them all and is re-raised here.
pub fn run_ranks<T: Send>(ranks: usize, f: impl Fn(&dyn Shared) -> T + Sync) -> Vec<T> {
    let world = LocalWorld {
        co: Coordinator::new(ranks),
        memory: AppendOnly::new(),
    };
    run_threads(
        &world.co,
        |rank| LocalShared {
            rank,
            world: &world,
            allocs: AllocCounter::default(),
        },
        |view| f(view),
    )
}

impl Shared for LocalShared<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.world.co.ranks()
    }

    fn alloc(&self, words: usize, home: Home) -> Region {
        let nth = self.allocs.next();
        let region = self.world.co.alloc(self.rank, nth, words, home);
        // The first rank to get here makes the zeroed words; the others
        // find them (and whatever the first rank wrote since).
        self.world
            .memory
            .get_or_init(nth, || (0..words).map(|_| AtomicU64::new(0)).collect());
        region
    }

    fn words(&self, region: Region) -> &[AtomicU64] {
        let (nth, start) = self.world.co.find(self.rank, region);
        let memory = self
            .world
            .memory
            .get(nth)
            .expect("an allocation found by its offset has memory");
        &memory[start..start + region.len]
    }

    fn lock(&self, id: usize) {
        self.world.co.lock(self.rank, id)
    }

    fn unlock(&self, id: usize) {
        self.world.co.unlock(self.rank, id)
    }

    fn barrier(&self) {
        self.world.co.barrier(self.rank)
    }

    fn poll(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::Words;

    #[test]
    fn ranks_see_each_others_writes_after_a_barrier() {
        let sums = run_ranks(4, |sh| {
            let r = sh.alloc(4, Home::Blocked);
            let w = sh.words(r);
            w.set_u64(sh.rank(), sh.rank() as u64 + 1);
            sh.barrier();
            (0..4).map(|i| w.u64_at(i)).sum::<u64>()
        });
        assert_eq!(sums, vec![10; 4]);
    }

    #[test]
    fn locks_exclude() {
        let counts = run_ranks(3, |sh| {
            let r = sh.alloc(1, Home::Rank(0));
            let w = sh.words(r);
            sh.barrier();
            for _ in 0..200 {
                sh.lock(5);
                // A read-modify-write that loses updates without the lock.
                let v = w.u64_at(0);
                std::thread::yield_now();
                w.set_u64(0, v + 1);
                sh.unlock(5);
            }
            sh.barrier();
            w.u64_at(0)
        });
        assert_eq!(counts, vec![600; 3]);
    }

    #[test]
    fn allocations_are_page_aligned_and_distinct() {
        let regions = run_ranks(2, |sh| {
            let a = sh.alloc(3, Home::Blocked);
            let b = sh.alloc(1000, Home::Rank(1));
            let c = sh.alloc(1, Home::Rank(0));
            (a, b, c)
        });
        let (a, b, c) = regions[0];
        assert_eq!(regions[1], regions[0]);
        assert_eq!((a.offset, b.offset, c.offset), (0, 512, 1536));
    }

    #[test]
    #[should_panic(expected = "not collective")]
    fn a_non_collective_allocation_panics() {
        run_ranks(2, |sh| {
            let r = sh.alloc(10 + sh.rank(), Home::Blocked);
            sh.barrier();
            r
        });
    }

    #[test]
    #[should_panic(expected = "rank 1: unlock of lock 3")]
    fn a_panic_stops_every_rank_instead_of_hanging() {
        run_ranks(3, |sh| {
            if sh.rank() == 1 {
                sh.unlock(3);
            }
            // The other ranks wait here for rank 1, which never comes.
            sh.barrier();
        });
    }
}
