//! Raw system calls for an allocator: nothing here allocates through
//! `malloc` (smtalloc *is* malloc when preloaded), so files are read with
//! `open`/`read` into caller buffers and the environment with `getenv`.
//!
//! Used by every file of `sys` that needs the OS (the crate root re-exports
//! `page_size`, `keep_errno` and `set_errno` in `raw`); calls nothing of
//! smtalloc.
#![allow(unsafe_code)]

use core::ffi::{c_int, CStr};
use core::ptr::{self, NonNull};

/// 2 MiB: the huge-page size on x86-64 and arm64 (4 KiB base pages), and
/// the unit in which smtalloc hands memory to cores and back to the OS.
pub const FRAME: usize = 2 << 20;

extern "C" {
    /// From `csrc/rseq.c`: glibc's `__rseq_offset` if glibc registered an
    /// rseq area per thread (`__rseq_size != 0`), through weak references.
    fn smtalloc_rseq_offset(offset: *mut isize) -> c_int;
    /// From `csrc/thread_area.c`: the calling thread's initial-exec
    /// thread-local area and its size.
    fn smtalloc_thread_area(len: *mut usize) -> *mut u8;
}

/// The offset of smtalloc's thread-local area (`csrc/thread_area.c`)
/// from the thread pointer, and its size: the offset is the same in every
/// thread (initial-exec TLS), so the area is found like the rseq area.
/// `None` where the thread pointer cannot be read.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn thread_area_offset() -> Option<(isize, usize)> {
    let mut len = 0usize;
    // SAFETY: the C function takes its thread-local's address and writes
    // its size through the valid pointer given.
    let area = unsafe { smtalloc_thread_area(&mut len) } as isize;
    Some((area.wrapping_sub(thread_pointer() as isize), len))
}

/// No thread area without a thread-pointer read.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn thread_area_offset() -> Option<(isize, usize)> {
    None
}

/// The calling thread's area at `offset` (from [`thread_area_offset`]).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn thread_area(offset: isize) -> *mut u8 {
    (thread_pointer() as isize).wrapping_add(offset) as *mut u8
}

/// Never called where [`thread_area_offset`] is `None`.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn thread_area(_offset: isize) -> *mut u8 {
    core::ptr::null_mut()
}

/// `pthread_key_create` with a destructor run at each thread's exit for a
/// non-NULL value; `None` if no key is left.
pub fn key_create(destructor: unsafe extern "C" fn(*mut core::ffi::c_void)) -> Option<u32> {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; the destructor lives as long
    // as the process (this library is never unloaded).
    let rc = unsafe { libc::pthread_key_create(&mut key, Some(destructor)) };
    (rc == 0).then_some(key)
}

/// `pthread_setspecific(key, value)`: makes the key's destructor run at
/// this thread's exit. glibc stores the first 32 keys' values in the
/// thread descriptor without allocating; a later key may allocate, which
/// re-enters `malloc`, harmless on the paths that call this.
pub fn set_specific(key: u32, value: usize) -> bool {
    // SAFETY: any value may be stored; it is only passed back to the
    // destructor.
    unsafe { libc::pthread_setspecific(key, value as *const core::ffi::c_void) == 0 }
}

/// The offset of this process's per-thread `struct rseq` from the thread
/// pointer, if glibc (>= 2.35) registered one. smtalloc never registers its
/// own: a thread may have only one rseq area and glibc owns it.
pub fn rseq_offset() -> Option<isize> {
    let mut off: isize = 0;
    // SAFETY: the C function only writes through the valid pointer given.
    let ok = unsafe { smtalloc_rseq_offset(&mut off) };
    (ok != 0).then_some(off)
}

/// The calling thread's thread pointer (what glibc's `__rseq_offset` is
/// relative to).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: on x86-64 glibc, %fs:0 holds the TCB's pointer to itself
    // (the thread pointer); reading it has no side effects.
    unsafe {
        core::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    tp
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn thread_pointer() -> usize {
    let tp: usize;
    // SAFETY: reading TPIDR_EL0 (the thread pointer) has no side effects.
    unsafe {
        core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
    };
    tp
}

/// The CPU the calling thread runs on, from the `cpu_id` field (u32 at
/// offset 4) of glibc's rseq area: one load, kept current by the kernel.
/// Values >= 0xffff_fffe mean "not registered" for this thread.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[inline(always)]
pub fn rseq_cpu(offset: isize) -> u32 {
    let addr = (thread_pointer() as isize)
        .wrapping_add(offset)
        .wrapping_add(4);
    // SAFETY: `offset` came from glibc's `__rseq_offset`, so thread pointer
    // + offset is this thread's registered `struct rseq`, alive as long as
    // the thread; cpu_id is an aligned u32 at offset 4 that the kernel
    // updates (hence volatile).
    unsafe { ptr::read_volatile(addr as *const u32) }
}

/// Architectures without a known thread-pointer read use `sched_getcpu`.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
pub fn rseq_cpu(_offset: isize) -> u32 {
    u32::MAX
}

/// Whether [`rseq_cpu`] works on this architecture.
pub const RSEQ_SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// `sched_getcpu()` (vDSO on x86-64), for when rseq is unavailable.
pub fn sched_getcpu() -> Option<usize> {
    // SAFETY: no arguments, no memory touched.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

/// Copies the value of environment variable `name` into `buf` (truncated to
/// its length); `None` if unset.
pub fn getenv_into(name: &CStr, buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `name` is NUL-terminated; getenv neither allocates nor keeps
    // the pointer.
    let v = unsafe { libc::getenv(name.as_ptr()) };
    if v.is_null() {
        return None;
    }
    // SAFETY: getenv returned a valid NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(v) }.to_bytes();
    let n = bytes.len().min(buf.len());
    buf[..n].copy_from_slice(&bytes[..n]);
    Some(n)
}

/// A file descriptor closed on drop.
struct Fd(c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor.
        unsafe { libc::close(self.0) };
    }
}

fn open_read(path: &CStr) -> Option<Fd> {
    // SAFETY: NUL-terminated path; O_CLOEXEC so a fork+exec never inherits it.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    (fd >= 0).then_some(Fd(fd))
}

fn read_some(fd: &Fd, buf: &mut [u8]) -> Option<usize> {
    loop {
        // SAFETY: `buf` is valid for writes of its length.
        let n = unsafe { libc::read(fd.0, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Some(n as usize);
        }
        if errno() != libc::EINTR {
            return None;
        }
    }
}

/// Reads up to `buf.len()` bytes of a (small, e.g. sysfs) file.
pub fn read_file(path: &CStr, buf: &mut [u8]) -> Option<usize> {
    let fd = open_read(path)?;
    let mut len = 0;
    while len < buf.len() {
        match read_some(&fd, &mut buf[len..])? {
            0 => break,
            n => len += n,
        }
    }
    Some(len)
}

/// Streams a file through `buf`, calling `line` for each complete line
/// (without its newline). Lines longer than `buf` are skipped. Used for
/// /proc/self/smaps, which can be megabytes.
pub fn for_each_line(path: &CStr, buf: &mut [u8], mut line: impl FnMut(&[u8])) -> bool {
    let Some(fd) = open_read(path) else {
        return false;
    };
    let mut have = 0;
    let mut skipping = false;
    loop {
        let Some(n) = read_some(&fd, &mut buf[have..]) else {
            return false;
        };
        if n == 0 {
            if have > 0 && !skipping {
                line(&buf[..have]);
            }
            return true;
        }
        have += n;
        let mut start = 0;
        while let Some(nl) = buf[start..have].iter().position(|&b| b == b'\n') {
            if !skipping {
                line(&buf[start..start + nl]);
            }
            skipping = false;
            start += nl + 1;
        }
        buf.copy_within(start..have, 0);
        have -= start;
        if have == buf.len() {
            // A line longer than the buffer: drop it.
            have = 0;
            skipping = true;
        }
    }
}

/// Writes all of `bytes` to stderr (fd 2), ignoring errors.
pub fn write_stderr(bytes: &[u8]) {
    let mut rest = bytes;
    while !rest.is_empty() {
        // SAFETY: `rest` is valid for reads of its length.
        let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
        rest = &rest[n as usize..];
    }
}

/// The calling thread's `errno`.
#[inline]
pub fn errno() -> c_int {
    // SAFETY: __errno_location always returns this thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's `errno`.
#[inline]
pub fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e };
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(ps).unwrap_or(4096).max(4096)
}

/// Preserves `errno` across `f` (glibc's `free` does).
#[inline(always)]
pub fn keep_errno<T>(f: impl FnOnce() -> T) -> T {
    let e = errno();
    let r = f();
    set_errno(e);
    r
}

/// Gives the CPU to another thread (a spin lock's holder may be a
/// preempted thread on this CPU).
pub fn yield_now() {
    // SAFETY: sched_yield has no memory effects.
    unsafe { libc::sched_yield() };
}

/// An anonymous private mapping of `len` bytes aligned to `align` (a power
/// of two >= 4 KiB), made by over-mapping and unmapping the excess.
pub fn mmap_aligned(len: usize, align: usize, noreserve: bool) -> Option<NonNull<u8>> {
    let over = len.checked_add(align)?;
    let flags =
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | if noreserve { libc::MAP_NORESERVE } else { 0 };
    // SAFETY: a fresh anonymous mapping; no existing memory is affected.
    let raw = unsafe {
        libc::mmap(
            ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let raw = raw as usize;
    let start = (raw + align - 1) & !(align - 1);
    if start > raw {
        munmap(raw, start - raw);
    }
    let end = start + len;
    if raw + over > end {
        munmap(end, raw + over - end);
    }
    NonNull::new(start as *mut u8)
}

/// Unmaps `[addr, addr+len)`, which must be memory smtalloc mapped and no
/// longer hands out.
pub fn munmap(addr: usize, len: usize) {
    // SAFETY: callers pass whole ranges of their own mappings that hold no
    // live allocation.
    unsafe { libc::munmap(addr as *mut libc::c_void, len) };
}

/// `madvise(MADV_HUGEPAGE)`: with THP in `madvise` mode, faults in this
/// range then map whole 2 MiB pages.
pub fn madvise_hugepage(addr: usize, len: usize) {
    // SAFETY: advice only; the range is one of our mappings.
    unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
}

/// `madvise(MADV_DONTNEED)`: gives the pages of `[addr, addr+len)` back to
/// the kernel at once (the range reads as zeros afterwards). Not
/// `MADV_FREE`: freed-lazily pages still count in RSS until the kernel is
/// short of memory, and RSS is what the purge is for.
pub fn madvise_dontneed(addr: usize, len: usize) {
    // SAFETY: callers pass ranges of their own mappings that hold no live
    // allocation (mimalloc purges only free slices).
    unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED) };
}

/// `madvise(MADV_NOHUGEPAGE)` (for sparse tables).
pub fn madvise_nohugepage(addr: usize, len: usize) {
    // SAFETY: advice only; the range is one of our mappings.
    unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) };
}

/// Whether any 4 KiB page of the 2 MiB frame at `addr` is resident
/// (`mincore`); true if that cannot be told.
pub fn frame_touched(addr: usize) -> bool {
    let mut vec = [0u8; FRAME / 4096];
    // SAFETY: `vec` has one byte per 4 KiB page of the frame (mincore
    // writes one per page of the system page size, which is >= 4 KiB, so
    // at most this many); the frame is one of our mappings.
    let r = unsafe { libc::mincore(addr as *mut libc::c_void, FRAME, vec.as_mut_ptr()) };
    r != 0 || vec.iter().any(|b| b & 1 != 0)
}

/// `madvise(MADV_COLLAPSE)` (Linux 6.1+): synchronously replace the 4 KiB
/// pages of `[addr, addr+len)` (whole 2 MiB frames) by huge pages, copying
/// what is resident, safe while other threads use the memory. Best effort:
/// false on older kernels or when no huge page is available (then
/// khugepaged collapses the range later if it is `MADV_HUGEPAGE`-advised).
pub fn madvise_collapse(addr: usize, len: usize) -> bool {
    const MADV_COLLAPSE: c_int = 25;
    // SAFETY: the range is one of our mappings; collapsing keeps contents.
    unsafe { libc::madvise(addr as *mut libc::c_void, len, MADV_COLLAPSE) == 0 }
}

/// Names an anonymous range (`[anon:NAME]` in /proc/PID/maps, Linux 5.17+
/// with CONFIG_ANON_VMA_NAME). Best effort: it also keeps the kernel from
/// merging two cores' adjacent arenas into one VMA, so per-core smaps
/// accounting is exact where supported.
pub fn name_range(addr: usize, len: usize, name: &CStr) {
    const PR_SET_VMA: c_int = 0x53564d41;
    const PR_SET_VMA_ANON_NAME: libc::c_ulong = 0;
    // SAFETY: prctl only reads the NUL-terminated name (copied by the kernel).
    unsafe {
        libc::prctl(
            PR_SET_VMA,
            PR_SET_VMA_ANON_NAME,
            addr as libc::c_ulong,
            len as libc::c_ulong,
            name.as_ptr() as libc::c_ulong,
        )
    };
}

/// Grows or moves the mapping at `old` (`old_len` bytes) to `new_len`
/// bytes at `new` (a reserved, aligned range of `new_len` bytes that this
/// call replaces). Page tables move, data is not copied.
pub fn mremap_to(old: usize, old_len: usize, new: usize, new_len: usize) -> bool {
    // SAFETY: `old` is a whole mapping of ours holding one live block the
    // caller is moving; `new` is a reservation of ours that MREMAP_FIXED
    // replaces atomically.
    let r = unsafe {
        libc::mremap(
            old as *mut libc::c_void,
            old_len,
            new_len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            new as *mut libc::c_void,
        )
    };
    r as usize == new
}

/// Grows the mapping at `addr` in place (fails if the next pages are taken).
pub fn mremap_in_place(addr: usize, old_len: usize, new_len: usize) -> bool {
    // SAFETY: no MAYMOVE: either the mapping grows where it is or nothing
    // changes.
    let r = unsafe { libc::mremap(addr as *mut libc::c_void, old_len, new_len, 0) };
    r as usize == addr
}

/// Registers fork handlers (`fork.rs`, at init).
pub fn atfork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    // SAFETY: the handlers are plain functions that live for the whole
    // process (this library is never unloaded while running: it is either
    // preloaded or statically linked).
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}
