//! [`SmtAlloc`]: smtalloc as a Rust `#[global_allocator]`.
//!
//! Uses `alloc` and `free` only; re-exported by the crate root.
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use core::ffi::c_void;

use super::alloc::{aligned, calloc, malloc, realloc};
use super::free::free;

/// The core-aware allocator for Rust programs:
///
/// ```no_run
/// #[global_allocator]
/// static ALLOC: smtalloc::SmtAlloc = smtalloc::SmtAlloc;
/// ```
///
/// The same allocator as `libsmtalloc.so`: every block under 1 MiB comes from the
/// arena of the physical core the thread runs on.
#[derive(Clone, Copy, Debug, Default)]
pub struct SmtAlloc;

/// Alignment every plain `malloc` result has.
const MIN_ALIGN: usize = 16;

// SAFETY: every method returns null or a block of at least `layout.size()`
// bytes aligned to `layout.align()` (mimalloc's heap functions, or whole
// 2 MiB-aligned mappings), and frees/reallocates only blocks this
// allocator returned, as the GlobalAlloc contract guarantees.
unsafe impl GlobalAlloc for SmtAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            malloc(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align(), false).cast()
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            calloc(1, layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align(), true).cast()
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator (GlobalAlloc contract).
        unsafe { free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN {
            // SAFETY: `ptr` is live and from this allocator; new_size > 0.
            return unsafe { realloc(ptr.cast(), new_size) }.cast();
        }
        let new = aligned(new_size, layout.align(), false).cast::<u8>();
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and hold at least
            // min(old, new) bytes; then the old one is released.
            unsafe {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                free(ptr.cast());
            }
        }
        new
    }
}
