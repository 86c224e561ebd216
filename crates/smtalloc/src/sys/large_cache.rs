//! Freed large blocks kept for reuse: a few whole 2 MiB-aligned mappings,
//! at most `SMTALLOC_LARGE_CACHE` bytes in all (default 32 MiB).
//!
//! Why: unmapping every large block on `free` and mapping a fresh one on the
//! next `malloc` costs two system calls, a TLB shootdown and, worst, the
//! kernel zeroing every page again on first touch: a program that churns
//! 1-2 MiB buffers among 16 threads spent 54% of its time in `clear_page`
//! and ran at a third to a tenth of glibc's speed; glibc's mmap threshold keeps
//! such blocks in its heap (up to 32 MiB each). Kept mappings are reused
//! whole or trimmed by whole frames, so memory still returns to the OS only
//! in whole 2 MiB units; a block for `calloc` is zeroed by `memset` (the
//! kernel's fresh pages were zero, a reused mapping is not).
//!
//! A spin lock guards the table: large blocks are rare next to small ones,
//! and each costs far more than the lock (a `memset` or page faults).
//!
//! Called by `large` (take and put), `init` (the capacity) and `fork` (its
//! lock).
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use super::spin_lock::SpinLock;

/// Most mappings kept.
pub const SLOTS: usize = 16;

struct Entries {
    /// (address, length) of each kept mapping; the first `n` are in use.
    maps: [(usize, usize); SLOTS],
    n: usize,
    bytes: usize,
}

struct Cache {
    lock: SpinLock,
    entries: UnsafeCell<Entries>,
}

// SAFETY: `entries` is only accessed with `lock` held.
unsafe impl Sync for Cache {}

static CACHE: Cache = Cache {
    lock: SpinLock::new(),
    entries: UnsafeCell::new(Entries {
        maps: [(0, 0); SLOTS],
        n: 0,
        bytes: 0,
    }),
};

/// `SMTALLOC_LARGE_CACHE`, set once at init (0: keep nothing).
static CAPACITY: AtomicUsize = AtomicUsize::new(0);

pub fn set_capacity(bytes: usize) {
    CAPACITY.store(bytes, Relaxed);
}

/// Runs `f` on the entries with the lock held.
fn with_entries<T>(f: impl FnOnce(&mut Entries) -> T) -> T {
    CACHE.lock.lock();
    // SAFETY: the lock is held until `unlock` below.
    let r = f(unsafe { &mut *CACHE.entries.get() });
    CACHE.lock.unlock();
    r
}

/// Keeps the freed mapping `[addr, addr + len)` if it fits; `false`: the
/// caller unmaps it.
pub fn put(addr: usize, len: usize) -> bool {
    let cap = CAPACITY.load(Relaxed);
    if len > cap {
        return false;
    }
    with_entries(|e| {
        if e.n == SLOTS || e.bytes + len > cap {
            return false;
        }
        e.maps[e.n] = (addr, len);
        e.n += 1;
        e.bytes += len;
        true
    })
}

/// Takes the smallest kept mapping of at least `len` bytes whose address
/// is a multiple of `align`: `(address, its length)`. The caller trims what
/// it does not need.
pub fn take(len: usize, align: usize) -> Option<(usize, usize)> {
    if CAPACITY.load(Relaxed) == 0 {
        return None;
    }
    with_entries(|e| {
        let i = (0..e.n)
            .filter(|&i| e.maps[i].1 >= len && e.maps[i].0 % align == 0)
            .min_by_key(|&i| e.maps[i].1)?;
        let found = e.maps[i];
        e.n -= 1;
        e.maps[i] = e.maps[e.n];
        e.bytes -= found.1;
        Some(found)
    })
}

/// Mappings kept and their bytes (for the statistics).
pub fn kept() -> (usize, usize) {
    with_entries(|e| (e.n, e.bytes))
}

/// For `fork`: hold the lock across it (the child must not inherit it
/// taken).
pub fn lock_for_fork() {
    CACHE.lock.lock();
}

pub fn unlock_after_fork() {
    CACHE.lock.unlock();
}
