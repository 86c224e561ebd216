//! The one lock type of the allocator: a flag taken with an atomic
//! compare-and-swap. `std::sync::Mutex` is not usable inside `malloc` (it
//! may allocate or park through the allocator), and every lock here guards
//! a few instructions or a rare slow path.
//!
//! Used by `arena` (the arena-growth lock), `large_cache` and `remote`.

use core::sync::atomic::{
    AtomicBool,
    Ordering::{Acquire, Relaxed, Release},
};

use super::os;

pub struct SpinLock(AtomicBool);

impl SpinLock {
    pub const fn new() -> SpinLock {
        SpinLock(AtomicBool::new(false))
    }

    /// Takes the lock if it is free; `false` if someone holds it.
    #[inline(always)]
    pub fn try_lock(&self) -> bool {
        self.0
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_ok()
    }

    /// Takes the lock, yielding the CPU while someone else holds it (the
    /// holder may be a preempted thread on this CPU).
    pub fn lock(&self) {
        while self
            .0
            .compare_exchange_weak(false, true, Acquire, Relaxed)
            .is_err()
        {
            os::yield_now();
        }
    }

    /// Whether someone holds the lock right now (for counting only).
    pub fn is_locked(&self) -> bool {
        self.0.load(Relaxed)
    }

    #[inline(always)]
    pub fn unlock(&self) {
        self.0.store(false, Release);
    }
}
