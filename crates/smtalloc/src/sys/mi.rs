//! The part of mimalloc v3's C API that smtalloc uses (declared here rather
//! than taken from `libmimalloc-sys`, whose arena bindings lag behind v3:
//! `mi_arena_area` is missing). The static library itself comes from
//! `libmimalloc-sys` (v3 is its default; its `override` feature stays off
//! because libsmtalloc.so exports `malloc` itself).
//!
//! Used by the files that hand memory to mimalloc or blocks to and from it:
//! `arena`, `init`, `heap`, `alloc`, `free`, `remote`.
#![allow(unsafe_code)]

use core::ffi::{c_int, c_long, c_void};

// Link mimalloc's static library (no Rust item of the crate is used).
use libmimalloc_sys as _;

/// Opaque mimalloc heap (`mi_heap_t`): in v3 a first-class heap usable
/// from any thread.
#[repr(C)]
pub struct MiHeap {
    _opaque: [u8; 0],
}

/// `mi_arena_id_t` in v3.
pub type MiArenaId = *mut c_void;

/// `mi_heap_area_t` (visited by `mi_heap_visit_blocks`).
#[repr(C)]
pub struct MiHeapArea {
    pub blocks: *mut c_void,
    pub reserved: usize,
    pub committed: usize,
    pub used: usize,
    pub block_size: usize,
    pub full_block_size: usize,
    pub reserved1: *mut c_void,
}

pub type MiBlockVisitFun = unsafe extern "C" fn(
    heap: *const MiHeap,
    area: *const MiHeapArea,
    block: *mut c_void,
    block_size: usize,
    arg: *mut c_void,
) -> bool;

/// `mi_commit_fun_t`: mimalloc calls it to commit (`commit == true`) or
/// decommit a range of an arena registered with [`mi_manage_memory`];
/// `is_zero` may be NULL.
pub type MiCommitFun = unsafe extern "C" fn(
    commit: bool,
    start: *mut c_void,
    size: usize,
    is_zero: *mut bool,
    arg: *mut c_void,
) -> bool;

// mi_option_t values of mimalloc 3.3 (include/mimalloc.h).
pub const OPT_SHOW_ERRORS: c_int = 0;
pub const OPT_VERBOSE: c_int = 2;
pub const OPT_PURGE_DELAY: c_int = 15;
pub const OPT_ARENA_RESERVE: c_int = 23;
pub const OPT_PAGE_FULL_RETAIN: c_int = 36;

extern "C" {
    pub fn mi_heap_malloc(heap: *mut MiHeap, size: usize) -> *mut c_void;
    pub fn mi_heap_zalloc(heap: *mut MiHeap, size: usize) -> *mut c_void;
    pub fn mi_heap_malloc_aligned(heap: *mut MiHeap, size: usize, align: usize) -> *mut c_void;
    pub fn mi_heap_zalloc_aligned(heap: *mut MiHeap, size: usize, align: usize) -> *mut c_void;
    pub fn mi_heap_realloc(heap: *mut MiHeap, p: *mut c_void, newsize: usize) -> *mut c_void;
    pub fn mi_heap_main() -> *mut MiHeap;
    pub fn mi_heap_new_in_arena(arena_id: MiArenaId) -> *mut MiHeap;
    pub fn mi_heap_visit_blocks(
        heap: *mut MiHeap,
        visit_blocks: bool,
        visitor: MiBlockVisitFun,
        arg: *mut c_void,
    ) -> bool;
    pub fn mi_free(p: *mut c_void);
    pub fn mi_usable_size(p: *const c_void) -> usize;
    pub fn mi_manage_os_memory_ex(
        start: *mut c_void,
        size: usize,
        is_committed: bool,
        is_pinned: bool,
        is_zero: bool,
        numa_node: c_int,
        exclusive: bool,
        arena_id: *mut MiArenaId,
    ) -> bool;
    pub fn mi_manage_memory(
        start: *mut c_void,
        size: usize,
        is_committed: bool,
        is_pinned: bool,
        is_zero: bool,
        numa_node: c_int,
        exclusive: bool,
        commit_fun: Option<MiCommitFun>,
        commit_fun_arg: *mut c_void,
        arena_id: *mut MiArenaId,
    ) -> bool;
    pub fn mi_arena_area(arena_id: MiArenaId, size: *mut usize) -> *mut c_void;
    pub fn mi_arena_min_alignment() -> usize;
    pub fn mi_arena_min_size() -> usize;
    pub fn mi_option_set(option: c_int, value: c_long);
    pub fn mi_version() -> c_int;
}
