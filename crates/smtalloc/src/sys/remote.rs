//! Cross-core frees by message: `free` of a block from another core's
//! arena does not touch that core's memory; it parks the pointer in an
//! outbox of the CPU the caller runs on, and full outboxes are sent to the
//! owning core's inbox, which that core's next `malloc` empties by freeing
//! the blocks itself, locally.
//!
//! Why: mimalloc frees a block of another thread's page by writing the
//! free-list link into the block and pushing it onto the page's atomic
//! thread-free list; the owner later walks that list, reading every link
//! from the other core's cache, and then writes the block again to reuse
//! it. On a host whose cores are far apart (this KVM guest's vCPUs measure
//! 100-500 ns per round trip) that walk dominated producer/consumer
//! allocation (xmalloc-like, larson-like): `_mi_page_free_collect` was 30%
//! of the time. tcmalloc and jemalloc avoid it by letting the freeing thread
//! keep the block, which is exactly what smtalloc must not do (the block's
//! frame would then serve two cores). Here the freeing core only reads the
//! pointer; the owner frees its own block, so mimalloc's fast local free
//! path runs and the block's line moves once. snmalloc's message-passing
//! design is the precedent.
//!
//! Where the time goes now (issue 31; 2-vCPU KVM guest, Intel family 6
//! model 167, no PMU: `smtlab run` samples' rusage, `perf stat` software
//! counters, `strace -c -f`, `perf record -e cpu-clock`, jemalloc's
//! `stats_print`, `SMTALLOC_STATS=1`): not in system calls (< 1 ns of
//! sys time per block for every allocator), page faults (xmalloc: ~20
//! per million blocks for all) or context switches (6-15 per million).
//! In 9 interleaved rounds smtalloc ran xmalloc at 0.69-0.73x tcmalloc
//! and 0.77-0.80x jemalloc (CPU per block 30.7 ns, 22.3, 23.2), larson
//! at 0.63-0.65x and 0.79-0.81x (58.5 ns, 36.4, 45.2), pinned or not.
//! jemalloc and tcmalloc take no atomic per freed block and send almost
//! nothing home: in smtlab's xmalloc ring every thread also allocates,
//! so the freeing thread reuses the block (0.26% of jemalloc's requests
//! reached an arena bin, 0.002 bin locks per block) - the frame sharing
//! smtalloc forbids. Here a parked free costs one locked RMW (`taken`,
//! a quarter to a third of `free`'s own time) plus a sixty-first of a
//! push and a drain; then the owner's `mi_free`. The cpu-clock profile
//! of an xmalloc replica puts 21% in `malloc`'s own steps (rseq CPU,
//! core and heap tables, inbox), 18% in `mi_heap_malloc`, 9% in `free`,
//! 8% in `mi_free`, 3% in mimalloc's thread-free collection, 1% here
//! draining; larson's: 23% `mi_free` (a third of it mimalloc's atomic
//! cross-thread path), 19% `mi_heap_malloc`, 13% `free`, 12% mimalloc's
//! collection and page queues, with 7-9x tcmalloc's page faults (purged
//! pages faulted back) and 4 KiB pages below `SMTALLOC_THP_AFTER`
//! (`SMTALLOC_THP_AFTER=0` ran a larson replica ~20% faster). The
//! atomic path is the fallback below: with the owner's thread
//! descheduled (the guest loaded beside a build), no node is idle, and
//! 150-200k of ~270k cross-core frees in a larson run went to `mi_free`
//! directly, with 4 nodes as with 16 (a bounded outbox cannot outlast a
//! time slice).
//!
//! Structures, all static (no allocation):
//! * per thread (up to [`THREAD_SLOTS`] threads, `thread_area.rs`) an
//!   [`Outbox`] with [`NODES`] nodes of [`NODE_CAP`] pointers; one node is
//!   open at a time, for one owner core. A node is sent when full, or when
//!   a free for another owner arrives (then, if it holds fewer than
//!   [`MIN_SEND`] blocks, they are freed directly instead). The thread
//!   claims its slot at its first cross-core free and holds it until it
//!   exits, so parking is a few plain stores. A thread that finds no idle
//!   node (the owner has not emptied its inbox yet) frees directly with
//!   `mi_free`.
//! * per CPU the same [`Outbox`], for threads past the slots (or without
//!   the thread-local word): taken with one uncontended compare-and-swap
//!   on lines only that CPU's threads touch; a thread that finds it taken
//!   (another thread on this CPU was preempted holding it) frees directly.
//! * per core an [`Inbox`]: a lock-free stack of sent nodes (push by CAS,
//!   emptied whole by one swap, so no ABA). `malloc` on a core whose inbox
//!   is not empty first frees the blocks of every node there, then marks
//!   the nodes idle for their senders.
//!
//! Bounds: a thread or a CPU parks at most [`NODES`] x [`NODE_CAP`]
//! blocks. Parked
//! blocks stay in their owner's arena (frames stay core-private); they are
//! freed at the latest when the owner core allocates again, and smtalloc
//! never returns core-arena memory to the OS anyway, so a block that waits
//! in an inbox of a core that allocates no more costs nothing that freeing
//! it would save. An open node waits for the next cross-core free from its
//! thread or CPU, or its thread's exit. `fork` sends and frees what the
//! CPUs hold first, the child frees what waits in the inboxes and takes
//! back the slots of threads it does not have (the child inherits no
//! taken outbox or inbox); the statistics free what is not in use right
//! then.
//!
//! Called by `free` (park a block), `heap` (a core's next `malloc` empties
//! its inbox), `fork`, `stats` and the crate root (counters).
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};

use super::spin_lock::SpinLock;

use super::cpu::{MAX_CORES, MAX_CPUS};
use super::mi;

/// Pointers per node: with its header a node is 512 bytes, eight lines.
pub const NODE_CAP: usize = 61;
/// Nodes per CPU outbox: one being filled while others wait in inboxes.
pub const NODES: usize = 4;
/// A node closed early (a free for another owner arrived) is sent only if
/// it holds this many blocks; fewer are freed directly, as a send costs
/// about what one `mi_free` does.
pub const MIN_SEND: u32 = 8;
/// No node open.
const NONE: u32 = u32::MAX;

#[repr(C, align(64))]
struct Node {
    /// Next node in an inbox.
    next: AtomicPtr<Node>,
    /// Open or in an inbox: only the outbox's holder or the draining core
    /// touches `len`/`blocks`. Cleared (release) by the core that freed
    /// its blocks.
    busy: AtomicBool,
    len: UnsafeCell<u32>,
    blocks: UnsafeCell<[*mut c_void; NODE_CAP]>,
}

#[repr(C, align(64))]
struct Outbox {
    taken: SpinLock,
    /// Cross-core frees from this CPU that were not parked (outbox taken,
    /// no idle node, or a node closed early with few blocks): `mi_free`d
    /// directly. For the statistics.
    direct: AtomicU64,
    /// Index of the open node, or [`NONE`].
    open: UnsafeCell<u32>,
    /// Owner core of the open node's blocks.
    owner: UnsafeCell<usize>,
    nodes: [Node; NODES],
}

/// One line per core: written by senders (push), read by the core's
/// `malloc`.
#[repr(C, align(128))]
struct Inbox {
    head: AtomicPtr<Node>,
    draining: SpinLock,
    /// Blocks and nodes freed from this inbox (by the draining thread, on
    /// the line it writes anyway). For the statistics.
    freed_blocks: AtomicU64,
    freed_nodes: AtomicU64,
}

// SAFETY: a node's `len`/`blocks` are accessed only by whoever holds it:
// the thread holding its outbox's `taken` while the node is open, then the
// thread that swapped it out of an inbox (acquire, after the sender's
// release push) until it clears `busy` (release; the sender reuses the node
// only after an acquire load of `busy == false`).
unsafe impl Sync for Node {}
// SAFETY: `open` and `owner` are accessed only while holding `taken`.
unsafe impl Sync for Outbox {}

const fn node() -> Node {
    Node {
        next: AtomicPtr::new(null_mut()),
        busy: AtomicBool::new(false),
        len: UnsafeCell::new(0),
        blocks: UnsafeCell::new([null_mut(); NODE_CAP]),
    }
}

const fn outbox() -> Outbox {
    Outbox {
        taken: SpinLock::new(),
        direct: AtomicU64::new(0),
        open: UnsafeCell::new(NONE),
        owner: UnsafeCell::new(0),
        nodes: [const { node() }; NODES],
    }
}

static OUT: [Outbox; MAX_CPUS] = [const { outbox() }; MAX_CPUS];

/// Threads with an outbox of their own (`thread_area.rs`); a thread past
/// them parks in its CPU's outbox.
pub const THREAD_SLOTS: usize = 512;

/// Per-thread outboxes: a slot's `taken` is held by the thread that
/// claimed it for as long as it lives, so parking in it takes no atomic
/// step at all (a per-CPU outbox costs one compare-and-swap per block:
/// see `thread_area.rs` for what that cost).
static SLOT_OUT: [Outbox; THREAD_SLOTS] = [const { outbox() }; THREAD_SLOTS];

/// Where a slot search starts: threads spread over the slots.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

static IN: [Inbox; MAX_CORES] = [const {
    Inbox {
        head: AtomicPtr::new(null_mut()),
        draining: SpinLock::new(),
        freed_blocks: AtomicU64::new(0),
        freed_nodes: AtomicU64::new(0),
    }
}; MAX_CORES];

/// Parks `p`, a live block of core `owner`'s arena freed on CPU `cpu`
/// (of another core). `false` if it could not be parked: the caller frees
/// it itself.
///
/// # Safety
/// `p` is a live mimalloc block of core `owner`'s arena, not used after
/// this call when it returns `true`.
#[inline(always)]
pub unsafe fn park(cpu: usize, owner: usize, p: *mut c_void) -> bool {
    let (Some(ob), true) = (OUT.get(cpu), owner < MAX_CORES) else {
        return false;
    };
    if !ob.taken.try_lock() {
        ob.direct.fetch_add(1, Relaxed);
        return false;
    }
    // SAFETY: `taken` is ours until the unlock below; see `Sync`.
    let parked = unsafe { park_taken(ob, owner, p) };
    ob.taken.unlock();
    parked
}

/// Parks `p` (as [`park`]) in thread slot `slot`, which the caller owns
/// ([`claim_slot`]); no atomic step unless a node is sent.
///
/// # Safety
/// As [`park`]; `slot` was claimed by the calling thread.
#[inline(always)]
pub unsafe fn park_in_slot(slot: usize, owner: usize, p: *mut c_void) -> bool {
    let (Some(ob), true) = (SLOT_OUT.get(slot), owner < MAX_CORES) else {
        return false;
    };
    // SAFETY: the calling thread holds the slot's `taken` (claimed).
    unsafe { park_taken(ob, owner, p) }
}

/// Claims a free thread slot for the calling thread (taking its `taken`
/// for good); `None` when all are claimed.
#[cold]
pub fn claim_slot() -> Option<usize> {
    let start = NEXT_SLOT.fetch_add(1, Relaxed);
    (0..THREAD_SLOTS)
        .map(|i| (start + i) % THREAD_SLOTS)
        .find(|&i| SLOT_OUT[i].taken.try_lock())
}

/// At the exit of the thread that claimed `slot`: sends or frees its open
/// node and frees the slot (its nodes still in inboxes are drained by
/// their owners as usual; the next claimant uses the idle ones).
pub fn release_slot(slot: usize) {
    let Some(ob) = SLOT_OUT.get(slot) else {
        return;
    };
    // SAFETY: the calling thread claimed the slot, so holds `taken`.
    unsafe {
        if *ob.open.get() != NONE {
            close(ob);
        }
    }
    ob.taken.unlock();
}

/// In a child after `fork`: the threads that claimed the other slots do
/// not exist here. Frees what waits in every inbox (nodes of those
/// threads included), then empties and frees their slots; the blocks of
/// their open nodes are left allocated (at most [`NODES`] x [`NODE_CAP`]
/// per thread: their pointers may have been half-written when the
/// parent forked).
pub fn reset_slots_in_child(mine: Option<usize>, ncores: usize) {
    for inbox in IN.iter().take(ncores.min(MAX_CORES)) {
        drain_taken(inbox);
    }
    for (i, ob) in SLOT_OUT.iter().enumerate() {
        if Some(i) == mine || ob.taken.try_lock() {
            if Some(i) != mine {
                ob.taken.unlock();
            }
            continue;
        }
        // SAFETY: single-threaded child; the slot's thread is gone.
        unsafe {
            for n in &ob.nodes {
                *n.len.get() = 0;
                n.busy.store(false, Relaxed);
            }
            *ob.open.get() = NONE;
        }
        ob.taken.unlock();
    }
}

/// [`park`] with the outbox taken; `false` (counted as a direct free) when
/// no node is idle.
#[inline(always)]
unsafe fn park_taken(ob: &Outbox, owner: usize, p: *mut c_void) -> bool {
    // SAFETY: the caller holds `ob.taken`.
    unsafe {
        let open = &mut *ob.open.get();
        if *open != NONE && *ob.owner.get() != owner {
            close(ob);
        }
        if *open == NONE {
            let Some(i) = ob.nodes.iter().position(|n| !n.busy.load(Acquire)) else {
                // Every node waits in an inbox: the caller frees it directly.
                ob.direct.fetch_add(1, Relaxed);
                return false;
            };
            ob.nodes[i].busy.store(true, Relaxed);
            *ob.nodes[i].len.get() = 0;
            *open = i as u32;
            *ob.owner.get() = owner;
        }
        let n = &ob.nodes[*open as usize];
        let len = &mut *n.len.get();
        (*n.blocks.get())[*len as usize] = p;
        *len += 1;
        if *len as usize == NODE_CAP {
            send(n, owner);
            *open = NONE;
        }
    }
    true
}

/// Closes the open node of `ob`: sends it, or frees its few blocks here.
#[cold]
#[inline(never)]
unsafe fn close(ob: &Outbox) {
    // SAFETY: the caller holds `ob.taken` and a node is open.
    unsafe {
        let open = &mut *ob.open.get();
        let n = &ob.nodes[*open as usize];
        if *n.len.get() >= MIN_SEND {
            send(n, *ob.owner.get());
        } else {
            ob.direct.fetch_add(u64::from(*n.len.get()), Relaxed);
            free_blocks(n);
            n.busy.store(false, Release);
        }
        *open = NONE;
    }
}

/// Pushes node `n` onto core `owner`'s inbox (release: its blocks and
/// length are visible to whoever swaps it out).
fn send(n: &Node, owner: usize) {
    let inbox = &IN[owner];
    let me = n as *const Node as *mut Node;
    let mut head = inbox.head.load(Relaxed);
    loop {
        n.next.store(head, Relaxed);
        match inbox.head.compare_exchange_weak(head, me, Release, Relaxed) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}

/// Frees the blocks of `n` and empties it; returns how many.
///
/// # Safety
/// The caller holds `n` (see `Sync`); its blocks are live mimalloc blocks.
unsafe fn free_blocks(n: &Node) -> u32 {
    // SAFETY: the caller holds `n`.
    unsafe {
        let len = core::mem::take(&mut *n.len.get());
        let blocks = &*n.blocks.get();
        for &p in &blocks[..len as usize] {
            mi::mi_free(p);
        }
        len
    }
}

/// Whether core `core` has parked blocks waiting (one load of its inbox
/// line, for `malloc`'s fast path).
#[inline(always)]
pub fn has_mail(core: usize) -> bool {
    IN.get(core)
        .is_some_and(|i| !i.head.load(Relaxed).is_null())
}

/// Frees every block waiting in core `core`'s inbox (unless another thread
/// is doing so right now).
#[cold]
#[inline(never)]
pub fn drain(core: usize) {
    let Some(inbox) = IN.get(core) else {
        return;
    };
    if !inbox.draining.try_lock() {
        return;
    }
    drain_taken(inbox);
    inbox.draining.unlock();
}

fn drain_taken(inbox: &Inbox) {
    let mut n = inbox.head.swap(null_mut(), Acquire);
    let (mut blocks, mut nodes) = (0u64, 0u64);
    while !n.is_null() {
        // SAFETY: `n` was pushed by `send` (a node of a static outbox) and
        // swapped out by us alone: we hold it until `busy` is cleared.
        // Read `next` first: the sender may reuse the node after that.
        unsafe {
            let node = &*n;
            let next = node.next.load(Relaxed);
            blocks += u64::from(free_blocks(node));
            nodes += 1;
            node.busy.store(false, Release);
            n = next;
        }
    }
    if nodes > 0 {
        inbox.freed_blocks.fetch_add(blocks, Relaxed);
        inbox.freed_nodes.fetch_add(nodes, Relaxed);
    }
}

/// For `fork`: takes every outbox of CPUs `0..ncpus` (waiting for threads
/// that hold one) and closes its open node, then takes every inbox of
/// cores `0..ncores` and frees what waits there. Everything stays taken
/// until [`release_all`].
pub fn take_and_flush_all(ncpus: usize, ncores: usize) {
    for ob in OUT.iter().take(ncpus.min(MAX_CPUS)) {
        ob.taken.lock();
        // SAFETY: taken above.
        unsafe {
            if *ob.open.get() != NONE {
                close(ob);
            }
        }
    }
    for inbox in IN.iter().take(ncores.min(MAX_CORES)) {
        inbox.draining.lock();
        drain_taken(inbox);
    }
}

/// Releases what [`take_and_flush_all`] took.
pub fn release_all(ncpus: usize, ncores: usize) {
    for inbox in IN.iter().take(ncores.min(MAX_CORES)) {
        inbox.draining.unlock();
    }
    for ob in OUT.iter().take(ncpus.min(MAX_CPUS)) {
        ob.taken.unlock();
    }
}

/// Closes the open nodes and empties the inboxes that nobody holds right
/// now, and the calling thread's own slot's open node (`mine`), for the
/// statistics: parked blocks would count as in use. Other threads' open
/// nodes stay (at most [`NODE_CAP`] blocks each).
pub fn flush_idle(ncpus: usize, ncores: usize, mine: Option<usize>) {
    if let Some(ob) = mine.and_then(|i| SLOT_OUT.get(i)) {
        // SAFETY: the calling thread claimed this slot.
        unsafe {
            if *ob.open.get() != NONE {
                close(ob);
            }
        }
    }
    for ob in OUT.iter().take(ncpus.min(MAX_CPUS)) {
        if ob.taken.try_lock() {
            // SAFETY: taken above.
            unsafe {
                if *ob.open.get() != NONE {
                    close(ob);
                }
            }
            ob.taken.unlock();
        }
    }
    for core in 0..ncores.min(MAX_CORES) {
        drain(core);
    }
}

/// Threads holding an outbox slot of their own right now.
pub fn slots_claimed() -> u64 {
    SLOT_OUT.iter().filter(|o| o.taken.is_locked()).count() as u64
}

/// Blocks and batches (nodes) of other cores' frees that core `core` has
/// freed from its inbox so far.
pub fn received(core: usize) -> (u64, u64) {
    IN.get(core).map_or((0, 0), |i| {
        (i.freed_blocks.load(Relaxed), i.freed_nodes.load(Relaxed))
    })
}

/// Cross-core frees from CPUs `0..ncpus` and from threads' own outboxes
/// that were freed directly instead of being parked.
pub fn direct(ncpus: usize) -> u64 {
    OUT.iter()
        .take(ncpus.min(MAX_CPUS))
        .chain(SLOT_OUT.iter())
        .map(|o| o.direct.load(Relaxed))
        .sum()
}
