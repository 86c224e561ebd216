//! Signal handling in smtlab itself: forwarding termination signals to the
//! child it supervises, turning Ctrl-C into a clean stop of a run, and
//! keeping Ctrl-C away from workers. Each handler is async-signal-safe: it
//! touches atomics and makes system calls, nothing else.
//!
//! Called by execute (forwarding around a user command or `smtlab pin`,
//! [`ignore_sigint`] in workers) and by the CLI's `run` (the interrupt
//! flag); `child.rs` resets [`FORWARDED_SIGNALS`] in every child.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;

/// Signals that [`SignalForwarding`] passes on to the child.
pub const FORWARDED_SIGNALS: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

static FORWARD_TO: AtomicI32 = AtomicI32::new(0);
static PENDING: AtomicI32 = AtomicI32::new(0);
static FORWARDING: AtomicBool = AtomicBool::new(false);

extern "C" fn forward_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let code = if info.is_null() {
        libc::SI_USER
    } else {
        // SAFETY: for an SA_SIGINFO handler the kernel passes a valid
        // siginfo_t that lives for the duration of the call.
        unsafe { (*info).si_code }
    };
    // Sent by the terminal (Ctrl-C, Ctrl-\, hangup): it went to the whole
    // foreground process group, the child included; sending it again would
    // deliver it twice.
    if code == libc::SI_KERNEL {
        return;
    }
    let pid = FORWARD_TO.load(Ordering::SeqCst);
    if pid > 0 {
        if let Ok(s) = Signal::try_from(sig) {
            let _ = signal::kill(Pid::from_raw(pid), s);
        }
    } else {
        PENDING.store(sig, Ordering::SeqCst);
    }
}

/// While alive, SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to smtlab (by `kill`,
/// `timeout`, a batch system) are forwarded to the child, and smtlab itself
/// keeps running so it can report. Signals from the terminal (Ctrl-C) reach
/// the child directly, since it stays in smtlab's foreground process group
/// (so it can still read the terminal), and are not sent twice. Dropping
/// restores the previous handlers. One at a time per process.
pub struct SignalForwarding {
    previous: Vec<(Signal, SigAction)>,
}

impl SignalForwarding {
    pub fn install() -> io::Result<Self> {
        if FORWARDING.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "signal forwarding is already installed",
            ));
        }
        FORWARD_TO.store(0, Ordering::SeqCst);
        PENDING.store(0, Ordering::SeqCst);
        let act = SigAction::new(
            SigHandler::SigAction(forward_signal),
            SaFlags::SA_SIGINFO | SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        let mut me = SignalForwarding {
            previous: Vec::new(),
        };
        for s in FORWARDED_SIGNALS {
            // SAFETY: `forward_signal` is async-signal-safe: it only reads
            // and writes atomics and calls kill(2).
            let old = unsafe { signal::sigaction(s, &act) }.map_err(io::Error::from)?;
            me.previous.push((s, old));
        }
        Ok(me)
    }

    /// Forward from now on to `pid` (and deliver a signal that arrived
    /// before the child existed).
    pub fn set_child(&self, pid: i32) {
        FORWARD_TO.store(pid, Ordering::SeqCst);
        let p = PENDING.swap(0, Ordering::SeqCst);
        if p != 0 {
            if let Ok(s) = Signal::try_from(p) {
                let _ = signal::kill(Pid::from_raw(pid), s);
            }
        }
    }

    /// Stop forwarding (call before reaping the child, so a recycled pid is
    /// never signalled). The handlers stay installed until drop.
    pub fn clear_child(&self) {
        FORWARD_TO.store(0, Ordering::SeqCst);
    }

    /// The last signal received while no child was set, if any.
    pub fn pending(&self) -> Option<i32> {
        match PENDING.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for SignalForwarding {
    fn drop(&mut self) {
        FORWARD_TO.store(0, Ordering::SeqCst);
        for (s, old) in self.previous.drain(..).rev() {
            // SAFETY: re-installing the action that was in place before.
            let _ = unsafe { signal::sigaction(s, &old) };
        }
        FORWARDING.store(false, Ordering::SeqCst);
    }
}

/// Ignore SIGINT in a worker: Ctrl-C reaches the whole foreground process
/// group, and it is smtlab, not the worker, that decides how to stop.
pub fn ignore_sigint() -> io::Result<()> {
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    // SAFETY: installing SIG_IGN cannot violate any handler invariant.
    unsafe { signal::sigaction(Signal::SIGINT, &ignore) }.map_err(io::Error::from)?;
    Ok(())
}

/// The signal one thread sends another to wake it from `ppoll`
/// ([`install_wake_handler`]). `SIGURG`: ignored by default, so one that
/// arrives before the handler is installed, or in a child, does nothing.
pub const WAKE_SIGNAL: Signal = Signal::SIGURG;

extern "C" fn on_wake(_: libc::c_int) {}

/// Installs a handler that does nothing for [`WAKE_SIGNAL`], without
/// `SA_RESTART`. A thread that keeps the signal blocked and unblocks it
/// only inside `ppoll` (its mask argument) returns from `ppoll` with
/// `EINTR` when another thread sends it (`pthread_kill`), and cannot miss
/// one sent before it got there: that one stays pending until `ppoll`
/// unblocks it. (An ignored signal would be discarded, not interrupt.)
pub fn install_wake_handler() -> io::Result<()> {
    let act = SigAction::new(
        SigHandler::Handler(on_wake),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: `on_wake` does nothing, which is async-signal-safe.
    unsafe { signal::sigaction(WAKE_SIGNAL, &act) }.map_err(io::Error::from)?;
    Ok(())
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal that interrupted the run (0: none yet).
static INTERRUPTED_BY: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    // Async-signal-safe: atomic stores, and (on the second Ctrl-C) restore
    // the default action so a third one kills smtlab outright.
    let _ = INTERRUPTED_BY.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: signal(2) with SIG_DFL is async-signal-safe.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
}

/// Make SIGINT and SIGTERM set a flag instead of killing smtlab, so a run
/// can stop cleanly: the current sample's workers are killed, everything
/// measured stays committed, the run is marked interrupted. Returns the flag.
pub fn interrupt_flag() -> io::Result<&'static AtomicBool> {
    let act = SigAction::new(
        SigHandler::Handler(on_interrupt),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for s in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: `on_interrupt` only touches an atomic and calls signal(2),
        // both async-signal-safe.
        unsafe { signal::sigaction(s, &act) }.map_err(io::Error::from)?;
    }
    Ok(&INTERRUPTED)
}

/// The exit code of a run stopped by a signal: 128 + its number, as a
/// shell reports a process killed by it (130 for Ctrl-C, 143 for SIGTERM);
/// 130 if the stop did not come from a signal.
pub fn interrupted_exit_code() -> i32 {
    match INTERRUPTED_BY.load(Ordering::SeqCst) {
        0 => 128 + libc::SIGINT,
        sig => 128 + sig,
    }
}

/// A signal's name (`SIGSEGV`), or its number where it has none: how a
/// killed child is named in every reason smtlab stores.
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig).map_or(sig.to_string(), |s| s.as_str().to_string())
}
