//! The allocator itself, in layers that call downwards only, as mimalloc's
//! files do (a `malloc` descends alloc → heap → arena → os):
//!
//! * [`os`]: every system call (mmap, madvise, mremap, rseq, sysfs and
//!   `/proc` reads, stderr, errno, `pthread_atfork`, `sched_yield`,
//!   `sysconf`) — the only file that calls the OS;
//! * [`mi`]: the FFI to mimalloc, the engine inside each core's heap;
//! * [`spin_lock`], [`line`]: the one lock type, and text without
//!   allocating;
//! * [`options`], [`core_map`]: `SMTALLOC_*` and the CPU → core map, parsed
//!   at init (safe code);
//! * [`settings`]: the options as the allocator uses them;
//! * [`cpu`]: the caller's CPU and core;
//! * [`frame_table`]: which large block or core owns each 2 MiB frame;
//! * [`boot`]: the bootstrap buffer used while initializing;
//! * [`large_cache`], [`remote`], [`arena`]: kept large mappings,
//!   cross-core frees sent home in batches, each core's arena regions;
//! * [`fork`], [`init`]: fork handlers and initialization;
//! * [`heap`]: each core's current heap and the allocation path;
//! * [`large`]: large blocks;
//! * [`free`], [`alloc`]: the C entry points;
//! * [`stats`]: statistics and the report at exit;
//! * [`global`]: the `GlobalAlloc`.
//!
//! Nothing here uses anything outside `sys/`: the crate root only
//! re-exports. `unsafe` is allowed file by file, where a file needs it;
//! every block has a `// SAFETY:` comment.

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
