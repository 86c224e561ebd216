//! smtalloc: a core-aware memory allocator. Every 2 MiB huge page it uses
//! for small and medium blocks belongs to the arena of exactly one physical
//! core, so a huge page is only ever cached in the TLB of the core whose
//! threads use it (SMT siblings share it: they share the core's TLB).
//!
//! Why: in a multi-threaded server, glibc, jemalloc (`percpu_arena` too),
//! mimalloc and tcmalloc all let one 2 MiB frame hold objects of several
//! cores once threads migrate, so the thread model suffers more dTLB misses
//! than the process model. Keeping huge pages core-private removed 46.7% of
//! dTLB misses (+3.0% throughput) in the study smtlab reproduces.
//!
//! This crate owns the allocator and is used two ways:
//! * `libsmtalloc.so` (package `smtalloc-preload`): an `LD_PRELOAD` drop-in
//!   `malloc` for any program; smtlab looks for it next to its own
//!   executable, then in `../lib/smtlab/` where an install puts it
//!   (`smtlab_allocators::own_dirs_of`: smtlab's lookup, in the crate that
//!   finds every allocator; this crate knows nothing of where it is
//!   installed).
//! * [`SmtAlloc`], a Rust `#[global_allocator]`, and [`stats()`].
//!
//! Nothing but libc and mimalloc is called.
//!
//! # Design
//!
//! **Built on mimalloc v3** (through `libmimalloc-sys` 0.1.49+, whose
//! default is mimalloc 3.3; its `override` feature stays off because
//! libsmtalloc.so exports `malloc` itself). Size classes, free lists,
//! thread-local fast paths and cross-thread frees are mimalloc's, a proven
//! allocator; smtalloc only decides *which memory* a request may use. mimalloc
//! v3 because it has what this needs: arenas registered from caller memory
//! (`mi_manage_memory`) that can be *exclusive* (only heaps bound to
//! them allocate there), and first-class heaps bound to one arena
//! (`mi_heap_new_in_arena`) that any thread may allocate from (v2's heaps
//! were thread-local).
//!
//! **Arenas map to cores.** At init smtalloc reads the CPU -> physical core
//! map once from sysfs (`cpuN/topology/{core_id,physical_package_id}`, read
//! with `open`/`read` into stack buffers: smtalloc *is* malloc, so init
//! must not allocate). On a core's first allocation it `mmap`s a region of
//! `SMTALLOC_RESERVE_PER_CORE` bytes (default 256 MiB, virtual until
//! touched), 2 MiB-aligned and a whole number of mimalloc's 32 MiB arena
//! units (so of 2 MiB frames), `madvise(MADV_HUGEPAGE)`s it once the core's
//! heap is past a threshold (below; with THP in `madvise` mode faults then
//! map whole 2 MiB pages), names it `[anon:smtalloc-core-N]`
//! where the kernel supports it, registers it with mimalloc as an exclusive,
//! arena (`mi_manage_memory`, with a commit callback), and creates
//! that core's heap in it. No other
//! core's heap can allocate there, and regions are disjoint and
//! 2 MiB-aligned, so no 2 MiB frame holds two cores' blocks: the stats
//! recompute this from mimalloc's own arena areas (`shared frames: 0`).
//!
//! **Small heaps stay small (lazy huge pages).** With every frame
//! huge-page-advised, a core's first touch of any frame costs a whole 2 MiB:
//! mimalloc puts an arena's metadata (bitmaps, page descriptors: 640 KiB
//! for 256 MiB, mostly untouched) at its start and then the first pages
//! there, spreads each size class (and each thread) over pages of their
//! own (64 KiB small, 512 KiB medium, 4 MiB large pages), and keeps its
//! own metadata in a 64 MiB arena that it advises for huge pages too. A
//! tiny program thus held ~4 MiB per core plus 2 MiB for mimalloc's
//! metadata (15 MB peak RSS in smtlab's small allocation benchmarks, 1.7x
//! jemalloc). So: (1) each region stays in 4 KiB pages (no advice at all)
//! until mimalloc has claimed `SMTALLOC_THP_AFTER` bytes of it (default
//! 64 MiB, rounded up to whole 32 MiB mimalloc segments, since a segment
//! spreads its metadata and first pages over its whole span; not only its
//! first 64 MiB: mimalloc does not always fill an arena from its start, and
//! slices placed past an advised span faulted huge pages for a 25 MB heap
//! under load), and the arena is
//! registered "not committed" so that mimalloc reports, through the commit
//! callback, each range of slices it starts to use (committing itself
//! does nothing, the mapping is read-write already). Once the region has
//! claimed that many bytes, the whole region is advised `MADV_HUGEPAGE`
//! and each of its frames that holds anything is collapsed into a huge page
//! at once (`MADV_COLLAPSE`, Linux 6.1+; otherwise khugepaged collapses
//! them later), so a large heap still ends up (almost) entirely in huge pages
//! while a heap under 64 MiB per core costs only the 4 KiB pages it
//! touches. Large blocks (1 MiB and up) are advised for huge pages only
//! once the live large blocks reach the same threshold, so a small program's
//! barely touched buffer stays in 4 KiB pages. Every frame still belongs to exactly one core: only the page
//! size changes. While the region is still in 4 KiB pages, mimalloc's
//! delayed purge of free slices (10 ms after they fall free)
//! is honoured: the commit callback gives those pages back
//! (`MADV_DONTNEED`) and stops counting them as claimed, so a small
//! program's RSS follows what it holds (git's peak RSS went from 1.28x to
//! 1.19x glibc's); once the region is advised nothing is purged. (2) At init smtalloc registers a 32 MiB non-exclusive
//! arena of 4 KiB pages (`MADV_NOHUGEPAGE`) before any heap exists, so
//! mimalloc's metadata (heap and thread structures, per-heap page bitmaps)
//! goes there (~100 KiB touched) instead of into a huge page.
//!
//! **Hot path.** `malloc(n)`: read `cpu_id` from glibc's per-thread rseq
//! area (thread pointer + `__rseq_offset`, offset 4 of `struct rseq`; one
//! load, kept current by the kernel; glibc >= 2.35 registers it, smtalloc
//! never registers a second one), index the CPU -> core table and the
//! per-core heap table, check that core's inbox (below), call
//! `mi_heap_malloc`. Without rseq
//! (`__rseq_size == 0`, or the symbols absent: they are weak references in
//! `csrc/rseq.c`, so no `dlsym` at init) it uses `sched_getcpu`. A thread
//! preempted and migrated between reading its CPU and allocating uses the
//! previous core's heap for that one block; that is the only way a block
//! lands on a "foreign" core. `free(p)` of a block of the caller's own
//! core is `mi_free(p)`: the block goes back to the page (and so the core
//! arena) it came from, from any thread, also after the allocating thread
//! exited (mimalloc abandons and reclaims the pages of exited threads).
//! Which core a block belongs to is one load from the frame table (below).
//!
//! **Cross-core frees go back by message.** A block freed on another core
//! must still return to its own core's page (giving it to the freeing
//! thread, as jemalloc and tcmalloc do, is what puts two cores' objects in
//! one frame). mimalloc would write the free-list link into the block and
//! push it onto the page's atomic thread-free list; the owner later walks
//! that list, fetching every block's line back from the other core, and
//! writes it again to reuse it (`_mi_page_free_collect` was 30% of the time
//! of an xmalloc-like producer/consumer run on a VM whose vCPUs are
//! 100-500 ns apart). Instead, `free` only records the pointer: in an
//! outbox of the freeing thread's own (4 nodes of 61 pointers; a slot of
//! 512 static ones, claimed at the thread's first cross-core free and given
//! back by a `pthread_key` destructor when it exits, its open node sent
//! first; found through one initial-exec thread-local word, so parking
//! takes no atomic step), or, for threads past the 512, in an outbox of
//! the CPU it runs on (taken with one uncontended compare-and-swap: about
//! 3 of 20 ns per xmalloc block here); a full node is pushed onto the owning core's
//! inbox (a lock-free stack), and that core's next `malloc` frees the
//! blocks of every node there itself, through mimalloc's local free path,
//! and hands the nodes back. The freeing core writes nothing into the
//! block, and nothing of the owner's but one inbox line per 61 blocks.
//! This is snmalloc's message-passing design on top of mimalloc;
//! it made xmalloc-like and larson-like runs 1.3-1.6x faster here in the
//! host's fast state and 1.5-2.4x in its slow state
//! (README). Frees fall back to `mi_free` when a CPU's outbox is held by a
//! preempted thread on the same CPU, when all its nodes wait in inboxes
//! (the owner has not allocated since), or for a node closed early with
//! fewer than 8 blocks (a free for another owner arrived). Outboxes and
//! inboxes are static (per thread slot, per CPU, per core), so a node in
//! an inbox outlives the thread that sent it. At most 244 blocks per
//! thread or CPU wait; a block waiting in the inbox of a core that allocates no more
//! costs nothing that freeing it would save (core-arena memory is never
//! returned to the OS). `fork` flushes everything first; the statistics
//! flush what is idle and count the blocks each core received and the
//! cross-core frees done directly.
//!
//! **Exhausted arena.** When a core's heap cannot get a fresh page, smtalloc
//! first retries that core's older regions (they may have free pages
//! again), then maps another 2 MiB-aligned region for the *same* core,
//! twice the size of its largest so far (so a core needs only a few of the
//! at most 160 arenas mimalloc allows), with a new heap that becomes the
//! core's current one. Older regions keep serving frees and stay eligible,
//! but are only revisited when the current one is full, so a core that
//! outgrows its reserve touches more memory than one big arena would (a
//! test program with ~230 MiB live peaked at 448 MiB RSS with a 64 MiB
//! reserve and 275 MiB with 256 MiB): hence the generous default.
//! If no region can be made (out of memory or arena slots) the core falls
//! back to mimalloc's shared main heap (the 4 KiB-page metadata arena,
//! then arenas mimalloc reserves itself), counted as `fallbacks` in the
//! stats.
//!
//! **Large blocks** (>= 1 MiB, or alignment > 64 KiB) come from a shared
//! "arena" of direct mappings: each is its own 2 MiB-aligned mapping of
//! whole 2 MiB frames (alignment up to 1 GiB by over-mapping and trimming),
//! recorded in a sparse frame table (one u32 per 2 MiB of address space, a
//! NORESERVE mapping that costs only the pages touched; the frames of core
//! arena regions are tagged there with their core). `free` tests one
//! alignment bit before looking for a large block there. `realloc` of a
//! large block grows in place with `mremap` or moves its page tables (no
//! copy) to a new 2 MiB-aligned range; shrinking unmaps whole frames.
//! A freed large block is kept mapped for reuse while the kept ones total
//! at most `SMTALLOC_LARGE_CACHE` (32 MiB, at most 16 blocks), and the next
//! large request of its size or smaller takes the smallest that fits,
//! trimmed by whole frames (zeroed with `memset` for `calloc`). Unmapping
//! and remapping each one cost two system calls, a TLB shootdown and the
//! kernel zeroing every page again: 16 threads churning 0.1-2 MiB buffers
//! spent 54% of their time in the kernel's `clear_page` and ran 5-15x
//! slower than with the kept blocks (glibc keeps such blocks in its heap
//! up to its mmap threshold, at most 32 MiB).
//!
//! **How memory returns to the OS: only in whole 2 MiB units.** Large blocks
//! are unmapped whole on `free` unless kept for reuse (and shrink, or are
//! trimmed for reuse, by whole frames). Inside a core arena, mimalloc's
//! purges go through the commit callback, which gives back free 4 KiB pages
//! only while the region is not yet huge-page advised and refuses every
//! other purge, so no huge page is ever split; that memory is reused by the
//! same core and returned when the process exits. (Purging whole free 2 MiB
//! frames of an advised region is a possible later addition; it is not done
//! now.)
//!
//! **Early and odd calls.** The first call initializes (env, sysfs, mimalloc
//! options, `pthread_atfork`). Calls made while that runs (glibc's
//! `pthread_atfork` allocates; another thread may race the first call; a
//! program's own early `dlsym`/`calloc` during init would too) are served
//! from a 256 KiB static bootstrap buffer; `free` of such a block is a no-op and `realloc` copies it out.
//! `fork`: a `pthread_atfork` handler holds the arena-growth lock across
//! `fork`, so the child never inherits it locked, and takes every CPU's
//! outbox and every inbox of the cross-core frees after flushing them; the
//! child frees what reached the inboxes since and takes back the outbox
//! slots of the threads it does not have (the blocks of their open nodes
//! stay allocated: at most 244 per such thread), so the child inherits
//! nothing taken; mimalloc's allocation fast paths are lock-free, and
//! blocks of threads that do not exist in the child are freed as
//! cross-thread frees.
//!
//! # Options
//!
//! Environment variables, read once at the first allocation with `getenv`.
//! A value that does not parse keeps the default and is named in one line
//! on stderr (`smtalloc: SMTALLOC_THP=maybe: not understood, expected ...;
//! using the default`); the program runs on, as smtalloc cannot stop it.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `SMTALLOC_STATS` | `0` | `1`: count allocations per core (one relaxed atomic add per `malloc`) and print statistics to stderr at exit: per core its CPUs, arena bytes and regions, bytes/calls allocated, bytes in use, arena RSS and huge-page (AnonHugePages) coverage, other cores' frees of its blocks it received (blocks, batches); the large arena; the lazy huge pages (regions past `SMTALLOC_THP_AFTER`, frames collapsed); and `shared frames: N`, the number of 2 MiB frames in more than one core's arena (always 0); cross-core frees done directly instead of batched; threads holding an outbox of their own |
//! | `SMTALLOC_RESERVE_PER_CORE` | `256MiB` | initial arena size per core (`K`/`M`/`G` suffixes, binary; rounded up to 32 MiB, mimalloc's arena unit); address space only until touched. Large enough that most programs never need a second region: within one arena mimalloc reuses freed space before touching new space, while a second region is filled before older ones are revisited, so outgrowing the reserve costs RSS |
//! | `SMTALLOC_VERBOSE` | `0` | `1`: print init facts (mimalloc version, CPUs, cores, CPU source, reserve) and each new arena to stderr; `2`: also mimalloc's warnings and errors |
//! | `SMTALLOC_THP` | `1` | `0`: do not `madvise(MADV_HUGEPAGE)` (for comparisons with 4 KiB pages) |
//! | `SMTALLOC_THP_AFTER` | `64MiB` | bytes mimalloc must claim of an arena region before it leaves 4 KiB pages: until then nothing of the region is advised (and free pages are purged); then the whole region is advised and its touched frames collapsed into huge pages (rounded up to whole 32 MiB mimalloc segments; `0`: advise every frame up front); also the live large-block bytes from which large blocks are advised for huge pages |
//! | `SMTALLOC_LARGE_CACHE` | `32MiB` | bytes of freed large blocks (>= 1 MiB) kept mapped for reuse instead of unmapped (at most 16 blocks; `0`: unmap every one at once). A kept block serves a later large request of its size or smaller (trimmed by whole 2 MiB frames; zeroed for `calloc`), saving the system calls and the kernel's zeroing of fresh pages |
//!
//! mimalloc's own `MIMALLOC_*` variables are read by mimalloc too; smtalloc
//! overrides `purge_delay` (10 ms) and `arena_reserve` (32 MiB, for arenas
//! mimalloc would reserve itself once smtalloc's metadata arena is full).
//!
//! # Modules
//!
//! Two layers; each file's header says what it owns and who may call it.
//!
//! * `sys/` is the allocator, in files that call downwards only, as
//!   mimalloc's do (a `malloc` descends alloc → heap → arena → os; its
//!   docs list the files bottom-up). It holds everything the allocator
//!   needs (the `SMTALLOC_*` options, the CPU → core map, text formatted
//!   without allocating, the statistics printed at exit) because it runs
//!   inside the first `malloc`, before any caller could hand it anything.
//!   Nothing in it allocates through the global allocator or uses a module
//!   outside it; only `sys/os.rs` calls the OS, and `unsafe` is allowed
//!   only in the files of `sys` that need it.
//! * Above it, safe code that uses only `sys`: `stats.rs` (the statistics
//!   as Rust values, which allocate) and this root, which re-exports the
//!   public API ([`raw`] holds what libsmtalloc.so exports).

mod stats;
mod sys;

pub use stats::{stats, CoreStats, Stats};
pub use sys::global::SmtAlloc;

/// The C-semantics entry points, for `smtalloc-preload` (which exports them
/// as `malloc`, `free`, ...) and for tests. Each behaves like its glibc
/// namesake; see the crate docs.
pub mod raw {
    pub use crate::sys::alloc::{
        aligned, calloc, malloc, posix_memalign, realloc, usable_size, MAX_ALIGN,
    };
    pub use crate::sys::free::free;
    pub use crate::sys::large::LARGE_MIN;
    pub use crate::sys::os::{keep_errno, page_size, set_errno};
    /// Prints the statistics to stderr (`smtalloc_stats_print()`).
    pub use crate::sys::stats::print_stats;
}

/// The core index owning the arena that contains `p`, or `None` (a large
/// block, or memory not from smtalloc's core arenas).
pub fn owner_core(p: *const u8) -> Option<usize> {
    sys::frame_table::owner_core(p)
}

/// Blocks and batches of other cores' frees that core `core` has received
/// and freed itself so far (see "Cross-core frees" above). Unlike
/// [`stats()`], this does not flush anything first.
pub fn cross_core_frees_received(core: usize) -> (u64, u64) {
    sys::remote::received(core)
}

/// Threads that can hold an outbox of their own for their cross-core
/// frees at once; past them, threads park in their CPU's outbox.
pub const THREAD_OUTBOXES: usize = sys::remote::THREAD_SLOTS;

/// Blocks a node of an outbox holds, and how many blocks a node closed
/// early must hold to be sent rather than freed directly.
pub const OUTBOX_NODE: (usize, u32) = (sys::remote::NODE_CAP, sys::remote::MIN_SEND);

/// The core index smtalloc maps a CPU to (after initialization).
pub fn core_of_cpu(cpu: usize) -> Option<usize> {
    sys::cpu::core_of_cpu(cpu)
}
