//! The allocator itself: everything that runs inside `malloc`, in files
//! that call downwards only, as mimalloc's do (a `malloc` descends
//! alloc → heap → arena → os). Bottom-up:
//!
//! * [`os`]: every system call (mmap, madvise, mremap, rseq, sysfs and
//!   `/proc` reads, stderr, errno, `pthread_atfork`, `sched_yield`,
//!   `sysconf`) — the only file that calls the OS;
//! * [`mi`]: the FFI to mimalloc, which manages the blocks inside each
//!   core's arena;
//! * [`spin_lock`], [`line`](mod@line): the one lock type, and text without
//!   allocating;
//! * [`options`], [`core_map`]: `SMTALLOC_*` and the CPU → core map, parsed
//!   at init (safe code: `init` passes in `getenv` and the file reader);
//! * [`settings`]: the options as the allocator uses them;
//! * [`cpu`]: the caller's CPU and core;
//! * [`frame_table`]: which large block or core owns each 2 MiB frame;
//! * [`boot`]: the bootstrap buffer used while initializing;
//! * [`large_cache`], [`remote`], [`arena`]: kept large mappings,
//!   cross-core frees sent home in batches, each core's arena regions;
//! * [`thread_area`]: which of `remote`'s outboxes the calling thread owns,
//!   in an initial-exec thread-local area;
//! * [`fork`], [`init`]: fork handlers and initialization;
//! * [`heap`]: each core's current heap and the allocation path;
//! * [`large`]: large blocks;
//! * [`free`], [`alloc`]: the C entry points;
//! * [`global`]: the `GlobalAlloc`;
//! * [`stats`]: the statistics, gathered and printed without allocating,
//!   and the exit hook that prints them.
//!
//! Each file owns its tables of global state, all static: nothing is
//! allocated to run the allocator itself except mimalloc's own metadata,
//! and nothing here allocates through the global allocator. Nothing here
//! uses anything outside `sys/`: what the allocator needs before any
//! caller exists (the options, the CPU → core map, text for stderr) lives
//! here, and the crate root and its `stats` module only call in. `unsafe`
//! is allowed file by file, where a file needs it; every block has a
//! `// SAFETY:` comment. Functions that the `malloc` and `free` fast paths
//! call in another file are `#[inline(always)]`: release builds split a
//! crate into several codegen units.

pub mod alloc;
pub mod arena;
pub mod boot;
pub mod core_map;
pub mod cpu;
pub mod fork;
pub mod frame_table;
pub mod free;
pub mod global;
pub mod heap;
pub mod init;
pub mod large;
pub mod large_cache;
pub mod line;
pub mod mi;
pub mod options;
pub mod os;
pub mod remote;
pub mod settings;
pub mod spin_lock;
pub mod stats;
pub mod thread_area;
