//! Memory shared between processes, used only as atomic words: the
//! cross-process task queue of the process model lives in it.
//!
//! Called by execute's workers (to map the queue file) and by the
//! workloads' task queue (to use it).

use std::io;
use std::sync::atomic::AtomicU64;

/// Words of memory shared between processes (a `MAP_SHARED` mapping of a
/// file, normally in `/dev/shm`), used as atomics: the cross-process task
/// queue of the process model. Each process maps the same file.
pub struct SharedWords {
    ptr: std::ptr::NonNull<AtomicU64>,
    words: usize,
}

// SAFETY: the mapping is only ever accessed through `AtomicU64`, which is
// Sync; the pointer stays valid until Drop unmaps it.
unsafe impl Send for SharedWords {}
// SAFETY: as above.
unsafe impl Sync for SharedWords {}

impl SharedWords {
    /// Map the first `words` u64 words of `file` (which must be at least
    /// that long), shared with every other process mapping it.
    pub fn map(file: &std::fs::File, words: usize) -> io::Result<SharedWords> {
        let len = std::num::NonZeroUsize::new(words.max(1) * 8).expect("non-zero");
        // SAFETY: a fresh mapping chosen by the kernel (no address hint), of
        // a file we hold open; nothing else in this process aliases it.
        let p = unsafe {
            nix::sys::mman::mmap(
                None,
                len,
                nix::sys::mman::ProtFlags::PROT_READ | nix::sys::mman::ProtFlags::PROT_WRITE,
                nix::sys::mman::MapFlags::MAP_SHARED,
                file,
                0,
            )
        }
        .map_err(io::Error::from)?;
        Ok(SharedWords {
            ptr: p.cast(),
            words: words.max(1),
        })
    }

    /// Word `i` as an atomic. Panics past the mapped words.
    pub fn word(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.words, "shared word {i} of {}", self.words);
        // SAFETY: in bounds (checked above), 8-byte aligned (page-aligned
        // base), valid for the lifetime of `self`, and only accessed
        // atomically by every process that maps it.
        unsafe { &*self.ptr.as_ptr().add(i) }
    }
}

impl Drop for SharedWords {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the region `map` created; no reference
        // from `word` can outlive `self`.
        let _ = unsafe { nix::sys::mman::munmap(self.ptr.cast(), self.words * 8) };
    }
}
