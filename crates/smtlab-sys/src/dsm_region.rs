//! The shared region of a software DSM, mapped twice: the **application's
//! view**, whose pages the DSM protects (`mprotect`) so that an access to a
//! page it does not hold, or a first write, faults; and the **DSM's view**
//! of the same memory (a `memfd` mapped twice), always readable and
//! writable, through which the DSM installs fetched pages, reads home pages
//! for other ranks and applies their diffs — without ever opening the
//! application's view (a serving thread that unprotected a page, even for a
//! moment, would let the application write it unnoticed).
//!
//! Both views are only ever touched as `AtomicU64` words: the application's
//! loads and stores race with the DSM's copies by design (scope consistency
//! makes a racy page the application's bug, not memory corruption), and
//! atomics keep that defined.
//!
//! Called by smtlab-dsm.

use std::io;
use std::num::NonZeroUsize;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

use nix::sys::mman::{mmap, mprotect, munmap, MapFlags, ProtFlags};

/// Bytes of a DSM page (the machine's base page).
pub const DSM_PAGE: usize = 4096;

/// What the application may do with a page of its view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageAccess {
    None,
    Read,
    ReadWrite,
}

/// A DSM region: `pages` pages, zeroed, mapped twice.
pub struct DsmRegion {
    app: NonNull<AtomicU64>,
    dsm: NonNull<AtomicU64>,
    pages: usize,
    _fd: OwnedFd,
}

// SAFETY: both views are only accessed through `AtomicU64` (Sync), and the
// mappings stay valid until Drop unmaps them.
unsafe impl Send for DsmRegion {}
// SAFETY: as above.
unsafe impl Sync for DsmRegion {}

impl DsmRegion {
    /// Map `pages` zeroed pages; the application's view starts with no
    /// access at all.
    pub fn new(pages: usize) -> io::Result<DsmRegion> {
        let len = NonZeroUsize::new(pages.max(1) * DSM_PAGE).expect("non-zero");
        let fd = nix::sys::memfd::memfd_create(
            c"smtlab-dsm",
            nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC,
        )
        .map_err(io::Error::from)?;
        nix::unistd::ftruncate(&fd, len.get() as i64).map_err(io::Error::from)?;
        let map = |prot| {
            // SAFETY: a fresh shared mapping of our own memfd, at an
            // address the kernel chooses; nothing aliases it but the other
            // view, and both are used only as atomics.
            unsafe { mmap(None, len, prot, MapFlags::MAP_SHARED, &fd, 0) }
                .map(|p| p.cast::<AtomicU64>())
                .map_err(io::Error::from)
        };
        let app = map(ProtFlags::PROT_NONE)?;
        let dsm = match map(ProtFlags::PROT_READ | ProtFlags::PROT_WRITE) {
            Ok(d) => d,
            Err(e) => {
                // SAFETY: unmapping the view just mapped, never handed out.
                let _ = unsafe { munmap(app.cast(), len.get()) };
                return Err(e);
            }
        };
        Ok(DsmRegion {
            app,
            dsm,
            pages: pages.max(1),
            _fd: fd,
        })
    }

    pub fn pages(&self) -> usize {
        self.pages
    }

    fn words(&self) -> usize {
        self.pages * DSM_PAGE / 8
    }

    /// The application's view: faults where the DSM has not granted access.
    pub fn app_words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping holds `words()` aligned u64 words and lives
        // as long as `self`; AtomicU64 has u64's layout.
        unsafe { std::slice::from_raw_parts(self.app.as_ptr(), self.words()) }
    }

    /// The DSM's view of the same memory: never faults.
    pub fn dsm_words(&self) -> &[AtomicU64] {
        // SAFETY: as for `app_words`, on the always-accessible view.
        unsafe { std::slice::from_raw_parts(self.dsm.as_ptr(), self.words()) }
    }

    /// The address range of the application's view, to tell whether a
    /// fault is the DSM's.
    pub fn app_range(&self) -> std::ops::Range<usize> {
        let base = self.app.as_ptr() as usize;
        base..base + self.pages * DSM_PAGE
    }

    /// Set what the application may do with `count` pages from `first`.
    pub fn protect(&self, first: usize, count: usize, access: PageAccess) -> io::Result<()> {
        assert!(
            first + count <= self.pages,
            "pages {first}+{count} of {}",
            self.pages
        );
        let prot = match access {
            PageAccess::None => ProtFlags::PROT_NONE,
            PageAccess::Read => ProtFlags::PROT_READ,
            PageAccess::ReadWrite => ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
        };
        // SAFETY: within our own mapping (checked above); changing its
        // protection cannot invalidate a Rust reference, since the view is
        // only accessed as atomics whose faults the DSM serves.
        unsafe {
            mprotect(
                self.app.cast().byte_add(first * DSM_PAGE),
                count * DSM_PAGE,
                prot,
            )
        }
        .map_err(io::Error::from)
    }
}

impl Drop for DsmRegion {
    fn drop(&mut self) {
        let len = self.pages * DSM_PAGE;
        // SAFETY: unmapping exactly the two views `new` created; no slice
        // from `app_words`/`dsm_words` outlives `self`.
        unsafe {
            let _ = munmap(self.app.cast(), len);
            let _ = munmap(self.dsm.cast(), len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn the_two_views_are_one_memory_and_only_the_app_view_is_protected() {
        let r = DsmRegion::new(2).unwrap();
        r.dsm_words()[1].store(7, Ordering::Relaxed);
        r.protect(0, 1, PageAccess::Read).unwrap();
        assert_eq!(r.app_words()[1].load(Ordering::Relaxed), 7);
        r.protect(0, 2, PageAccess::ReadWrite).unwrap();
        r.app_words()[512].store(9, Ordering::Relaxed);
        assert_eq!(r.dsm_words()[512].load(Ordering::Relaxed), 9);
        assert_eq!(r.app_range().len(), 2 * DSM_PAGE);
    }
}
