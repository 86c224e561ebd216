//! What an application sees of the distributed shared memory: its rank,
//! collective allocation of shared words with a home policy, locks, barriers
//! and a polling point. The DSM (`smtlab-dsm`) implements it over UDP with
//! page faults; [`crate::local`] implements it with threads over plain memory
//! for tests.
//!
//! Shared data is `AtomicU64` words read and written with `Relaxed` loads and
//! stores: a plain `mov` each, but the compiler never keeps a shared value in
//! a register across a `lock`, `unlock` or `barrier` (after which the DSM may
//! have invalidated or refetched the page under it), which a `&mut [f64]`
//! would allow. Consistency is the DSM's (scope consistency): a write is
//! seen by another rank after the writer's release (unlock or barrier) and
//! that rank's matching acquire (lock of the same lock, or the barrier).

use std::sync::atomic::{AtomicU64, Ordering};

/// Where the pages of an allocation live (their home rank, which serves
/// them and applies everybody's changes to them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// The allocation's pages split into `ranks` contiguous blocks, block k
    /// homed at rank k (page p of P at rank `p * ranks / P`).
    Blocked,
    /// Every page at this rank.
    Rank(usize),
}

/// An allocation: `len` words starting at word `offset` of the shared
/// region. The same on every rank (allocation is collective).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub offset: usize,
    pub len: usize,
}

/// The DSM as an application uses it. Every method takes `&self` so that a
/// view of shared words ([`Shared::words`]) may be held across `lock`,
/// `unlock` and `barrier`.
pub trait Shared {
    /// This rank, `0..ranks()`.
    fn rank(&self) -> usize;
    fn ranks(&self) -> usize;
    /// Allocate `words` zeroed 64-bit words, page-aligned. Collective: every
    /// rank calls it with the same arguments in the same order (before the
    /// first barrier that uses it) and gets the same region.
    fn alloc(&self, words: usize, home: Home) -> Region;
    /// The words of an allocation.
    fn words(&self, region: Region) -> &[AtomicU64];
    /// Acquire lock `id` (`id < 64`).
    fn lock(&self, id: usize);
    /// Release lock `id`: this rank's writes since its last release become
    /// visible to the next rank that acquires `id`.
    fn unlock(&self, id: usize);
    /// Wait until every rank has arrived: every write before it becomes
    /// visible to every rank after it.
    fn barrier(&self);
    /// A point between computation steps where a `poll` DSM serves requests
    /// that arrived; other mechanisms do nothing here. Call it often (every
    /// row, every few microseconds of work), never while a lock matters.
    fn poll(&self);
    /// The parallel section is over: every rank calls it once, right after
    /// its last barrier and before rank 0 reads the whole result to verify
    /// it, so that the DSM stops its clock and counters here and reading
    /// the result is not measured.
    fn section_end(&self) {}
}

/// Read and write `f64`s and `u64`s in shared words.
pub trait Words {
    fn f64_at(&self, i: usize) -> f64;
    fn set_f64(&self, i: usize, v: f64);
    fn u64_at(&self, i: usize) -> u64;
    fn set_u64(&self, i: usize, v: u64);
}

impl Words for [AtomicU64] {
    fn f64_at(&self, i: usize) -> f64 {
        f64::from_bits(self[i].load(Ordering::Relaxed))
    }
    fn set_f64(&self, i: usize, v: f64) {
        self[i].store(v.to_bits(), Ordering::Relaxed)
    }
    fn u64_at(&self, i: usize) -> u64 {
        self[i].load(Ordering::Relaxed)
    }
    fn set_u64(&self, i: usize, v: u64) {
        self[i].store(v, Ordering::Relaxed)
    }
}
