//! Default signal actions in a forked worker: a child made with
//! [`fork_child`](crate::fork_child) inherits its parent's handlers (the
//! Ctrl-C flag of `smtlab serve` or `run`, the forwarding handler), under
//! which a SIGTERM would only set a flag in the child instead of ending it.
//!
//! Called by the `process` web server's workers (`smtlab-web`).

use std::io;

use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet};

use crate::signals::FORWARDED_SIGNALS;

/// Give SIGINT, SIGTERM, SIGHUP and SIGQUIT their default action (end the
/// process) in the calling process.
pub fn default_signal_actions() -> io::Result<()> {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for s in FORWARDED_SIGNALS {
        // SAFETY: installing SIG_DFL cannot violate any handler invariant.
        unsafe { signal::sigaction(s, &default) }.map_err(io::Error::from)?;
    }
    Ok(())
}
