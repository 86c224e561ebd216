//! The exported C allocator symbols, with glibc's semantics for the edge
//! cases (see `smtalloc_core::raw`): each forwards to `smtalloc_core::raw`
//! and uses nothing else. Exporting symbols (`#[no_mangle]`) is why this
//! file allows unsafe code.
#![allow(unsafe_code)]

use core::ffi::{c_int, c_void};
use core::ptr::null_mut;

use smtalloc_core::raw;

#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    raw::malloc(size)
}

/// # Safety
/// `p` is NULL or a live block from this allocator.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: the C caller passes NULL or a live block. (errno is preserved
    // as glibc does: only the large-block path makes a system call, and it
    // restores errno itself.)
    unsafe { raw::free(p) }
}

/// # Safety
/// As `free`.
#[no_mangle]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    // SAFETY: as `free`.
    unsafe { free(p) }
}

#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    raw::calloc(n, size)
}

/// # Safety
/// `p` is NULL or a live block from this allocator.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the C caller passes NULL or a live block.
    unsafe { raw::realloc(p, size) }
}

/// # Safety
/// As `realloc`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: as `realloc`.
        Some(total) => unsafe { raw::realloc(p, total) },
        None => {
            raw::set_errno(libc::ENOMEM);
            null_mut()
        }
    }
}

/// # Safety
/// `out` is valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    // SAFETY: the C caller passes a writable `out`.
    unsafe { raw::posix_memalign(out, align, size) }
}

/// C11 `aligned_alloc`: EINVAL for an alignment that is not a power of two.
#[no_mangle]
pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        raw::set_errno(libc::EINVAL);
        return null_mut();
    }
    raw::aligned(size, align, false)
}

/// glibc `memalign`: a non-power-of-two alignment is rounded up to one.
#[no_mangle]
pub extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    let Some(align) = align.max(1).checked_next_power_of_two() else {
        raw::set_errno(libc::EINVAL);
        return null_mut();
    };
    raw::aligned(size, align, false)
}

#[no_mangle]
pub extern "C" fn valloc(size: usize) -> *mut c_void {
    raw::aligned(size, raw::page_size(), false)
}

/// `pvalloc`: page-aligned, size rounded up to whole pages.
#[no_mangle]
pub extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let ps = raw::page_size();
    let Some(rounded) = size.checked_add(ps - 1).map(|s| s & !(ps - 1)) else {
        raw::set_errno(libc::ENOMEM);
        return null_mut();
    };
    raw::aligned(rounded.max(ps), ps, false)
}

/// # Safety
/// `p` is NULL or a live block from this allocator.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    // SAFETY: the C caller passes NULL or a live block.
    unsafe { raw::usable_size(p) }
}

/// Prints smtalloc's statistics to stderr (see `SMTALLOC_STATS`).
#[no_mangle]
pub extern "C" fn smtalloc_stats_print() {
    raw::print_stats();
}
