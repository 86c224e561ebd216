//! The C entry points that allocate, with glibc's semantics: `malloc`,
//! `calloc`, aligned allocations (`aligned_alloc`, `memalign`,
//! `posix_memalign`), `realloc`, `malloc_usable_size`. Exported by
//! smtalloc-preload and used by the `GlobalAlloc`. Blocks under
//! [`LARGE_MIN`] come from the caller's core's heap (`heap.rs`), larger
//! ones are large blocks (`large.rs`); `free` is `free.rs`.
//!
//! Hot path of `malloc(n)` for `n < 1 MiB`: load the rseq offset, load
//! `cpu_id` from the thread's rseq area, index the CPU -> core table
//! (`cpu.rs`) and the heap table (`heap.rs`), one load of the core's inbox
//! (cross-core frees, `remote.rs`), call `mi_heap_malloc`; all of it is
//! inlined into `malloc`.
//!
//! Called from above only: smtalloc-preload's exports (through `raw`) and
//! the `GlobalAlloc` (`global.rs`).
#![allow(unsafe_code)]

use core::ffi::{c_int, c_void};
use core::ptr::{self, null_mut};

use super::boot::{boot_size, in_boot};
use super::frame_table::large_len;
use super::free::free;
use super::heap::with_heap;
use super::large::{large_alloc, large_free, large_realloc, LARGE_MIN};
use super::mi;
use super::os::{self, FRAME};

/// Largest alignment served from the core arenas (mimalloc's in-page
/// over-allocation limit); larger ones go to the large arena.
pub(crate) const MAX_ARENA_ALIGN: usize = 64 << 10;

/// mimalloc's guaranteed alignment of `mi_heap_malloc`.
pub(crate) const MIN_ALIGN: usize = 16;

/// Largest alignment accepted (1 GiB).
pub const MAX_ALIGN: usize = 1 << 30;

/// `malloc`: a unique non-NULL pointer even for 0 bytes; NULL + ENOMEM on
/// failure.
#[inline(always)]
pub fn malloc(size: usize) -> *mut c_void {
    if size < LARGE_MIN {
        // SAFETY: `h` is a live heap from the heap table.
        with_heap(size, MIN_ALIGN, true, move |h| unsafe {
            mi::mi_heap_malloc(h, size)
        })
    } else {
        large_alloc(size, FRAME, false)
    }
}

/// `calloc`: zeroed; NULL + ENOMEM if `n * size` overflows.
#[inline(always)]
pub fn calloc(n: usize, size: usize) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    if total < LARGE_MIN {
        // SAFETY: `h` is a live heap. mi_heap_zalloc zeroes reused memory
        // (and skips it for memory it knows is fresh and zero).
        with_heap(total, MIN_ALIGN, true, move |h| unsafe {
            mi::mi_heap_zalloc(h, total)
        })
    } else {
        large_alloc(total, FRAME, true)
    }
}

/// An aligned allocation; `align` must be a power of two.
pub fn aligned(size: usize, align: usize, zero: bool) -> *mut c_void {
    debug_assert!(align.is_power_of_two());
    if align <= MIN_ALIGN {
        return if zero { calloc(1, size) } else { malloc(size) };
    }
    if align > MAX_ALIGN {
        os::set_errno(libc::EINVAL);
        return null_mut();
    }
    if size >= LARGE_MIN || align > MAX_ARENA_ALIGN {
        return large_alloc(size, align, zero);
    }
    with_heap(size, align, true, move |h| {
        // SAFETY: `h` is a live heap; `align` is a power of two <= 64 KiB.
        unsafe {
            if zero {
                mi::mi_heap_zalloc_aligned(h, size, align)
            } else {
                mi::mi_heap_malloc_aligned(h, size, align)
            }
        }
    })
}

/// `realloc` with glibc semantics: `realloc(NULL, n)` = `malloc(n)`;
/// `realloc(p, 0)` frees `p` and returns NULL; on failure `p` is intact.
///
/// # Safety
/// `p` is NULL or a live block from this allocator.
pub unsafe fn realloc(p: *mut c_void, n: usize) -> *mut c_void {
    if p.is_null() {
        return malloc(n);
    }
    if n == 0 {
        // SAFETY: caller's guarantee.
        unsafe { free(p) };
        return null_mut();
    }
    if in_boot(p) {
        let old = boot_size(p);
        let q = malloc(n);
        if !q.is_null() {
            // SAFETY: `p` holds `old` bytes, `q` holds n; distinct blocks.
            unsafe { ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(n)) };
        }
        return q;
    }
    if (p as usize) & (FRAME - 1) == 0 {
        if let Some(len) = large_len(p) {
            if n < LARGE_MIN {
                // Small enough for the heaps now: moved there.
                let q = malloc(n);
                if !q.is_null() {
                    // SAFETY: `p` holds `len` >= n bytes, `q` holds n, distinct blocks.
                    unsafe { ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, n) };
                    large_free(p, len);
                }
                return q;
            }
            return large_realloc(p, len, n);
        }
    }
    if n >= LARGE_MIN {
        // SAFETY: `p` is a live mimalloc block.
        let old = unsafe { mi::mi_usable_size(p) };
        let q = large_alloc(n, FRAME, false);
        if !q.is_null() {
            // SAFETY: `p` holds `old` bytes, `q` at least n; distinct.
            unsafe {
                ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(n));
                mi::mi_free(p);
            }
        }
        return q;
    }
    // SAFETY: `h` is a live heap and `p` a live mimalloc block; on failure
    // mi_heap_realloc leaves `p` untouched, so a retry is fine.
    with_heap(n, MIN_ALIGN, false, move |h| unsafe {
        mi::mi_heap_realloc(h, p, n)
    })
}

/// `malloc_usable_size`: 0 for NULL.
///
/// # Safety
/// `p` is NULL or a live block from this allocator.
pub unsafe fn usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    if in_boot(p) {
        return boot_size(p);
    }
    if (p as usize) & (FRAME - 1) == 0 {
        if let Some(len) = large_len(p) {
            return len;
        }
    }
    // SAFETY: a live mimalloc block.
    unsafe { mi::mi_usable_size(p) }
}

/// `posix_memalign`: EINVAL unless `align` is a power of two multiple of
/// `sizeof(void*)`; errno is left alone (the error is returned).
///
/// # Safety
/// `out` is valid for a pointer write.
pub unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || align % core::mem::size_of::<usize>() != 0 {
        return libc::EINVAL;
    }
    let saved = os::errno();
    let p = aligned(size, align, false);
    if p.is_null() {
        let e = os::errno();
        os::set_errno(saved);
        return if e == libc::EINVAL {
            libc::EINVAL
        } else {
            libc::ENOMEM
        };
    }
    // SAFETY: the caller guarantees `out` is writable.
    unsafe { *out = p };
    0
}
