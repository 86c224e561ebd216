//! Signal-driven I/O for the software DSM's `sigio` mechanism: a socket
//! that raises a signal at this thread when a datagram arrives (`O_ASYNC`,
//! `F_SETOWN_EX` to the thread, `F_SETSIG`), the handler for it, a periodic
//! timer raising the same signal at the same thread (retransmissions and
//! delayed acknowledgements while the computation runs), and the mask
//! operations the computing thread uses to keep the handler out of its own
//! use of the DSM's state and to sleep until the handler has run.
//!
//! Called by smtlab-dsm.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal};

/// The signal smtlab's `sigio` mechanism uses: SIGIO itself. A standard
/// signal does not queue: however many datagrams arrive while it is
/// pending, the handler runs once and drains the socket, rather than once
/// per datagram.
pub const IO_SIGNAL: Signal = Signal::SIGIO;

// Linux's values (asm-generic/fcntl.h, the same on every architecture);
// the libc crate does not export them for glibc targets.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

/// `struct f_owner_ex`.
#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

static IO_FN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_io(_: libc::c_int) {
    let f = IO_FN.load(Ordering::Acquire);
    if f != 0 {
        let saved = nix::errno::Errno::last_raw();
        // SAFETY: IO_FN only holds a `fn()` stored by `install_io_handler`.
        let f: fn() = unsafe { std::mem::transmute::<usize, fn()>(f) };
        f();
        // The interrupted code may be between a call and its errno check.
        nix::errno::Errno::set_raw(saved);
    }
}

/// Run `f` on [`IO_SIGNAL`]. `f` must be async-signal-safe: no allocation,
/// no lock the interrupted thread may hold.
pub fn install_io_handler(f: fn()) -> io::Result<()> {
    IO_FN.store(f as usize, Ordering::Release);
    let action = SigAction::new(
        SigHandler::Handler(on_io),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler calls `f`, which the caller wrote for a signal
    // context, and keeps errno.
    unsafe { signal::sigaction(IO_SIGNAL, &action) }
        .map(|_| ())
        .map_err(io::Error::from)
}

/// Ignore [`IO_SIGNAL`] again and forget the handler.
pub fn remove_io_handler() {
    // SAFETY: ignoring the signal; a late one (a datagram after the end)
    // must not kill the process, as SIGIO's default action would.
    let _ = unsafe { signal::signal(IO_SIGNAL, SigHandler::SigIgn) };
    IO_FN.store(0, Ordering::Release);
}

/// Make `fd` raise [`IO_SIGNAL`] at the calling thread whenever input
/// arrives (and make it non-blocking).
pub fn own_async_io(fd: RawFd) -> io::Result<()> {
    let tid = nix::unistd::gettid().as_raw();
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: fcntl on a descriptor the caller owns, with a valid
    // f_owner_ex that outlives the call.
    let r = unsafe { libc::fcntl(fd, F_SETOWN_EX, &owner) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; F_SETSIG takes the signal number.
    if unsafe { libc::fcntl(fd, F_SETSIG, IO_SIGNAL as libc::c_int) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_ASYNC | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Stop `fd` raising the signal.
pub fn disown_async_io(fd: RawFd) {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_ASYNC);
        }
    }
}

/// Block [`IO_SIGNAL`] on this thread (the handler cannot run until
/// [`unblock_io_signal`]).
pub fn block_io_signal() {
    let mut set = SigSet::empty();
    set.add(IO_SIGNAL);
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None);
}

pub fn unblock_io_signal() {
    let mut set = SigSet::empty();
    set.add(IO_SIGNAL);
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
}

/// With [`IO_SIGNAL`] blocked: unblock it and sleep until a signal has
/// been handled, atomically (no wake-up lost between a check and the
/// sleep), then block it again.
pub fn suspend_for_io_signal() {
    let mut current = SigSet::empty();
    let _ = signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, None, Some(&mut current));
    current.remove(IO_SIGNAL);
    // sigsuspend always returns EINTR after a handler ran.
    let _ = current.suspend();
}

/// A periodic timer raising [`IO_SIGNAL`] at the thread that made it;
/// deleted on drop.
pub struct IoTimer {
    id: libc::timer_t,
}

impl IoTimer {
    pub fn start(period: Duration) -> io::Result<IoTimer> {
        // SAFETY: sigevent is plain data; zero is a valid start.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = IO_SIGNAL as libc::c_int;
        sev.sigev_notify_thread_id = nix::unistd::gettid().as_raw();
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: valid pointers to a sigevent and a timer id that live
        // through the call.
        if unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let ts = libc::timespec {
            tv_sec: period.as_secs() as libc::time_t,
            tv_nsec: period.subsec_nanos() as libc::c_long,
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: a timer we just created, and a valid itimerspec.
        if unsafe { libc::timer_settime(id, 0, &spec, std::ptr::null_mut()) } < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: deleting the timer we created.
            unsafe { libc::timer_delete(id) };
            return Err(e);
        }
        Ok(IoTimer { id })
    }
}

impl Drop for IoTimer {
    fn drop(&mut self) {
        // SAFETY: deleting the timer `start` created, once.
        unsafe { libc::timer_delete(self.id) };
    }
}

// SAFETY: a timer id is a plain handle, usable from any thread.
unsafe impl Send for IoTimer {}

/// CPU time of the calling thread, seconds (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_s() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(f64::NAN)
}
