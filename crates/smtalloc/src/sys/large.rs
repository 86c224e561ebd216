//! Large blocks (1 MiB and more, or aligned beyond 64 KiB): each its own
//! 2 MiB-aligned mapping of whole 2 MiB frames, recorded in the frame
//! table, returned to the OS whole on `free` unless kept for reuse
//! (`large_cache.rs`), grown in place or moved by the kernel on `realloc`.
//!
//! Called by `alloc` and `free`, and by `stats` (counters). Memory of large
//! blocks returns to the OS only in whole 2 MiB units: unmapped whole,
//! shrunk or trimmed by whole frames.
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::{self, null_mut};
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::boot::boot_alloc;
use super::frame_table::table_slot;
use super::init::{ensure_init, is_initialized};
use super::large_cache;
use super::os::{self, FRAME};
use super::settings;

/// Requests of this size or more are "large": a 2 MiB-aligned mapping of
/// their own in the shared large arena.
pub const LARGE_MIN: usize = 1 << 20;

static LARGE_LIVE_BYTES: AtomicU64 = AtomicU64::new(0);

static LARGE_LIVE_BLOCKS: AtomicU64 = AtomicU64::new(0);

static LARGE_TOTAL: AtomicU64 = AtomicU64::new(0);

/// Large blocks served from kept mappings ([`large_cache`]).
static LARGE_REUSED: AtomicU64 = AtomicU64::new(0);

/// A large block: a kept mapping if one fits (trimmed to whole frames,
/// zeroed for `zero`), else a fresh mapping (zero already).
#[cold]
pub(crate) fn large_alloc(size: usize, align: usize, zero: bool) -> *mut c_void {
    if !is_initialized() && !ensure_init() {
        return boot_alloc(size, align);
    }
    let Some(len) = round_frames(size) else {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    if let Some(p) = reuse_large(len, align.max(FRAME), size, zero) {
        return p as *mut c_void;
    }
    match map_large(len, align.max(FRAME), size) {
        Some(p) => p as *mut c_void,
        None => {
            os::set_errno(libc::ENOMEM);
            null_mut()
        }
    }
}

pub(crate) fn round_frames(size: usize) -> Option<usize> {
    if size > isize::MAX as usize / 2 {
        return None;
    }
    Some((size.max(1) + FRAME - 1) & !(FRAME - 1))
}

/// `MADV_HUGEPAGE` for a large block of `len` bytes when huge pages are on
/// and the block, with the large blocks already live, reaches the lazy
/// threshold (`SMTALLOC_THP_AFTER`).
fn advise_large(addr: usize, len: usize) {
    let live = LARGE_LIVE_BYTES.load(Relaxed) as usize;
    if settings::thp() && live.saturating_add(len) >= settings::thp_after() {
        os::madvise_hugepage(addr, len);
    }
}

pub(crate) fn map_large(len: usize, align: usize, size: usize) -> Option<usize> {
    let frames = u32::try_from(len / FRAME).ok()?;
    let p = os::mmap_aligned(len, align, false)?.as_ptr() as usize;
    let Some(slot) = table_slot(p) else {
        os::munmap(p, len);
        return None;
    };
    // Huge pages only where the block fills at least half its frames (a
    // small block with a huge alignment should not fault in 2 MiB), and
    // only once large blocks are a real share of the heap: a small program
    // with a 1 MiB buffer it barely touches keeps 4 KiB pages (`sort`'s
    // peak RSS tripled otherwise), as an arena keeps them below its lazy
    // start.
    if size >= len / 2 {
        advise_large(p, len);
    }
    slot.store(frames, Relaxed);
    LARGE_LIVE_BYTES.fetch_add(len as u64, Relaxed);
    LARGE_LIVE_BLOCKS.fetch_add(1, Relaxed);
    LARGE_TOTAL.fetch_add(1, Relaxed);
    Some(p)
}

/// A kept mapping of at least `len` bytes aligned to `align`, trimmed to
/// `len` (whole frames) and zeroed up to `size` for `zero`.
pub(crate) fn reuse_large(len: usize, align: usize, size: usize, zero: bool) -> Option<usize> {
    let frames = u32::try_from(len / FRAME).ok()?;
    let (p, got) = large_cache::take(len, align)?;
    if got > len {
        os::munmap(p + len, got - len);
    }
    let Some(slot) = table_slot(p) else {
        os::munmap(p, len);
        return None;
    };
    if zero {
        // SAFETY: [p, p + size) lies in the mapping just taken, ours alone.
        unsafe { ptr::write_bytes(p as *mut u8, 0, size) };
    }
    slot.store(frames, Relaxed);
    LARGE_LIVE_BYTES.fetch_add(len as u64, Relaxed);
    LARGE_LIVE_BLOCKS.fetch_add(1, Relaxed);
    LARGE_TOTAL.fetch_add(1, Relaxed);
    LARGE_REUSED.fetch_add(1, Relaxed);
    Some(p)
}

/// Frees a large block: kept for reuse if the cache has room, else
/// unmapped whole. Preserves errno (glibc's `free` does; this is the only
/// `free` path that unmaps: mimalloc's `mi_free` at most gives free pages
/// of a small region back with `madvise`, which does not fail on them).
#[cold]
#[inline(never)]
pub(crate) fn large_free(p: *mut c_void, len: usize) {
    if let Some(slot) = table_slot(p as usize) {
        slot.store(0, Relaxed);
    }
    LARGE_LIVE_BYTES.fetch_sub(len as u64, Relaxed);
    LARGE_LIVE_BLOCKS.fetch_sub(1, Relaxed);
    if !large_cache::put(p as usize, len) {
        os::keep_errno(|| os::munmap(p as usize, len));
    }
}

#[cold]
pub(crate) fn large_realloc(p: *mut c_void, len: usize, n: usize) -> *mut c_void {
    debug_assert!(
        n >= LARGE_MIN,
        "a large block shrinking below LARGE_MIN moves to the heaps"
    );
    let Some(new_len) = round_frames(n) else {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    let Some(slot) = table_slot(p as usize) else {
        return null_mut();
    };
    let addr = p as usize;
    if new_len == len {
        return p;
    }
    if new_len < len {
        // Give back whole frames at the end.
        os::munmap(addr + new_len, len - new_len);
        slot.store((new_len / FRAME) as u32, Relaxed);
        LARGE_LIVE_BYTES.fetch_sub((len - new_len) as u64, Relaxed);
        return p;
    }
    let grown = new_len - len;
    if os::mremap_in_place(addr, len, new_len) {
        advise_large(addr, new_len);
        slot.store((new_len / FRAME) as u32, Relaxed);
        LARGE_LIVE_BYTES.fetch_add(grown as u64, Relaxed);
        return p;
    }
    // Move: reserve a 2 MiB-aligned range and let the kernel move the page
    // tables there (no copy; huge pages stay huge).
    let Some(dst) = os::mmap_aligned(new_len, FRAME, true) else {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    let dst = dst.as_ptr() as usize;
    let Some(dslot) = table_slot(dst) else {
        os::munmap(dst, new_len);
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    if !os::mremap_to(addr, len, dst, new_len) {
        os::munmap(dst, new_len);
        os::set_errno(libc::ENOMEM);
        return null_mut();
    }
    advise_large(dst, new_len);
    slot.store(0, Relaxed);
    dslot.store((new_len / FRAME) as u32, Relaxed);
    LARGE_LIVE_BYTES.fetch_add(grown as u64, Relaxed);
    dst as *mut c_void
}

/// (live bytes, live blocks, blocks ever) of the large arena.
pub fn large_counters() -> (u64, u64, u64) {
    (
        LARGE_LIVE_BYTES.load(Relaxed),
        LARGE_LIVE_BLOCKS.load(Relaxed),
        LARGE_TOTAL.load(Relaxed),
    )
}

/// Freed large blocks kept for reuse now (mappings, bytes), and large
/// blocks served from kept mappings so far.
pub fn large_kept() -> (usize, usize, u64) {
    let (n, bytes) = large_cache::kept();
    (n, bytes, LARGE_REUSED.load(Relaxed))
}
