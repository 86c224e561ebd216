//! Each thread's own state, in one initial-exec thread-local area
//! (`csrc/thread_area.c`) found at a fixed offset from the thread pointer,
//! like glibc's rseq area: which outbox slot of `remote` the thread owns
//! for its cross-core frees. At the thread's first cross-core free it
//! claims a slot and registers a `pthread_key` destructor that gives the
//! slot back when the thread exits (its open node sent first).
//!
//! Why per thread and not per CPU: a per-CPU structure must be taken with
//! a compare-and-swap (another thread of the same CPU may be preempted
//! holding it); a thread's own needs nothing. On the 2-vCPU KVM guest of
//! issue 31 (producer/consumer, 2 threads pinned, 5 interleaved runs)
//! per-thread outboxes cut an xmalloc block from 19.8 to 17.0 ns when the
//! consumer frees blocks untouched (tcmalloc 18.8, jemalloc 16.7), and
//! from 32.2 to 28.3 ns when it reads each block first.
//!
//! A per-thread cache of free blocks in front of mimalloc (tcmalloc's
//! design) was tried here and measured slower, not faster: finding a freed
//! block's size class takes mimalloc's page lookup (`mi_usable_size`),
//! which costs what mimalloc's own local free does, so the cache only
//! added steps (a malloc+free pair 9.1 ns against 8.3 without it; 15.9
//! against 14.5 with larson's sizes over 5,000 live blocks).
//!
//! The area starts zeroed in every thread: state [`FRESH`], no slot.
//!
//! Set up by `init`; used by `free` (the slot), `stats` (the caller's own
//! slot) and `fork` (the child keeps only the forking thread's slot).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::sync::atomic::{
    AtomicIsize, AtomicU32,
    Ordering::{Acquire, Relaxed, Release},
};

use super::os;
use super::remote;

/// Nothing kept yet; no destructor registered.
const FRESH: u32 = 0;
/// The exit destructor is registered.
const LIVE: u32 = 1;
/// The destructor ran (or could not be registered): claim no slot.
const EXITING: u32 = 2;

/// The slot word for "use the CPU's outbox".
const NO_SLOT: u32 = u32::MAX;
/// No thread area (offset unknown, area too small, or no pthread key).
const NO_AREA: isize = isize::MIN;

#[repr(C)]
pub struct ThreadArea {
    state: u32,
    /// 0 = none yet, `k + 1` = outbox slot `k`, [`NO_SLOT`].
    slot: u32,
}

static AREA_OFF: AtomicIsize = AtomicIsize::new(NO_AREA);
static KEY: AtomicU32 = AtomicU32::new(0);

/// At init: finds the area and creates the key whose destructor cleans up
/// after a thread. Without them, every thread parks in its CPU's outbox.
pub(crate) fn init() {
    let Some((off, len)) = os::thread_area_offset() else {
        return;
    };
    if len < core::mem::size_of::<ThreadArea>() {
        return;
    }
    let Some(key) = os::key_create(at_exit) else {
        return;
    };
    KEY.store(key, Relaxed);
    AREA_OFF.store(off, Release);
}

/// The calling thread's area, if there is one.
#[inline(always)]
fn area() -> Option<*mut ThreadArea> {
    let off = AREA_OFF.load(Acquire);
    (off != NO_AREA).then(|| os::thread_area(off).cast::<ThreadArea>())
}

/// The calling thread's outbox slot, claimed at the first call; `None`:
/// park in the CPU's outbox.
#[inline(always)]
pub(crate) fn slot() -> Option<usize> {
    let a = area()?;
    // SAFETY: the area is this thread's own (see `os::thread_area`) and
    // only this thread touches it; the word is read, then written by
    // `claim`.
    match unsafe { (*a).slot } {
        0 => claim(a),
        NO_SLOT => None,
        k => Some(k as usize - 1),
    }
}

/// The calling thread's slot if it has one (never claims).
pub(crate) fn peek_slot() -> Option<usize> {
    let a = area()?;
    // SAFETY: as in `slot`.
    match unsafe { (*a).slot } {
        0 | NO_SLOT => None,
        k => Some(k as usize - 1),
    }
}

/// Registers the exit destructor for this thread: [`LIVE`], or
/// [`EXITING`] if glibc refuses (then no slot is claimed: it could not be
/// given back).
#[cold]
#[inline(never)]
fn register(a: *mut ThreadArea) -> bool {
    let ok = os::set_specific(KEY.load(Relaxed), 1);
    // SAFETY: the calling thread's own area.
    unsafe { (*a).state = if ok { LIVE } else { EXITING } };
    ok
}

#[cold]
#[inline(never)]
fn claim(a: *mut ThreadArea) -> Option<usize> {
    // SAFETY: the calling thread's own area.
    let live = unsafe { (*a).state == LIVE } || unsafe { (*a).state == FRESH && register(a) };
    let slot = if live { remote::claim_slot() } else { None };
    // SAFETY: as above.
    unsafe { (*a).slot = slot.map_or(NO_SLOT, |k| k as u32 + 1) };
    slot
}

/// The key's destructor, at the exit of a thread that claimed a slot:
/// sends its open node and frees the slot; whatever the thread frees after
/// this (later destructors) goes to its CPU's outbox.
unsafe extern "C" fn at_exit(_value: *mut c_void) {
    let Some(a) = area() else {
        return;
    };
    // SAFETY: the exiting thread's own area, valid until it is gone.
    unsafe {
        (*a).state = EXITING;
        let k = (*a).slot;
        if k != 0 && k != NO_SLOT {
            remote::release_slot(k as usize - 1);
        }
        (*a).slot = NO_SLOT;
    }
}

/// In the child after `fork`: only the forking thread exists, so only its
/// slot stays claimed.
pub(crate) fn after_fork_child(ncores: usize) {
    remote::reset_slots_in_child(peek_slot(), ncores);
}
