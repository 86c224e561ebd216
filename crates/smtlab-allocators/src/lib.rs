//! The allocator table: the memory allocators a run can compare
//! (`--alloc`), each loaded into the workers with `LD_PRELOAD`, and where
//! their libraries are found ([`table`]).
//!
//! A crate of its own, below everything that uses it: the CLI and the
//! studies resolve a run's allocators, `smtlab-execute` preloads them and
//! `smtlab-doctor` lists what is installed, and none of them need the
//! planner (nor, through it, the workloads and the DSM) for that.

pub mod table;

pub use table::{
    allocator_dirs, find_allocator, find_allocator_in, installed, library_dirs, locate_library,
    own_dirs, own_dirs_of, Allocator, AllocatorError, AllocatorInfo, Preload, Preloads, ALLOCATORS,
    INSTALLED_LIB_DIR, SMTALLOC_FILE,
};
