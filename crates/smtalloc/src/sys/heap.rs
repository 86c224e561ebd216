//! Heaps: each core's current mimalloc heap (bound to its newest arena
//! region), found on the fast path from the caller's core; created with the
//! core's first arena, grown into a new region when full, and falling back
//! to mimalloc's shared main heap when no region can be made. `with_heap`
//! is the allocation path every entry point of `alloc.rs` takes.
//!
//! Called by `alloc` (every allocation under 1 MiB) and `stats` (counters).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{
    AtomicPtr, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

use super::arena::{new_region, GROW_LOCK, MAX_REGIONS, NREGIONS, REGIONS};
use super::boot::boot_alloc;
use super::cpu::{current_core, rseq_cpu_core, MAX_CORES};
use super::init::{ensure_init, is_initialized};
use super::mi::{self, MiHeap};
use super::os;
use super::remote;
use super::settings;

/// Core index -> that core's current mimalloc heap (null until first use).
static HEAPS: [AtomicPtr<MiHeap>; MAX_CORES] = [const { AtomicPtr::new(null_mut()) }; MAX_CORES];

/// Cores whose arena could not be created or grown and that fell back to
/// mimalloc's shared main heap.
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// Per-core allocation counters (only updated with `SMTALLOC_STATS=1`).
#[repr(align(64))]
struct CoreCounter {
    calls: AtomicU64,
    bytes: AtomicU64,
}

static COUNTERS: [CoreCounter; MAX_CORES] = [const {
    CoreCounter {
        calls: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    }
}; MAX_CORES];

/// Fast path: the current core and its heap, if both are ready.
#[inline(always)]
pub(crate) fn fast_heap() -> Option<(usize, *mut MiHeap)> {
    let (_, core) = rseq_cpu_core()?;
    // SAFETY: CPU_CORE only holds indices < MAX_CORES (init maps at most
    // MAX_CPUS <= MAX_CORES CPUs to dense core indices).
    let slot = unsafe { HEAPS.get_unchecked(core) };
    // Acquire: the heap was fully built before its pointer was published.
    let heap = slot.load(Acquire);
    (!heap.is_null()).then_some((core, heap))
}

#[inline(always)]
pub(crate) fn count(core: usize, size: usize) {
    if settings::stats_enabled() {
        let c = &COUNTERS[core];
        c.calls.fetch_add(1, Relaxed);
        c.bytes.fetch_add(size as u64, Relaxed);
    }
}

/// The heap of `core`, creating its first arena if needed.
#[cold]
pub(crate) fn heap_of_core(core: usize) -> *mut MiHeap {
    let h = HEAPS[core].load(Acquire);
    if !h.is_null() {
        return h;
    }
    GROW_LOCK.lock();
    let mut h = HEAPS[core].load(Acquire);
    if h.is_null() {
        h = new_region(core, settings::reserve()).unwrap_or_else(fallback_heap);
        HEAPS[core].store(h, Release);
    }
    GROW_LOCK.unlock();
    h
}

pub(crate) fn fallback_heap() -> *mut MiHeap {
    FALLBACKS.fetch_add(1, Relaxed);
    // SAFETY: returns mimalloc's main heap.
    unsafe { mi::mi_heap_main() }
}

/// `failed` (the core's current heap) could not serve a request of `size`
/// bytes: its exclusive arena is full. Returns the heap to retry with: an
/// older region of the same core that now succeeds is made current by
/// the caller's retry; otherwise a new region, twice the core's largest so
/// far (so a core needs few regions), owned by the same core. `None`: out
/// of memory.
#[cold]
pub(crate) fn grow(
    core: usize,
    failed: *mut MiHeap,
    size: usize,
    attempt: usize,
) -> Option<*mut MiHeap> {
    GROW_LOCK.lock();
    let cur = HEAPS[core].load(Acquire);
    let result = if cur != failed {
        // Another thread already grew this core.
        Some(cur)
    } else {
        let n = NREGIONS.load(Relaxed);
        // Older regions of this core, newest first, are offered once each.
        let older = REGIONS[..n]
            .iter()
            .rev()
            .filter(|r| r.core.load(Relaxed) as usize == core)
            .map(|r| r.heap.load(Relaxed))
            .filter(|h| !h.is_null() && *h != failed)
            .nth(attempt);
        match older {
            Some(h) => Some(h),
            None => {
                let largest = REGIONS[..n]
                    .iter()
                    .filter(|r| r.core.load(Relaxed) as usize == core)
                    .map(|r| r.len.load(Relaxed))
                    .max()
                    .unwrap_or(0);
                let want = largest
                    .saturating_mul(2)
                    .min(1 << 30)
                    .max(settings::reserve())
                    .max(size.saturating_mul(4));
                new_region(core, want).or_else(|| {
                    if failed == fallback_heap_peek() {
                        None
                    } else {
                        Some(fallback_heap())
                    }
                })
            }
        }
    };
    if let Some(h) = result {
        HEAPS[core].store(h, Release);
    }
    GROW_LOCK.unlock();
    result
}

pub(crate) fn fallback_heap_peek() -> *mut MiHeap {
    // SAFETY: returns mimalloc's main heap.
    unsafe { mi::mi_heap_main() }
}

/// Runs `op` on the current core's heap; on failure grows the core's arena
/// and retries. `fresh`: the request may be served from the bootstrap
/// buffer while smtalloc initializes (not so for realloc of a live block).
#[inline(always)]
pub(crate) fn with_heap(
    size: usize,
    align: usize,
    fresh: bool,
    op: impl Fn(*mut MiHeap) -> *mut c_void,
) -> *mut c_void {
    if let Some((core, heap)) = fast_heap() {
        if remote::has_mail(core) {
            remote::drain(core);
        }
        let p = op(heap);
        if !p.is_null() {
            count(core, size);
            return p;
        }
    }
    with_heap_slow(size, align, fresh, &op)
}

#[cold]
#[inline(never)]
pub(crate) fn with_heap_slow(
    size: usize,
    align: usize,
    fresh: bool,
    op: &dyn Fn(*mut MiHeap) -> *mut c_void,
) -> *mut c_void {
    if !is_initialized() && !ensure_init() {
        return if fresh {
            boot_alloc(size, align)
        } else {
            os::set_errno(libc::ENOMEM);
            null_mut()
        };
    }
    let core = current_core();
    let mut heap = heap_of_core(core);
    for attempt in 0..MAX_REGIONS + 2 {
        let p = op(heap);
        if !p.is_null() {
            count(core, size);
            return p;
        }
        match grow(core, heap, size, attempt) {
            Some(h) => heap = h,
            None => break,
        }
    }
    os::set_errno(libc::ENOMEM);
    null_mut()
}

/// (calls, bytes) allocated on `core` (counted with `SMTALLOC_STATS=1`).
pub fn core_counters(core: usize) -> (u64, u64) {
    COUNTERS
        .get(core)
        .map(|c| (c.calls.load(Relaxed), c.bytes.load(Relaxed)))
        .unwrap_or((0, 0))
}

/// How many times a core fell back to mimalloc's shared main heap.
pub fn fallbacks() -> u64 {
    FALLBACKS.load(Relaxed)
}
