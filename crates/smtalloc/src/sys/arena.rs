//! Arena regions: each core's memory, mapped 2 MiB-aligned and registered
//! with mimalloc as an exclusive arena with the heap that alone
//! allocates from it; the lazy huge pages at each region's start (the
//! commit callback); mimalloc's metadata arena of 4 KiB pages; and what the
//! statistics read of them.
//!
//! Called by `heap` to create and grow a core's arena, under [`GROW_LOCK`]
//! (which `fork` also holds across `fork`), by `init` for the metadata
//! arena, and by `stats` for what it reads.
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{
    AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
};

use super::frame_table::{table_slot, CORE_FRAME};
use super::line::Line;
use super::mi::{self, MiHeap};
use super::options;
use super::os::{self, FRAME};
use super::settings;
use super::spin_lock::SpinLock;

/// Most arena regions (mimalloc v3 itself allows 160 arenas in all).
pub const MAX_REGIONS: usize = 160;

/// One arena region: memory of one core, registered with mimalloc as an
/// exclusive arena, with the heap that allocates only from it.
pub(crate) struct Region {
    pub(crate) start: AtomicUsize,
    pub(crate) len: AtomicUsize,
    pub(crate) core: AtomicU32,
    pub(crate) arena: AtomicPtr<c_void>,
    pub(crate) heap: AtomicPtr<MiHeap>,
    /// The mapping's first byte; its first `lazy` bytes are advised for
    /// huge pages only once mimalloc has claimed that many bytes of the
    /// region (see [`commit_range`]).
    pub(crate) base: AtomicUsize,
    pub(crate) lazy: AtomicUsize,
    /// Bytes of the region mimalloc has claimed (committed) so far.
    pub(crate) claimed: AtomicUsize,
    /// The mapping's length (from `base`).
    pub(crate) map_len: AtomicUsize,
}

pub(crate) static REGIONS: [Region; MAX_REGIONS] = [const {
    Region {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        core: AtomicU32::new(0),
        arena: AtomicPtr::new(null_mut()),
        heap: AtomicPtr::new(null_mut()),
        base: AtomicUsize::new(0),
        lazy: AtomicUsize::new(0),
        claimed: AtomicUsize::new(0),
        map_len: AtomicUsize::new(0),
    }
}; MAX_REGIONS];

/// Regions whose lazy start was advised for huge pages, and frames of it
/// collapsed into huge pages at once (`MADV_COLLAPSE`; the others are
/// left to khugepaged).
pub(crate) static LAZY_ADVISED: AtomicU64 = AtomicU64::new(0);

pub(crate) static LAZY_COLLAPSED: AtomicU64 = AtomicU64::new(0);

/// mimalloc's metadata arena (start, len), 4 KiB pages; 0 if none.
pub(crate) static META_START: AtomicUsize = AtomicUsize::new(0);

pub(crate) static META_LEN: AtomicUsize = AtomicUsize::new(0);

pub(crate) static NREGIONS: AtomicUsize = AtomicUsize::new(0);

/// Taken to create or grow an arena, and around fork.
pub(crate) static GROW_LOCK: SpinLock = SpinLock::new();

/// Writes `smtalloc-core-N\0` (the VMA name of core N's arenas).
pub fn core_vma_name(core: usize, out: &mut [u8; 32]) {
    let mut l = Line::new();
    l.push_fmt(format_args!("smtalloc-core-{core}"));
    let bytes = l.as_bytes();
    let n = bytes.len().min(31);
    out[..n].copy_from_slice(&bytes[..n]);
    out[n] = 0;
}

/// Creates a new arena region of at least `min_len` bytes for `core`, and a
/// heap bound to it. Called with [`GROW_LOCK`] held.
pub(crate) fn new_region(core: usize, min_len: usize) -> Option<*mut MiHeap> {
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
    // Whole mimalloc segments (`unit`, 32 MiB): a segment's metadata and
    // its first pages are spread over it, so a lazy start inside the first
    // segment let the rest of it fault whole huge pages for a heap of a few
    // MiB (python3's peak RSS doubled).
    // (0 still means every frame advised up front.)
    let lazy = match settings::thp_after() {
        0 => 0,
        t => options::round_reserve(t, unit).min(len),
    };
    // With a lazy threshold nothing of the region is advised yet, not
    // even past the threshold's span: mimalloc does not always fill an
    // arena from its start (it spreads its searches), and a small heap's
    // slices placed past the span faulted whole huge pages (python3 with a
    // 25 MB heap held 2-16 MiB of them now and then, under load).
    if settings::thp() && lazy == 0 {
        os::madvise_hugepage(base, len);
    }
    let mut name = [0u8; 32];
    core_vma_name(core, &mut name);
    if let Ok(n) = core::ffi::CStr::from_bytes_until_nul(&name) {
        os::name_range(base, len, n);
    }
    let r = &REGIONS[idx];
    // Before registering: mimalloc already commits the metadata slices.
    r.base.store(base, Relaxed);
    r.map_len.store(len, Relaxed);
    r.lazy.store(lazy, Relaxed);
    r.claimed.store(0, Relaxed);
    let mut arena: mi::MiArenaId = null_mut();
    // SAFETY: [base, base+len) is a fresh mapping that we give to mimalloc
    // for good: registered as not committed only so that `commit_range`
    // sees which slices mimalloc starts to use (anonymous memory faults in
    // on touch, so "committing" does nothing), not pinned (mimalloc may
    // purge free slices, but only through `commit_range`, which gives back
    // pages only in the 4 KiB-page start: huge pages are never split), zero (fresh
    // mapping), exclusive (only heaps created for this arena allocate from
    // it). The callback's argument is this region's index.
    let ok = unsafe {
        mi::mi_manage_memory(
            base as *mut c_void,
            len,
            false,
            false,
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
    if settings::verbose() >= 1 {
        let mut line = Line::new();
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
/// called when mimalloc starts to use slices it has not used (or has
/// purged) before (a range that straddles committed slices is passed
/// whole). The memory is an ordinary read-write mapping already, so
/// committing only counts the bytes claimed in the region (the heap's size,
/// roughly); once they reach the region's lazy start, that start is advised
/// for huge pages and its touched frames collapsed into huge pages.
/// Decommits (mimalloc's delayed purge of free slices) go to [`purge`].
pub(crate) unsafe extern "C" fn commit_range(
    commit: bool,
    start: *mut c_void,
    size: usize,
    _is_zero: *mut bool,
    arg: *mut c_void,
) -> bool {
    if commit {
        claimed(arg as usize, size);
        return true;
    }
    purge(arg as usize, start as usize, size)
}

/// A decommit asked by mimalloc (a free range it will not use before
/// committing it again): while the region is still in 4 KiB pages, the
/// range's pages go back to the kernel and no longer count as claimed;
/// once the region is huge-page advised nothing is given back (that would
/// split huge pages) and mimalloc is told the range stays committed.
fn purge(idx: usize, start: usize, size: usize) -> bool {
    let Some(r) = REGIONS.get(idx) else {
        return false;
    };
    let lazy = r.lazy.load(Relaxed);
    let base = r.base.load(Relaxed);
    let len = r.map_len.load(Relaxed);
    if lazy == 0 || start < base || start + size > base + len {
        return false;
    }
    // Only while below the threshold; `claimed` may race with a commit
    // crossing it, in which case the range is given back once more, which
    // is harmless (it is free) and the frame faults in as a huge page later.
    if r.claimed.load(Acquire) >= lazy {
        return false;
    }
    os::madvise_dontneed(start, size);
    let _ = r
        .claimed
        .fetch_update(AcqRel, Relaxed, |c| Some(c.saturating_sub(size)));
    true
}

pub(crate) fn claimed(idx: usize, size: usize) {
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
        let len = r.map_len.load(Relaxed);
        if settings::thp() {
            os::madvise_hugepage(base, len);
        }
        LAZY_ADVISED.fetch_add(1, Relaxed);
        // Collapse now what is in use (frames never touched stay empty and
        // fault in as huge pages later).
        for f in (base..base + len).step_by(FRAME) {
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
/// where the shared fallback heap allocates (`heap::fallback_heap`).
pub(crate) fn meta_arena(min_size: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vma_name() {
        let mut n = [0u8; 32];
        core_vma_name(12, &mut n);
        assert_eq!(&n[..17], b"smtalloc-core-12\0");
    }
}
