//! The allocator: C-semantics entry points (`malloc`, `free`, ...), the
//! per-core heap table, arena creation and growth, large blocks, the
//! bootstrap buffer, fork handlers and the exit hook.
//!
//! Hot path of `malloc(n)` for `n < 1 MiB`: load the rseq offset, load
//! `cpu_id` from the thread's rseq area, index [`CPU_CORE`] and [`HEAPS`],
//! one load of the core's inbox (cross-core frees, [`super::remote`]),
//! call `mi_heap_malloc`. `free(p)`: one alignment test (large blocks are
//! 2 MiB-aligned), one range test (bootstrap buffer), the CPU and one load
//! of the frame table (which core's arena `p` is in); `mi_free` for the
//! caller's own core, else parked for the owning core.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::ptr::{self, null_mut};
use core::sync::atomic::{
    AtomicBool, AtomicIsize, AtomicPtr, AtomicU16, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};

use super::large_cache;
use super::mi::{self, MiHeap};
use super::os::{self, FRAME};
use super::remote;
use super::spin_lock::SpinLock;
use crate::{options, topology};

/// Most CPUs (Linux CPU numbers) smtalloc distinguishes; higher numbers
/// share the heap of `cpu % MAX_CPUS`.
pub const MAX_CPUS: usize = 1024;
/// Most physical cores with their own arena.
pub const MAX_CORES: usize = MAX_CPUS;
/// Most arena regions (mimalloc v3 itself allows 160 arenas in all).
pub const MAX_REGIONS: usize = 160;
/// Requests of this size or more are "large": a 2 MiB-aligned mapping of
/// their own in the shared large arena.
pub const LARGE_MIN: usize = 1 << 20;
/// Largest alignment served from the core arenas (mimalloc's in-page
/// over-allocation limit); larger ones go to the large arena.
const MAX_ARENA_ALIGN: usize = 64 << 10;
/// mimalloc's guaranteed alignment of `mi_heap_malloc`.
const MIN_ALIGN: usize = 16;
/// Largest alignment accepted (1 GiB).
pub const MAX_ALIGN: usize = 1 << 30;
/// Bootstrap buffer size: serves requests made while smtalloc initializes
/// (glibc's `dlsym`/`pthread_atfork` allocate) and never reused.
const BOOT_SIZE: usize = 256 << 10;
/// `rseq` offset value meaning "no rseq: use sched_getcpu".
const NO_RSEQ: isize = isize::MIN;
/// Frames covered by the frame table: 47-bit user address space.
const TABLE_FRAMES: usize = 1 << (47 - 21);
/// Frame-table tag of a frame in a core's arena region (the low bits hold
/// the core index); large-block lengths never reach it.
const CORE_FRAME: u32 = 1 << 31;

// ---------------------------------------------------------------------------
// Global state. All of it is static: nothing is allocated to run the
// allocator itself except mimalloc's own metadata.
// ---------------------------------------------------------------------------

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);

static RSEQ_OFF: AtomicIsize = AtomicIsize::new(NO_RSEQ);
/// CPU number -> dense physical-core index (read once from sysfs at init).
static CPU_CORE: [AtomicU16; MAX_CPUS] = [const { AtomicU16::new(0) }; MAX_CPUS];
/// Core index -> that core's current mimalloc heap (null until first use).
static HEAPS: [AtomicPtr<MiHeap>; MAX_CORES] = [const { AtomicPtr::new(null_mut()) }; MAX_CORES];
static NCPUS: AtomicUsize = AtomicUsize::new(1);
static NCORES: AtomicUsize = AtomicUsize::new(1);

static STATS_ON: AtomicBool = AtomicBool::new(false);
static VERBOSE: AtomicU32 = AtomicU32::new(0);
static THP: AtomicBool = AtomicBool::new(true);
static RESERVE: AtomicUsize = AtomicUsize::new(options::DEFAULT_RESERVE);

/// One arena region: memory of one core, registered with mimalloc as an
/// exclusive arena, with the heap that allocates only from it.
struct Region {
    start: AtomicUsize,
    len: AtomicUsize,
    core: AtomicU32,
    arena: AtomicPtr<c_void>,
    heap: AtomicPtr<MiHeap>,
    /// The mapping's first byte; its first `lazy` bytes are advised for
    /// huge pages only once mimalloc has claimed that many bytes of the
    /// region (see [`commit_range`]).
    base: AtomicUsize,
    lazy: AtomicUsize,
    /// Bytes of the region mimalloc has claimed (committed) so far.
    claimed: AtomicUsize,
}

static REGIONS: [Region; MAX_REGIONS] = [const {
    Region {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        core: AtomicU32::new(0),
        arena: AtomicPtr::new(null_mut()),
        heap: AtomicPtr::new(null_mut()),
        base: AtomicUsize::new(0),
        lazy: AtomicUsize::new(0),
        claimed: AtomicUsize::new(0),
    }
}; MAX_REGIONS];
/// Regions whose lazy start was advised for huge pages, and frames of it
/// collapsed into huge pages at once (`MADV_COLLAPSE`; the others are
/// left to khugepaged).
static LAZY_ADVISED: AtomicU64 = AtomicU64::new(0);
static LAZY_COLLAPSED: AtomicU64 = AtomicU64::new(0);
/// `SMTALLOC_THP_AFTER`: bytes at the start of each region that stay in
/// 4 KiB pages until mimalloc has claimed as many in the region.
static THP_AFTER: AtomicUsize = AtomicUsize::new(options::DEFAULT_THP_AFTER);
/// mimalloc's metadata arena (start, len), 4 KiB pages; 0 if none.
static META_START: AtomicUsize = AtomicUsize::new(0);
static META_LEN: AtomicUsize = AtomicUsize::new(0);
static NREGIONS: AtomicUsize = AtomicUsize::new(0);
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

/// The frame table: frame number (address >> 21) -> for a large block's
/// first frame its length in frames; for a frame of a core's arena region
/// [`CORE_FRAME`] | core index; 0 otherwise. A sparse 256 MiB NORESERVE
/// mapping: untouched parts read as zero and cost nothing.
static LARGE_TABLE: AtomicPtr<AtomicU32> = AtomicPtr::new(null_mut());
static LARGE_LIVE_BYTES: AtomicU64 = AtomicU64::new(0);
static LARGE_LIVE_BLOCKS: AtomicU64 = AtomicU64::new(0);
static LARGE_TOTAL: AtomicU64 = AtomicU64::new(0);
/// Large blocks served from kept mappings ([`large_cache`]).
static LARGE_REUSED: AtomicU64 = AtomicU64::new(0);

/// Taken to create or grow an arena, and around fork.
static GROW_LOCK: SpinLock = SpinLock::new();

#[repr(C, align(4096))]
struct BootBuf(UnsafeCell<[u8; BOOT_SIZE]>);
// SAFETY: disjoint parts of the buffer are handed out by an atomic bump
// pointer; each part is then owned by its caller.
unsafe impl Sync for BootBuf {}
static BOOT: BootBuf = BootBuf(UnsafeCell::new([0; BOOT_SIZE]));
static BOOT_USED: AtomicUsize = AtomicUsize::new(0);

// ---------------------------------------------------------------------------
// Initialization.
// ---------------------------------------------------------------------------

/// Makes sure smtalloc is initialized. Returns false while initialization
/// is in progress (a reentrant call from within init, or another thread
/// racing it): the caller then serves the request from the bootstrap buffer.
#[cold]
fn ensure_init() -> bool {
    match STATE.compare_exchange(UNINIT, INITIALIZING, AcqRel, Acquire) {
        Ok(_) => {
            init();
            STATE.store(READY, Release);
            true
        }
        Err(s) => s == READY,
    }
}

/// Whether smtalloc has initialized in this process.
pub fn is_initialized() -> bool {
    STATE.load(Acquire) == READY
}

fn init() {
    let opts = options::Options::from_env(os::getenv_into, |name, value, valid| {
        // One line on stderr: the value is ignored, the program runs on.
        let mut line = crate::report::Line::new();
        line.push_fmt(format_args!(
            "smtalloc: {}={}: not understood, expected {valid}; using the default\n",
            name.to_str().unwrap_or("?"),
            core::str::from_utf8(value).unwrap_or("(not UTF-8)"),
        ));
        os::write_stderr(line.as_bytes());
    });
    STATS_ON.store(opts.stats, Relaxed);
    VERBOSE.store(opts.verbose, Relaxed);
    THP.store(opts.thp, Relaxed);
    THP_AFTER.store(options::round_frames(opts.thp_after), Relaxed);
    large_cache::set_capacity(opts.large_cache);
    // SAFETY: plain getters of constants.
    let (min_size, version) = unsafe { (mi::mi_arena_min_size(), mi::mi_version()) };
    RESERVE.store(
        options::round_reserve(opts.reserve, min_size.max(FRAME)),
        Relaxed,
    );

    // CPU -> core map from sysfs, read into stack buffers.
    let mut map = [0u16; MAX_CPUS];
    let topo = topology::read_core_map(&mut map, os::read_file);
    for (slot, &core) in CPU_CORE.iter().zip(map.iter()) {
        slot.store(core, Relaxed);
    }
    NCPUS.store(topo.cpus, Relaxed);
    NCORES.store(topo.cores, Relaxed);

    // SAFETY: mimalloc option setters, before any heap exists.
    unsafe {
        // Never purge (decommit/reset) anything: core arenas are also
        // registered as pinned, so no huge page inside them is ever split.
        mi::mi_option_set(mi::OPT_PURGE_DELAY, -1);
        // mimalloc's own (shared) arena only holds heap metadata: keep its
        // reservation small (the option is in KiB).
        mi::mi_option_set(mi::OPT_ARENA_RESERVE, 32 * 1024);
        if opts.verbose >= 2 {
            mi::mi_option_set(mi::OPT_VERBOSE, 1);
            mi::mi_option_set(mi::OPT_SHOW_ERRORS, 1);
        }
    }

    meta_arena(min_size);

    let table_len = TABLE_FRAMES * core::mem::size_of::<AtomicU32>();
    if let Some(t) = os::mmap_aligned(table_len, 4096, true) {
        os::madvise_nohugepage(t.as_ptr() as usize, table_len);
        LARGE_TABLE.store(t.as_ptr().cast(), Release);
    }

    if os::RSEQ_SUPPORTED {
        if let Some(off) = os::rseq_offset() {
            RSEQ_OFF.store(off, Release);
        }
    }
    os::atfork(fork_prepare, fork_release, fork_release);

    if opts.verbose >= 1 {
        let mut line = crate::report::Line::new();
        line.push_fmt(format_args!(
            "smtalloc: init: mimalloc {} cpus {} cores {} rseq {} reserve/core {} MiB thp {}\n",
            version,
            topo.cpus,
            topo.cores,
            if RSEQ_OFF.load(Relaxed) != NO_RSEQ {
                "yes"
            } else {
                "no (sched_getcpu)"
            },
            RESERVE.load(Relaxed) >> 20,
            if opts.thp { "madvise" } else { "off" },
        ));
        os::write_stderr(line.as_bytes());
    }
}

// ---------------------------------------------------------------------------
// Heaps and arenas.
// ---------------------------------------------------------------------------

/// The CPU the caller runs on, from glibc's rseq area, and that CPU's core
/// index; `None` without rseq (or for a CPU number past [`MAX_CPUS`]).
#[inline(always)]
fn rseq_cpu_core() -> Option<(usize, usize)> {
    let off = RSEQ_OFF.load(Relaxed);
    if off == NO_RSEQ {
        return None;
    }
    let cpu = os::rseq_cpu(off) as usize;
    let core = CPU_CORE.get(cpu)?.load(Relaxed) as usize;
    Some((cpu, core))
}

/// The core index of the CPU the caller runs on (`sched_getcpu` without
/// rseq).
#[inline(always)]
fn current_core() -> usize {
    if let Some((_, core)) = rseq_cpu_core() {
        return core;
    }
    let cpu = os::sched_getcpu().unwrap_or(0) % MAX_CPUS;
    CPU_CORE[cpu].load(Relaxed) as usize
}

/// Fast path: the current core and its heap, if both are ready.
#[inline(always)]
fn fast_heap() -> Option<(usize, *mut MiHeap)> {
    let (_, core) = rseq_cpu_core()?;
    // SAFETY: CPU_CORE only holds indices < MAX_CORES (init maps at most
    // MAX_CPUS <= MAX_CORES CPUs to dense core indices).
    let slot = unsafe { HEAPS.get_unchecked(core) };
    // Acquire: the heap was fully built before its pointer was published.
    let heap = slot.load(Acquire);
    (!heap.is_null()).then_some((core, heap))
}

#[inline(always)]
fn count(core: usize, size: usize) {
    if STATS_ON.load(Relaxed) {
        let c = &COUNTERS[core];
        c.calls.fetch_add(1, Relaxed);
        c.bytes.fetch_add(size as u64, Relaxed);
    }
}

/// Creates a new arena region of at least `min_len` bytes for `core`, and a
/// heap bound to it. Called with [`GROW_LOCK`] held.
fn new_region(core: usize, min_len: usize) -> Option<*mut MiHeap> {
    let idx = NREGIONS.load(Relaxed);
    if idx >= MAX_REGIONS {
        return None;
    }
    // SAFETY: constant getters.
    let (align, min_size) = unsafe { (mi::mi_arena_min_alignment(), mi::mi_arena_min_size()) };
    let align = align.max(FRAME);
    let unit = min_size.max(FRAME);
    let mut len = options::round_reserve(min_len, unit);
    // Halve on failure (strict overcommit, address-space limits) down to
    // one unit.
    let base = loop {
        match os::mmap_aligned(len, align, true) {
            Some(b) => break b.as_ptr() as usize,
            None if len > unit => len = options::round_reserve(len / 2, unit),
            None => return None,
        }
    };
    // Huge pages everywhere but the lazy start: mimalloc puts the arena's
    // metadata (bitmaps and page descriptors, mostly untouched) there and
    // fills the arena from its start, so a small heap touches only a few
    // 4 KiB pages; the start is advised (and collapsed) once mimalloc has
    // claimed as many bytes as it spans.
    let lazy = if THP.load(Relaxed) {
        THP_AFTER.load(Relaxed).min(len)
    } else {
        0
    };
    if THP.load(Relaxed) && len > lazy {
        os::madvise_hugepage(base + lazy, len - lazy);
    }
    let mut name = [0u8; 32];
    crate::report::core_vma_name(core, &mut name);
    if let Ok(n) = core::ffi::CStr::from_bytes_until_nul(&name) {
        os::name_range(base, len, n);
    }
    let r = &REGIONS[idx];
    // Before registering: mimalloc already commits the metadata slices.
    r.base.store(base, Relaxed);
    r.lazy.store(lazy, Relaxed);
    r.claimed.store(0, Relaxed);
    let mut arena: mi::MiArenaId = null_mut();
    // SAFETY: [base, base+len) is a fresh mapping that we give to mimalloc
    // for good: registered as not committed only so that `commit_range`
    // sees which slices mimalloc starts to use (anonymous memory faults in
    // on touch, so "committing" does nothing), pinned (mimalloc must never
    // decommit/reset inside it: that would split huge pages), zero (fresh
    // mapping), exclusive (only heaps created for this arena allocate from
    // it). The callback's argument is this region's index.
    let ok = unsafe {
        mi::mi_manage_memory(
            base as *mut c_void,
            len,
            false,
            true,
            true,
            -1,
            true,
            Some(commit_range),
            idx as *mut c_void,
            &mut arena,
        )
    };
    if !ok {
        r.base.store(0, Relaxed);
        os::munmap(base, len);
        return None;
    }
    // SAFETY: `arena` is the id mimalloc just returned.
    let heap = unsafe { mi::mi_heap_new_in_arena(arena) };
    if heap.is_null() {
        // The arena stays registered (mimalloc cannot unregister it) but
        // unused; record it anyway so the frame accounting stays complete.
    }
    let mut area_len = 0usize;
    // SAFETY: valid arena id and out-pointer.
    let area = unsafe { mi::mi_arena_area(arena, &mut area_len) } as usize;
    r.start.store(if area != 0 { area } else { base }, Relaxed);
    r.len.store(if area != 0 { area_len } else { len }, Relaxed);
    r.core.store(core as u32, Relaxed);
    r.arena.store(arena, Relaxed);
    // The mapping is 2 MiB-aligned and whole frames: tag each for `free`.
    for f in (base..base + len).step_by(FRAME) {
        if let Some(slot) = table_slot(f) {
            slot.store(CORE_FRAME | core as u32, Relaxed);
        }
    }
    r.heap.store(heap, Relaxed);
    NREGIONS.store(idx + 1, Release);
    if VERBOSE.load(Relaxed) >= 1 {
        let mut line = crate::report::Line::new();
        line.push_fmt(format_args!(
            "smtalloc: core {core}: new arena {:#x}..{:#x} ({} MiB)\n",
            base,
            base + len,
            len >> 20
        ));
        os::write_stderr(line.as_bytes());
    }
    (!heap.is_null()).then_some(heap)
}

/// mimalloc's commit callback for the core arenas (`mi_manage_memory`):
/// called when mimalloc starts to use slices it has not used before
/// (purging is off, so each slice is committed about once; a range that
/// straddles committed slices is passed whole). The memory is an ordinary
/// read-write mapping already, so committing only counts the bytes claimed
/// in the region (the heap's size, roughly); once they reach the region's
/// lazy start, that start is advised for huge pages and its touched frames
/// collapsed into huge pages. Decommits (never asked for with purging off)
/// are refused: the memory stays as it is.
unsafe extern "C" fn commit_range(
    commit: bool,
    _start: *mut c_void,
    size: usize,
    _is_zero: *mut bool,
    arg: *mut c_void,
) -> bool {
    if commit {
        claimed(arg as usize, size);
    }
    commit
}

fn claimed(idx: usize, size: usize) {
    let Some(r) = REGIONS.get(idx) else {
        return;
    };
    let lazy = r.lazy.load(Relaxed);
    if lazy == 0 {
        return;
    }
    let before = r.claimed.fetch_add(size, AcqRel);
    // Exactly one caller crosses the threshold (a range passed twice only
    // makes it cross earlier).
    if before < lazy && before.saturating_add(size) >= lazy {
        let base = r.base.load(Relaxed);
        os::madvise_hugepage(base, lazy);
        LAZY_ADVISED.fetch_add(1, Relaxed);
        // Collapse now what is in use (frames never touched stay empty and
        // fault in as huge pages later).
        for f in (base..base + lazy).step_by(FRAME) {
            if os::frame_touched(f) && os::madvise_collapse(f, FRAME) {
                LAZY_COLLAPSED.fetch_add(1, Relaxed);
            }
        }
    }
}

/// Gives mimalloc a small arena of 4 KiB pages for its own metadata
/// (heap and per-thread structures, per-heap page bitmaps): these come from
/// non-exclusive arenas, and without one mimalloc would reserve its own
/// (`arena_reserve`) and advise it `MADV_HUGEPAGE`, so its first few KiB of
/// metadata would fault a whole 2 MiB page. Registered before any heap
/// exists; mimalloc uses existing arenas before reserving new ones. Also
/// where the shared fallback heap allocates (see [`fallback_heap`]).
fn meta_arena(min_size: usize) {
    // SAFETY: constant getter.
    let align = unsafe { mi::mi_arena_min_alignment() }.max(4096);
    let len = min_size.max(FRAME);
    let Some(base) = os::mmap_aligned(len, align, true) else {
        return;
    };
    let base = base.as_ptr() as usize;
    os::madvise_nohugepage(base, len);
    let mut arena: mi::MiArenaId = null_mut();
    // SAFETY: a fresh mapping given to mimalloc for good: committed
    // (faults in on touch), pinned (never decommitted), zero, shared.
    let ok = unsafe {
        mi::mi_manage_os_memory_ex(
            base as *mut c_void,
            len,
            true,
            true,
            true,
            -1,
            false,
            &mut arena,
        )
    };
    if ok {
        META_START.store(base, Relaxed);
        META_LEN.store(len, Relaxed);
    } else {
        os::munmap(base, len);
    }
}

/// The heap of `core`, creating its first arena if needed.
#[cold]
fn heap_of_core(core: usize) -> *mut MiHeap {
    let h = HEAPS[core].load(Acquire);
    if !h.is_null() {
        return h;
    }
    GROW_LOCK.lock();
    let mut h = HEAPS[core].load(Acquire);
    if h.is_null() {
        h = new_region(core, RESERVE.load(Relaxed)).unwrap_or_else(fallback_heap);
        HEAPS[core].store(h, Release);
    }
    GROW_LOCK.unlock();
    h
}

fn fallback_heap() -> *mut MiHeap {
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
fn grow(core: usize, failed: *mut MiHeap, size: usize, attempt: usize) -> Option<*mut MiHeap> {
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
                    .max(RESERVE.load(Relaxed))
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

fn fallback_heap_peek() -> *mut MiHeap {
    // SAFETY: returns mimalloc's main heap.
    unsafe { mi::mi_heap_main() }
}

/// Runs `op` on the current core's heap; on failure grows the core's arena
/// and retries. `fresh`: the request may be served from the bootstrap
/// buffer while smtalloc initializes (not so for realloc of a live block).
#[inline(always)]
fn with_heap(
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
fn with_heap_slow(
    size: usize,
    align: usize,
    fresh: bool,
    op: &dyn Fn(*mut MiHeap) -> *mut c_void,
) -> *mut c_void {
    if STATE.load(Acquire) != READY && !ensure_init() {
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

// ---------------------------------------------------------------------------
// Bootstrap buffer.
// ---------------------------------------------------------------------------

#[inline(always)]
fn boot_base() -> usize {
    BOOT.0.get() as usize
}

#[inline(always)]
fn in_boot(p: *mut c_void) -> bool {
    (p as usize).wrapping_sub(boot_base()) < BOOT_SIZE
}

/// Size header (one usize) right before each bootstrap block.
fn boot_alloc(size: usize, align: usize) -> *mut c_void {
    let align = align.clamp(MIN_ALIGN, 4096);
    let base = boot_base();
    let mut used = BOOT_USED.load(Relaxed);
    loop {
        let user = (base + used + MIN_ALIGN + align - 1) & !(align - 1);
        let Some(end) = user.checked_add(size.max(1)) else {
            break;
        };
        if end - base > BOOT_SIZE {
            break;
        }
        match BOOT_USED.compare_exchange_weak(used, end - base, Relaxed, Relaxed) {
            Ok(_) => {
                // SAFETY: [user-8, end) lies inside BOOT and was just
                // reserved by this call alone.
                unsafe { ptr::write((user - 8) as *mut usize, size) };
                return user as *mut c_void;
            }
            Err(u) => used = u,
        }
    }
    os::set_errno(libc::ENOMEM);
    null_mut()
}

fn boot_size(p: *mut c_void) -> usize {
    // SAFETY: `p` is a bootstrap block (checked by the caller), whose size
    // header precedes it.
    unsafe { ptr::read((p as usize - 8) as *const usize) }
}

// ---------------------------------------------------------------------------
// Large blocks: 2 MiB-aligned mappings of whole 2 MiB frames, unmapped
// whole on free (so memory returns to the OS only in 2 MiB units).
// ---------------------------------------------------------------------------

#[inline(always)]
fn table_slot(p: usize) -> Option<&'static AtomicU32> {
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
fn frame_core(p: usize) -> Option<usize> {
    let tag = table_slot(p)?.load(Relaxed);
    (tag & CORE_FRAME != 0).then_some((tag & !CORE_FRAME) as usize)
}

/// The length of the large block at `p` (a 2 MiB-aligned pointer), if any.
#[inline(always)]
fn large_len(p: *mut c_void) -> Option<usize> {
    let frames = table_slot(p as usize)?.load(Relaxed);
    (frames != 0 && frames & CORE_FRAME == 0).then_some(frames as usize * FRAME)
}

/// A large block: a kept mapping if one fits (trimmed to whole frames,
/// zeroed for `zero`), else a fresh mapping (zero already).
#[cold]
fn large_alloc(size: usize, align: usize, zero: bool) -> *mut c_void {
    if STATE.load(Acquire) != READY && !ensure_init() {
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

fn round_frames(size: usize) -> Option<usize> {
    if size > isize::MAX as usize / 2 {
        return None;
    }
    Some((size.max(1) + FRAME - 1) & !(FRAME - 1))
}

fn map_large(len: usize, align: usize, size: usize) -> Option<usize> {
    let frames = u32::try_from(len / FRAME).ok()?;
    let p = os::mmap_aligned(len, align, false)?.as_ptr() as usize;
    let Some(slot) = table_slot(p) else {
        os::munmap(p, len);
        return None;
    };
    // Huge pages only where the block fills at least half its frames:
    // a small block with a huge alignment should not fault in 2 MiB.
    if THP.load(Relaxed) && size >= len / 2 {
        os::madvise_hugepage(p, len);
    }
    slot.store(frames, Relaxed);
    LARGE_LIVE_BYTES.fetch_add(len as u64, Relaxed);
    LARGE_LIVE_BLOCKS.fetch_add(1, Relaxed);
    LARGE_TOTAL.fetch_add(1, Relaxed);
    Some(p)
}

/// A kept mapping of at least `len` bytes aligned to `align`, trimmed to
/// `len` (whole frames) and zeroed up to `size` for `zero`.
fn reuse_large(len: usize, align: usize, size: usize, zero: bool) -> Option<usize> {
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
/// `free` path that makes a system call: mimalloc's `mi_free` never does
/// with pinned arenas and purging off).
#[cold]
#[inline(never)]
fn large_free(p: *mut c_void, len: usize) {
    if let Some(slot) = table_slot(p as usize) {
        slot.store(0, Relaxed);
    }
    LARGE_LIVE_BYTES.fetch_sub(len as u64, Relaxed);
    LARGE_LIVE_BLOCKS.fetch_sub(1, Relaxed);
    if !large_cache::put(p as usize, len) {
        keep_errno(|| os::munmap(p as usize, len));
    }
}

#[cold]
fn large_realloc(p: *mut c_void, len: usize, n: usize) -> *mut c_void {
    if n < LARGE_MIN {
        let q = malloc(n);
        if !q.is_null() {
            // SAFETY: `p` holds `len` >= n bytes, `q` holds n, distinct blocks.
            unsafe { ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, n) };
            large_free(p, len);
        }
        return q;
    }
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
        if THP.load(Relaxed) {
            os::madvise_hugepage(addr, new_len);
        }
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
    if THP.load(Relaxed) {
        os::madvise_hugepage(dst, new_len);
    }
    slot.store(0, Relaxed);
    dslot.store((new_len / FRAME) as u32, Relaxed);
    LARGE_LIVE_BYTES.fetch_add(grown as u64, Relaxed);
    dst as *mut c_void
}

// ---------------------------------------------------------------------------
// C entry points (glibc semantics). Exported by smtalloc-preload and used by
// the GlobalAlloc.
// ---------------------------------------------------------------------------

/// `malloc`: a unique non-NULL pointer even for 0 bytes; NULL + ENOMEM on
/// failure.
#[inline(always)]
pub fn malloc(size: usize) -> *mut c_void {
    if size < LARGE_MIN {
        // SAFETY: `h` is a live heap from the heap table.
        with_heap(size, MIN_ALIGN, true, move |h| unsafe {
            mi::mi_heap_malloc(h, size)
        })
    } else {
        large_alloc(size, FRAME, false)
    }
}

/// `calloc`: zeroed; NULL + ENOMEM if `n * size` overflows.
#[inline(always)]
pub fn calloc(n: usize, size: usize) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    if total < LARGE_MIN {
        // SAFETY: `h` is a live heap. mi_heap_zalloc zeroes reused memory
        // (and skips it for memory it knows is fresh and zero).
        with_heap(total, MIN_ALIGN, true, move |h| unsafe {
            mi::mi_heap_zalloc(h, total)
        })
    } else {
        large_alloc(total, FRAME, true)
    }
}

/// An aligned allocation; `align` must be a power of two.
pub fn aligned(size: usize, align: usize, zero: bool) -> *mut c_void {
    debug_assert!(align.is_power_of_two());
    if align <= MIN_ALIGN {
        return if zero { calloc(1, size) } else { malloc(size) };
    }
    if align > MAX_ALIGN {
        os::set_errno(libc::EINVAL);
        return null_mut();
    }
    if size >= LARGE_MIN || align > MAX_ARENA_ALIGN {
        return large_alloc(size, align, zero);
    }
    with_heap(size, align, true, move |h| {
        // SAFETY: `h` is a live heap; `align` is a power of two <= 64 KiB.
        unsafe {
            if zero {
                mi::mi_heap_zalloc_aligned(h, size, align)
            } else {
                mi::mi_heap_malloc_aligned(h, size, align)
            }
        }
    })
}

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
        if owner != here && unsafe { remote::park(cpu, owner, p) } {
            return;
        }
    }
    // SAFETY: the caller guarantees `p` is a live block; it is neither
    // large nor bootstrap, so it is mimalloc's. mi_free leaves errno alone.
    unsafe { mi::mi_free(p) }
}

/// `realloc` with glibc semantics: `realloc(NULL, n)` = `malloc(n)`;
/// `realloc(p, 0)` frees `p` and returns NULL; on failure `p` is intact.
///
/// # Safety
/// `p` is NULL or a live block from this allocator.
pub unsafe fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    if p.is_null() {
        return malloc(n);
    }
    if n == 0 {
        // SAFETY: caller's guarantee.
        unsafe { free(p) };
        return null_mut();
    }
    if in_boot(p) {
        let old = boot_size(p);
        let q = malloc(n);
        if !q.is_null() {
            // SAFETY: `p` holds `old` bytes, `q` holds n; distinct blocks.
            unsafe { ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(n)) };
        }
        return q;
    }
    if (p as usize) & (FRAME - 1) == 0 {
        if let Some(len) = large_len(p) {
            return large_realloc(p, len, n);
        }
    }
    if n >= LARGE_MIN {
        // SAFETY: `p` is a live mimalloc block.
        let old = unsafe { mi::mi_usable_size(p) };
        let q = large_alloc(n, FRAME, false);
        if !q.is_null() {
            // SAFETY: `p` holds `old` bytes, `q` at least n; distinct.
            unsafe {
                ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(n));
                mi::mi_free(p);
            }
        }
        return q;
    }
    // SAFETY: `h` is a live heap and `p` a live mimalloc block; on failure
    // mi_heap_realloc leaves `p` untouched, so a retry is fine.
    with_heap(n, MIN_ALIGN, false, move |h| unsafe {
        mi::mi_heap_realloc(h, p, n)
    })
}

/// `malloc_usable_size`: 0 for NULL.
///
/// # Safety
/// `p` is NULL or a live block from this allocator.
pub unsafe fn usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    if in_boot(p) {
        return boot_size(p);
    }
    if (p as usize) & (FRAME - 1) == 0 {
        if let Some(len) = large_len(p) {
            return len;
        }
    }
    // SAFETY: a live mimalloc block.
    unsafe { mi::mi_usable_size(p) }
}

/// `posix_memalign`: EINVAL unless `align` is a power of two multiple of
/// `sizeof(void*)`; errno is left alone (the error is returned).
///
/// # Safety
/// `out` is valid for a pointer write.
pub unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || align % core::mem::size_of::<usize>() != 0 {
        return libc::EINVAL;
    }
    let saved = os::errno();
    let p = aligned(size, align, false);
    if p.is_null() {
        let e = os::errno();
        os::set_errno(saved);
        return if e == libc::EINVAL {
            libc::EINVAL
        } else {
            libc::ENOMEM
        };
    }
    // SAFETY: the caller guarantees `out` is writable.
    unsafe { *out = p };
    0
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(ps).unwrap_or(4096).max(4096)
}

/// Preserves `errno` across `f` (glibc's `free` does).
#[inline(always)]
pub fn keep_errno<T>(f: impl FnOnce() -> T) -> T {
    let e = os::errno();
    let r = f();
    os::set_errno(e);
    r
}

// ---------------------------------------------------------------------------
// Fork: the child must not inherit a held arena lock. mimalloc's own fast
// paths are lock-free; its pages owned by threads that do not exist in the
// child stay valid (frees to them are cross-thread frees).
// ---------------------------------------------------------------------------

extern "C" fn fork_prepare() {
    let (cpus, cores) = topology_counts();
    remote::take_and_flush_all(cpus, cores);
    GROW_LOCK.lock();
    large_cache::lock_for_fork();
}
/// Parent and child alike release what `fork_prepare` took.
extern "C" fn fork_release() {
    large_cache::unlock_after_fork();
    GROW_LOCK.unlock();
    let (cpus, cores) = topology_counts();
    remote::release_all(cpus, cores);
}

// ---------------------------------------------------------------------------
// Introspection for stats (no allocation).
// ---------------------------------------------------------------------------

/// One arena region as reported to the stats.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    pub start: usize,
    pub len: usize,
    pub core: usize,
}

/// Copies the arena regions (as mimalloc reports their areas) into `out`;
/// returns how many there are.
pub fn regions(out: &mut [RegionInfo]) -> usize {
    let n = NREGIONS.load(Acquire).min(MAX_REGIONS);
    for (o, r) in out.iter_mut().zip(REGIONS[..n].iter()) {
        *o = RegionInfo {
            start: r.start.load(Relaxed),
            len: r.len.load(Relaxed),
            core: r.core.load(Relaxed) as usize,
        };
    }
    n
}

/// Number of CPUs and of physical cores seen at init.
pub fn topology_counts() -> (usize, usize) {
    (NCPUS.load(Relaxed), NCORES.load(Relaxed))
}

/// The core index of a CPU (as mapped at init).
pub fn core_of_cpu(cpu: usize) -> Option<usize> {
    (cpu < MAX_CPUS && cpu < NCPUS.load(Relaxed)).then(|| CPU_CORE[cpu].load(Relaxed) as usize)
}

/// Whether the CPU comes from rseq (else sched_getcpu).
pub fn uses_rseq() -> bool {
    RSEQ_OFF.load(Relaxed) != NO_RSEQ
}

/// Whether `SMTALLOC_STATS` was set.
pub fn stats_enabled() -> bool {
    STATS_ON.load(Relaxed)
}

/// (calls, bytes) allocated on `core` (counted with `SMTALLOC_STATS=1`).
pub fn core_counters(core: usize) -> (u64, u64) {
    COUNTERS
        .get(core)
        .map(|c| (c.calls.load(Relaxed), c.bytes.load(Relaxed)))
        .unwrap_or((0, 0))
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

/// `SMTALLOC_THP_AFTER` as used (0 when THP is off or advised up front).
pub fn thp_after() -> usize {
    if THP.load(Relaxed) {
        THP_AFTER.load(Relaxed)
    } else {
        0
    }
}

/// mimalloc's metadata arena as (start, len), if smtalloc made one.
pub fn meta_range() -> Option<(usize, usize)> {
    let len = META_LEN.load(Relaxed);
    (len != 0).then(|| (META_START.load(Relaxed), len))
}

/// (regions whose lazy start was advised for huge pages, frames of it
/// collapsed at once with `MADV_COLLAPSE`).
pub fn lazy_counters() -> (u64, u64) {
    (LAZY_ADVISED.load(Relaxed), LAZY_COLLAPSED.load(Relaxed))
}

/// How many times a core fell back to mimalloc's shared main heap.
pub fn fallbacks() -> u64 {
    FALLBACKS.load(Relaxed)
}

unsafe extern "C" fn visit_area(
    _heap: *const MiHeap,
    area: *const mi::MiHeapArea,
    _block: *mut c_void,
    _block_size: usize,
    arg: *mut c_void,
) -> bool {
    // SAFETY: mimalloc passes a valid area; `arg` is the &mut u64 given below.
    unsafe {
        let a = &*area;
        *(arg as *mut u64) += (a.used * a.block_size) as u64;
    }
    true
}

/// Bytes in use in the blocks of every region of `core`, from mimalloc's
/// page metadata (`used` blocks x block size). Approximate while other
/// threads allocate (mimalloc documents visiting as single-threaded; the
/// visit only reads page counters).
pub fn core_in_use(core: usize) -> u64 {
    let n = NREGIONS.load(Acquire).min(MAX_REGIONS);
    let mut total = 0u64;
    for r in &REGIONS[..n] {
        let h = r.heap.load(Relaxed);
        if r.core.load(Relaxed) as usize == core && !h.is_null() {
            let mut bytes = 0u64;
            // SAFETY: `h` is a live heap; the visitor only adds to `bytes`.
            unsafe {
                mi::mi_heap_visit_blocks(h, false, visit_area, (&mut bytes as *mut u64).cast());
            }
            total += bytes;
        }
    }
    total
}

/// The core whose arena region holds the 2 MiB frame of `p` (from the
/// frame table that `free` reads).
pub fn owner_core(p: *const u8) -> Option<usize> {
    frame_core(p as usize)
}

/// Runs at exit (from `.fini_array`, which allocates nothing, unlike
/// `atexit` from inside malloc): prints the stats if asked.
extern "C" fn at_exit() {
    if is_initialized() && STATS_ON.load(Relaxed) {
        crate::report::print_stats();
    }
}

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = at_exit;
