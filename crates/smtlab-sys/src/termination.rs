//! A process's last act when it is told to stop: a launcher (`mpirun`
//! aborting a job whose rank failed, `srun`, Ctrl-C) sends SIGTERM or
//! SIGINT and, a moment later, SIGKILL. A thread waits for those signals
//! (blocked everywhere else, so the default action never runs) and calls
//! the caller's function, which tidies up and exits.
//!
//! Called by the CLI's `smtlab rank`, whose rank then leaves the
//! rendezvous. No `unsafe`: the mask and `sigwait` through nix.

use std::io;

use nix::sys::signal::{SigSet, Signal};

/// The signals that ask a process to stop.
const STOP_SIGNALS: [Signal; 3] = [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP];

/// From now on, SIGTERM, SIGINT and SIGHUP run `last` (with the signal's
/// number) on a thread of their own instead of ending the process; `last`
/// should end it. Call it before any other thread starts: threads inherit
/// the calling thread's mask, and a thread without the signals blocked
/// would take them with their default action.
pub fn on_stop_signal(last: impl FnOnce(i32) + Send + 'static) -> io::Result<()> {
    let mut set = SigSet::empty();
    for s in STOP_SIGNALS {
        set.add(s);
    }
    set.thread_block().map_err(io::Error::from)?;
    let spawned = std::thread::Builder::new()
        .name("stop-signal".into())
        .spawn(move || {
            if let Ok(sig) = set.wait() {
                last(sig as i32);
            }
        });
    if let Err(e) = spawned {
        let _ = set.thread_unblock();
        return Err(e);
    }
    Ok(())
}
