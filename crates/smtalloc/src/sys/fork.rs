//! Fork: the child must not inherit a held arena lock, nor parked
//! cross-core frees. mimalloc's own fast paths are lock-free; its pages
//! owned by threads that do not exist in the child stay valid (frees to
//! them are cross-thread frees). Registered with `pthread_atfork` by
//! `init`; nothing else calls these handlers.

use super::arena::GROW_LOCK;
use super::cpu::topology_counts;
use super::large_cache;
use super::remote;
use super::thread_area;

/// Before fork: flushes and takes every outbox and inbox of the cross-core
/// frees, then the arena-growth lock and the large-block cache's lock.
pub(crate) extern "C" fn prepare() {
    let (cpus, cores) = topology_counts();
    remote::take_and_flush_all(cpus, cores);
    GROW_LOCK.lock();
    large_cache::lock_for_fork();
}

/// Parent and child alike release what `prepare` took.
pub(crate) extern "C" fn release() {
    large_cache::unlock_after_fork();
    GROW_LOCK.unlock();
    let (cpus, cores) = topology_counts();
    remote::release_all(cpus, cores);
}

/// The child releases what `prepare` took, then frees the parked blocks
/// waiting in the inboxes and takes back the outbox slots of the threads
/// it does not have.
pub(crate) extern "C" fn child() {
    release();
    let (_, cores) = topology_counts();
    thread_area::after_fork_child(cores);
}
