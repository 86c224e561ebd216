//! The bootstrap buffer: serves the requests made while smtalloc
//! initializes (glibc's `dlsym` and `pthread_atfork` allocate; another
//! thread may race the first call). Its blocks are never reused: `free` of
//! one is a no-op, `realloc` copies it out.
//!
//! Used by the allocation slow paths (`heap`, `large`) until `init` has
//! finished, and by `alloc` and `free` to recognise its blocks.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::{self, null_mut};
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use super::os;

/// Bootstrap buffer size: serves requests made while smtalloc initializes
/// (glibc's `dlsym`/`pthread_atfork` allocate) and never reused.
pub(crate) const BOOT_SIZE: usize = 256 << 10;

#[repr(C, align(4096))]
struct BootBuf(UnsafeCell<[u8; BOOT_SIZE]>);

// SAFETY: disjoint parts of the buffer are handed out by an atomic bump
// pointer; each part is then owned by its caller.
unsafe impl Sync for BootBuf {}

static BOOT: BootBuf = BootBuf(UnsafeCell::new([0; BOOT_SIZE]));

static BOOT_USED: AtomicUsize = AtomicUsize::new(0);

/// Blocks are aligned to at least this (what `malloc` guarantees).
const MIN_ALIGN: usize = 16;

#[inline(always)]
pub(crate) fn boot_base() -> usize {
    BOOT.0.get() as usize
}

#[inline(always)]
pub(crate) fn in_boot(p: *mut c_void) -> bool {
    (p as usize).wrapping_sub(boot_base()) < BOOT_SIZE
}

/// Size header (one usize) right before each bootstrap block.
pub(crate) fn boot_alloc(size: usize, align: usize) -> *mut c_void {
    let align = align.clamp(MIN_ALIGN, 4096);
    let base = boot_base();
    let mut used = BOOT_USED.load(Relaxed);
    loop {
        let user = (base + used + MIN_ALIGN + align - 1) & !(align - 1);
        let Some(end) = user.checked_add(size.max(1)) else {
            break;
        };
        if end - base > BOOT_SIZE {
            break;
        }
        match BOOT_USED.compare_exchange_weak(used, end - base, Relaxed, Relaxed) {
            Ok(_) => {
                // SAFETY: [user-8, end) lies inside BOOT and was just
                // reserved by this call alone.
                unsafe { ptr::write((user - 8) as *mut usize, size) };
                return user as *mut c_void;
            }
            Err(u) => used = u,
        }
    }
    os::set_errno(libc::ENOMEM);
    null_mut()
}

pub(crate) fn boot_size(p: *mut c_void) -> usize {
    // SAFETY: `p` is a bootstrap block (checked by the caller), whose size
    // header precedes it.
    unsafe { ptr::read((p as usize - 8) as *const usize) }
}
