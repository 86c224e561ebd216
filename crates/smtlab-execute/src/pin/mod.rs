//! Run a program with its threads pinned one by one, in creation order, to a
//! list of CPUs (as `likwid-pin` does), and report where each thread ran.
//!
//! # How
//!
//! A small C library, [`PRELOAD_SO`] (source: `preload/pin_preload.c`, built
//! by `build.rs`, embedded in the binary and written out by
//! [`preload_library`]), is put in front of the program's `LD_PRELOAD`. It
//! wraps `pthread_create`: each new thread pins itself in a start trampoline,
//! before the program's own code runs (race-free, unlike
//! `pthread_setaffinity_np` after creation), and the main thread is pinned in
//! the library's constructor. smtlab also restricts the whole child to the
//! CPU set before `exec`, so programs the library cannot enter (statically
//! linked, setuid) are still confined to the set.
//!
//! # Interface of the library (environment variables)
//!
//! Read once per process image, in the library's constructor:
//!
//! * [`ENV_CPUS`] `SMTLAB_PIN_CPUS`: comma list of OS CPU indexes, in order
//!   (`1,0,3`; repeats allowed, at most [`MAX_LIST`] entries). The main
//!   thread goes to `cpus[0]`; the k-th created thread that is not skipped
//!   (k from 0) to `cpus[(k + 1) % len]` (round robin). Unset or empty: no
//!   pinning, only the report.
//! * [`ENV_SKIP`] `SMTLAB_PIN_SKIP`: hexadecimal mask (optional `0x`, at most
//!   64 bits). Bit i set: the i-th created thread (`pthread_create` calls
//!   counted from 0; the main thread is not counted) is not pinned to one CPU
//!   and gets the whole CPU list as its affinity (instead of inheriting its
//!   creator's single CPU); it does not use up a CPU of the round robin. As
//!   in likwid-pin, this is how runtime helper threads (Intel OpenMP's
//!   shepherd thread: `0x1`) are kept off the workers' CPUs.
//! * [`ENV_REPORT`] `SMTLAB_PIN_REPORT`: absolute path of a file the library
//!   appends to (`O_APPEND`, one `write` per line), TAB-separated:
//!   `S pid tid index pinned` when a thread starts (index -1: a process's
//!   main thread; pinned -1: not pinned to one CPU), and
//!   `E pid tid index pinned last comm` when it ends or, for threads still
//!   alive, at `exit()`. `last` is field 39 (`processor`) of
//!   `/proc/self/task/<tid>/stat`, -1 if unreadable. See [`parse_thread_log`].
//!
//! Children inherit `LD_PRELOAD` and these variables, as with likwid-pin:
//! every `exec`'d child pins its own main thread to `cpus[0]` and counts its
//! threads from 0 again; all processes append to the same report file (each
//! line carries the pid). A process that dies by a signal or `_exit` writes
//! no `E` lines; [`run`] then falls back to `/proc` (sampled while running,
//! and read once more after exit, before reaping, for the main thread).
//!
//! # Files
//!
//! Bottom-up: `interface.rs` holds the library and the names of its
//! environment variables; `library.rs` writes the embedded library to a
//! private directory and builds `LD_PRELOAD`; `request.rs` is what to run and how
//! (the skip mask, the C code's CPU choice modelled in Rust);
//! `thread_log.rs` reads the library's report file and `/proc`;
//! `outcome.rs` merges them into one row per thread; `run.rs` starts,
//! watches and reaps the program; `table.rs` prints the outcome. Every
//! public name is re-exported here.

mod interface;
mod library;
mod outcome;
mod request;
mod run;
mod table;
mod thread_log;

pub use interface::{ENV_CPUS, ENV_REPORT, ENV_SKIP, MAX_LIST, PRELOAD_SO, SKIP_BITS};
pub use library::{preload_library, preload_value, DirError, LibraryError};
pub use outcome::{PinOutcome, Source, ThreadRow};
pub use request::{parse_skip_mask, planned_cpu, PinMode, PinRequest, SkipMaskError};
pub use run::{run, PinError};
pub use table::render_table;
pub use thread_log::{parse_stat, parse_thread_log, task_stats, TaskStat, ThreadLogLine};
