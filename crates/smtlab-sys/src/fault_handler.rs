//! The software DSM's page-fault handler: SIGSEGV, with the faulting
//! address, passed to the DSM. A fault the DSM does not own (outside its
//! region, or a page it cannot serve) restores the default action and
//! returns, so the access faults again and the process dies as it would
//! have without us — with a core and the right signal, never a hang.
//!
//! Called by smtlab-dsm.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The DSM's handler: serves a fault at this address, or says it is not
/// its own (`false`).
pub type FaultFn = fn(usize) -> bool;

static FAULT_FN: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_segv(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: for an SA_SIGINFO handler the kernel passes a valid siginfo_t
    // for the duration of the call; si_addr is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    let f = FAULT_FN.load(Ordering::Acquire);
    let served = f != 0 && {
        // SAFETY: FAULT_FN only ever holds a `FaultFn` stored by
        // `install_fault_handler`.
        let f: FaultFn = unsafe { std::mem::transmute::<usize, FaultFn>(f) };
        f(addr)
    };
    if !served {
        // SAFETY: resetting SIGSEGV to its default action is
        // async-signal-safe; returning re-executes the access, which then
        // kills the process as an ordinary segmentation fault.
        let _ = unsafe { signal::signal(Signal::SIGSEGV, SigHandler::SigDfl) };
    }
}

/// Route this process's SIGSEGV to `f`. Signals in `mask` stay blocked
/// while the handler runs (none: the DSM's own I/O signal must still reach
/// the thread while its fault waits for a page).
pub fn install_fault_handler(f: FaultFn) -> io::Result<()> {
    FAULT_FN.store(f as usize, Ordering::Release);
    let action = SigAction::new(
        SigHandler::SigAction(on_segv),
        SaFlags::SA_SIGINFO | SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler only loads an atomic and calls the DSM's
    // function, which is written for this context (it runs on the
    // faulting thread, interrupted in application code).
    unsafe { signal::sigaction(Signal::SIGSEGV, &action) }
        .map(|_| ())
        .map_err(io::Error::from)
}

/// Stop routing SIGSEGV to the DSM (default action again).
pub fn remove_fault_handler() {
    FAULT_FN.store(0, Ordering::Release);
    // SAFETY: restoring the default action.
    let _ = unsafe { signal::signal(Signal::SIGSEGV, SigHandler::SigDfl) };
}
