//! The frame table: for every 2 MiB frame of the address space, which
//! large block starts there (its length in frames) or which core's arena
//! holds it. `free` reads it to tell a large block, a block of the
//! caller's core and another core's block apart with one load. A sparse
//! NORESERVE mapping: untouched parts read as zero and cost nothing.
//!
//! Mapped by `init`; written by `arena` (the frames of core regions) and
//! `large` (large blocks); read by `free` and `alloc` (one load each,
//! `#[inline(always)]`) and by the crate root (`owner_core`).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{
    AtomicPtr, AtomicU32,
    Ordering::{Relaxed, Release},
};

use super::os::{self, FRAME};

/// Frames covered by the frame table: 47-bit user address space.
pub(crate) const TABLE_FRAMES: usize = 1 << (47 - 21);

/// Frame-table tag of a frame in a core's arena region (the low bits hold
/// the core index); large-block lengths never reach it.
pub(crate) const CORE_FRAME: u32 = 1 << 31;

/// The frame table: frame number (address >> 21) -> for a large block's
/// first frame its length in frames; for a frame of a core's arena region
/// [`CORE_FRAME`] | core index; 0 otherwise. A sparse 256 MiB NORESERVE
/// mapping: untouched parts read as zero and cost nothing.
static LARGE_TABLE: AtomicPtr<AtomicU32> = AtomicPtr::new(null_mut());

/// Maps the table (at init; without it there are no large blocks and every
/// block counts as the caller's core's).
pub(crate) fn map() {
    let len = TABLE_FRAMES * core::mem::size_of::<AtomicU32>();
    if let Some(t) = os::mmap_aligned(len, 4096, true) {
        os::madvise_nohugepage(t.as_ptr() as usize, len);
        LARGE_TABLE.store(t.as_ptr().cast(), Release);
    }
}

#[inline(always)]
pub(crate) fn table_slot(p: usize) -> Option<&'static AtomicU32> {
    let t = LARGE_TABLE.load(Relaxed);
    let f = p >> 21;
    if t.is_null() || f >= TABLE_FRAMES {
        return None;
    }
    // SAFETY: the table spans TABLE_FRAMES entries and is never unmapped.
    Some(unsafe { &*t.add(f) })
}

/// The core whose arena region holds the 2 MiB frame of `p` (its tag in
/// the frame table), if any.
#[inline(always)]
pub(crate) fn frame_core(p: usize) -> Option<usize> {
    let tag = table_slot(p)?.load(Relaxed);
    (tag & CORE_FRAME != 0).then_some((tag & !CORE_FRAME) as usize)
}

/// The length of the large block at `p` (a 2 MiB-aligned pointer), if any.
#[inline(always)]
pub(crate) fn large_len(p: *mut c_void) -> Option<usize> {
    let frames = table_slot(p as usize)?.load(Relaxed);
    (frames != 0 && frames & CORE_FRAME == 0).then_some(frames as usize * FRAME)
}

/// The core whose arena region holds the 2 MiB frame of `p` (from the
/// frame table that `free` reads).
pub fn owner_core(p: *const u8) -> Option<usize> {
    frame_core(p as usize)
}
