//! What `SMTALLOC_*` asked for, as the allocator uses it: set once by init
//! (`init.rs`), read everywhere after. Static atomics, so reading one on a
//! hot path costs a load.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::Relaxed};

use super::options::{self, Options};

static STATS_ON: AtomicBool = AtomicBool::new(false);

static VERBOSE: AtomicU32 = AtomicU32::new(0);

static THP: AtomicBool = AtomicBool::new(true);

static RESERVE: AtomicUsize = AtomicUsize::new(options::DEFAULT_RESERVE);

/// `SMTALLOC_THP_AFTER`: bytes at the start of each region that stay in
/// 4 KiB pages until mimalloc has claimed as many in the region.
static THP_AFTER: AtomicUsize = AtomicUsize::new(options::DEFAULT_THP_AFTER);

/// Records the options: `SMTALLOC_THP_AFTER` rounded to whole frames, the
/// reserve rounded to mimalloc's arena unit `unit`.
pub(crate) fn apply(opts: &Options, unit: usize) {
    STATS_ON.store(opts.stats, Relaxed);
    VERBOSE.store(opts.verbose, Relaxed);
    THP.store(opts.thp, Relaxed);
    THP_AFTER.store(options::round_frames(opts.thp_after), Relaxed);
    RESERVE.store(options::round_reserve(opts.reserve, unit), Relaxed);
}

/// Whether `SMTALLOC_STATS` was set.
#[inline(always)]
pub fn stats_enabled() -> bool {
    STATS_ON.load(Relaxed)
}

/// `SMTALLOC_VERBOSE`.
pub(crate) fn verbose() -> u32 {
    VERBOSE.load(Relaxed)
}

/// Whether arenas are advised for huge pages (`SMTALLOC_THP`).
pub(crate) fn thp() -> bool {
    THP.load(Relaxed)
}

/// The initial arena bytes per core.
pub(crate) fn reserve() -> usize {
    RESERVE.load(Relaxed)
}

/// `SMTALLOC_THP_AFTER` as used (0 when THP is off or advised up front).
pub fn thp_after() -> usize {
    if THP.load(Relaxed) {
        THP_AFTER.load(Relaxed)
    } else {
        0
    }
}
