//! The statistics as Rust values: [`Stats`] and [`CoreStats`], gathered by
//! [`stats()`] for programs that use [`SmtAlloc`](crate::SmtAlloc) and for
//! the tests. Built from the snapshot that `sys/stats.rs` takes without
//! allocating; this module alone then allocates (the per-core lists), which
//! is why it sits above `sys`: the allocator never calls it. Uses only
//! `sys`; the crate root re-exports it.

use crate::sys::stats::Snapshot;
use crate::sys::{arena, cpu, heap, init, large, remote, settings};

/// Per-core statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoreStats {
    /// Dense core index (SMT siblings share one).
    pub core: usize,
    /// The CPUs (hardware threads) of this core.
    pub cpus: Vec<usize>,
    /// Arena regions `(start, length)` owned by this core.
    pub regions: Vec<(usize, usize)>,
    /// Bytes of arena address space.
    pub arena_bytes: u64,
    /// Allocations served on this core (counted only with `SMTALLOC_STATS=1`).
    pub alloc_calls: u64,
    /// Bytes requested by those allocations.
    pub alloc_bytes: u64,
    /// Bytes in live blocks of this core's heaps (block sizes, from
    /// mimalloc's page counters).
    pub in_use_bytes: u64,
    /// Resident bytes of the arenas (smaps `Rss`).
    pub rss_bytes: u64,
    /// Of which in transparent huge pages (smaps `AnonHugePages`).
    pub huge_bytes: u64,
    /// Blocks of this core's arenas that threads on other cores freed and
    /// this core then freed itself, in batches (see the crate docs).
    pub remote_freed_blocks: u64,
    pub remote_batches: u64,
}

/// A snapshot of smtalloc's state in this process.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Whether smtalloc has served any allocation in this process.
    pub initialized: bool,
    /// CPU from glibc's rseq area (else `sched_getcpu`).
    pub rseq: bool,
    /// Whether per-core allocation counting is on (`SMTALLOC_STATS`).
    pub counting: bool,
    pub cpus: usize,
    pub cores: Vec<CoreStats>,
    /// Live large blocks (>= 1 MiB) and their bytes (whole 2 MiB frames).
    pub large_live_blocks: u64,
    pub large_live_bytes: u64,
    pub large_blocks_total: u64,
    /// Of those, how many reused the mapping of a freed large block.
    pub large_blocks_reused: u64,
    /// Freed large blocks kept for reuse right now, and their bytes
    /// (`SMTALLOC_LARGE_CACHE`).
    pub large_kept_blocks: u64,
    pub large_kept_bytes: u64,
    /// 2 MiB frames in the arenas of more than one core: always 0.
    pub shared_frames: u64,
    /// Times a core fell back to mimalloc's shared heap (arena creation
    /// failed): 0 unless out of memory or out of arena slots.
    pub fallbacks: u64,
    /// Cross-core frees done directly rather than batched to the owning
    /// core (its batches were all in flight, or a batch was too small).
    pub remote_direct_frees: u64,
    /// Threads that hold an outbox of their own for their cross-core frees
    /// right now (a slot is claimed at a thread's first cross-core free and
    /// given back when it exits; past the slots, threads share their CPU's).
    pub thread_outboxes: u64,
}

/// Gathers [`Stats`]. The snapshot is taken before anything is allocated
/// for the result.
pub fn stats() -> Stats {
    if !init::is_initialized() {
        return Stats::default();
    }
    let snap = Snapshot::take();
    let (cpus, ncores) = cpu::topology_counts();
    let mut cores = Vec::with_capacity(ncores);
    for core in 0..ncores {
        let (_, arena, rss, huge) = snap.core_totals(core);
        let (calls, bytes) = heap::core_counters(core);
        let (remote_freed_blocks, remote_batches) = remote::received(core);
        cores.push(CoreStats {
            core,
            cpus: (0..cpus)
                .filter(|&c| cpu::core_of_cpu(c) == Some(core))
                .collect(),
            regions: snap
                .regions()
                .iter()
                .filter(|r| r.core == core)
                .map(|r| (r.start, r.len))
                .collect(),
            arena_bytes: arena,
            alloc_calls: calls,
            alloc_bytes: bytes,
            in_use_bytes: arena::core_in_use(core),
            rss_bytes: rss,
            huge_bytes: huge,
            remote_freed_blocks,
            remote_batches,
        });
    }
    let (lbytes, lblocks, ltotal) = large::large_counters();
    let (kept, kept_bytes, reused) = large::large_kept();
    Stats {
        initialized: true,
        rseq: cpu::uses_rseq(),
        counting: settings::stats_enabled(),
        cpus,
        cores,
        large_live_blocks: lblocks,
        large_live_bytes: lbytes,
        large_blocks_total: ltotal,
        large_blocks_reused: reused,
        large_kept_blocks: kept as u64,
        large_kept_bytes: kept_bytes as u64,
        shared_frames: snap.shared_frames,
        fallbacks: heap::fallbacks(),
        remote_direct_frees: remote::direct(cpus),
        thread_outboxes: remote::slots_claimed(),
    }
}
