//! Initialization, once, at the first allocation: the options, the CPU ->
//! core map, mimalloc's options and metadata arena, the frame table, the
//! fork handlers. Nothing here allocates (smtalloc is malloc): requests
//! made while it runs are served from the bootstrap buffer.
//!
//! Called by the allocation slow paths (`heap`, `large`); `is_initialized`
//! also by `stats`. Calls down into everything it sets up, never into the
//! allocation paths.
#![allow(unsafe_code)]

use core::sync::atomic::{
    AtomicU8,
    Ordering::{AcqRel, Acquire, Release},
};

use super::arena::meta_arena;
use super::core_map;
use super::cpu::{self, MAX_CPUS};
use super::fork;
use super::frame_table;
use super::large_cache;
use super::line::Line;
use super::mi;
use super::options::Options;
use super::os::{self, FRAME};
use super::settings;
use super::thread_area;

const UNINIT: u8 = 0;
const INITIALIZING: u8 = 1;
const READY: u8 = 2;
static STATE: AtomicU8 = AtomicU8::new(UNINIT);

/// Makes sure smtalloc is initialized. Returns false while initialization
/// is in progress (a reentrant call from within init, or another thread
/// racing it): the caller then serves the request from the bootstrap buffer.
#[cold]
pub(crate) fn ensure_init() -> bool {
    match STATE.compare_exchange(UNINIT, INITIALIZING, AcqRel, Acquire) {
        Ok(_) => {
            init();
            STATE.store(READY, Release);
            true
        }
        Err(s) => s == READY,
    }
}

/// Whether smtalloc has initialized in this process (the allocation paths
/// check it before anything else).
#[inline(always)]
pub fn is_initialized() -> bool {
    STATE.load(Acquire) == READY
}

fn init() {
    let opts = Options::from_env(os::getenv_into, |name, value, valid| {
        // One line on stderr: the value is ignored, the program runs on.
        let mut line = Line::new();
        line.push_fmt(format_args!(
            "smtalloc: {}={}: not understood, expected {valid}; using the default\n",
            name.to_str().unwrap_or("?"),
            core::str::from_utf8(value).unwrap_or("(not UTF-8)"),
        ));
        os::write_stderr(line.as_bytes());
    });
    large_cache::set_capacity(opts.large_cache);
    // SAFETY: plain getters of constants.
    let (min_size, version) = unsafe { (mi::mi_arena_min_size(), mi::mi_version()) };
    settings::apply(&opts, min_size.max(FRAME));

    // CPU -> core map from sysfs, read into stack buffers.
    let mut map = [0u16; MAX_CPUS];
    let topo = core_map::read_core_map(&mut map, os::read_file);
    cpu::set_map(&map, topo.cpus, topo.cores);

    // SAFETY: mimalloc option setters, before any heap exists.
    unsafe {
        // Free slices are purged 10 ms after they fall free (mimalloc
        // v2's delay; v3's 1 s never comes in a short program): in a core
        // arena the commit callback (`arena::commit_range`) gives back only
        // what lies in the region's 4 KiB-page start before it is
        // huge-page advised, so no huge page is ever split, and a small
        // heap's RSS follows what it holds (git's peak RSS went from 1.28x
        // glibc's to 1.20x).
        mi::mi_option_set(mi::OPT_PURGE_DELAY, 10);
        // mimalloc's own (shared) arena only holds heap metadata: keep its
        // reservation small (the option is in KiB).
        mi::mi_option_set(mi::OPT_ARENA_RESERVE, 32 * 1024);
        // A page found full while looking for free blocks moves to the full
        // queue at once instead of being kept (v3 keeps 2 per size class)
        // and walked again by the next search: larson's churn of 5,000
        // blocks of 16-1024 B searched those queues for 21% of its time
        // (`mi_page_queue_find_free_ex`, `_mi_malloc_generic`); with 0, a
        // single-threaded replica ran 10% faster and larson 6% (issue 31,
        // 2-vCPU KVM guest, 6 interleaved rounds). Memory is unchanged: the
        // pages are full.
        mi::mi_option_set(mi::OPT_PAGE_FULL_RETAIN, 0);
        if opts.verbose >= 2 {
            mi::mi_option_set(mi::OPT_VERBOSE, 1);
            mi::mi_option_set(mi::OPT_SHOW_ERRORS, 1);
        }
    }

    meta_arena(min_size);

    frame_table::map();
    thread_area::init();
    os::atfork(fork::prepare, fork::release, fork::child);

    if opts.verbose >= 1 {
        let mut line = Line::new();
        line.push_fmt(format_args!(
            "smtalloc: init: mimalloc {} cpus {} cores {} rseq {} reserve/core {} MiB thp {}\n",
            version,
            topo.cpus,
            topo.cores,
            if cpu::uses_rseq() {
                "yes"
            } else {
                "no (sched_getcpu)"
            },
            settings::reserve() >> 20,
            if opts.thp { "madvise" } else { "off" },
        ));
        os::write_stderr(line.as_bytes());
    }
}
