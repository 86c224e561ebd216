//! `free` (glibc's semantics): a NULL, bootstrap or large block first, then
//! a block of the caller's own core straight to mimalloc, another core's
//! block parked for its core (`remote.rs`).
//!
//! Hot path of `free(p)`: one alignment test (large blocks are
//! 2 MiB-aligned), one range test (bootstrap buffer), the CPU and one load
//! of the frame table (which core's arena `p` is in); `mi_free` for the
//! caller's own core, else parked for the owning core. These steps and
//! mimalloc's own are where smtalloc trails tcmalloc (issue 31, 2-vCPU
//! KVM guest, no PMU: a malloc+free pair on one CPU costs 9.6 ns against
//! tcmalloc's 5.1 and jemalloc's 8.3, medians of 9 rounds); the
//! cross-core part is cheap, see `remote.rs`.
//!
//! Called from above only: smtalloc-preload's exports (through `raw`), the
//! `GlobalAlloc` (`global.rs`) and `alloc.rs` (`realloc`).
#![allow(unsafe_code)]

use core::ffi::c_void;

use super::boot::in_boot;
use super::cpu::rseq_cpu_core;
use super::frame_table::{frame_core, large_len};
use super::large::large_free;
use super::mi;
use super::os::FRAME;
use super::remote;
use super::thread_area;

/// `free`: NULL is a no-op; bootstrap blocks are never reused; large blocks
/// are unmapped whole; everything else goes back to its owning mimalloc
/// heap (cross-thread and cross-core frees included).
///
/// # Safety
/// `p` is NULL or a live block from this allocator.
#[inline(always)]
pub unsafe fn free(p: *mut c_void) {
    if (p as usize) & (FRAME - 1) == 0 {
        if p.is_null() {
            return;
        }
        if let Some(len) = large_len(p) {
            large_free(p, len);
            return;
        }
    }
    if in_boot(p) {
        return;
    }
    // A block of another core's arena is parked and sent to its core, which
    // frees it (see `remote`); this core's blocks go straight to mimalloc.
    if let (Some((cpu, here)), Some(owner)) = (rseq_cpu_core(), frame_core(p as usize)) {
        // SAFETY: `p` is a live block of a core arena (tagged frame), so
        // mimalloc's; the caller does not use it again.
        if owner != here {
            let parked = match thread_area::slot() {
                // SAFETY: as above; the slot is this thread's.
                Some(slot) => unsafe { remote::park_in_slot(slot, owner, p) },
                // SAFETY: as above.
                None => unsafe { remote::park(cpu, owner, p) },
            };
            if parked {
                return;
            }
        }
    }
    // SAFETY: the caller guarantees `p` is a live block; it is neither
    // large nor bootstrap, so it is mimalloc's. mi_free leaves errno alone.
    unsafe { mi::mi_free(p) }
}
