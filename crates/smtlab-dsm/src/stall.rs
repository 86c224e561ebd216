//! A rank that waited too long for the others gives up. [`Stalled`] (in
//! `error.rs`) says which rank went silent and what this one was waiting
//! for, in one line; how the process then ends is its program's choice
//! ([`on_stall`]: `smtlab rank` prints the line and exits 1), a panic when
//! it made none (tests, and ranks run as threads).
//!
//! The wait that gives up may be inside the `SIGSEGV` handler (a page
//! fetch), from which a panic cannot unwind: it would abort the process
//! with a core instead of saying why. So a program that runs ranks sets a
//! handler that ends the process itself.
//!
//! Used by `node` (the waits); `rank` takes the timeout with a run.

use std::sync::OnceLock;
use std::time::Duration;

use crate::error::Stalled;

/// How long a rank waits for a reply before it gives up, unless its run
/// says otherwise (`--stall-timeout`): far beyond any page, lock or
/// barrier of a healthy run, even an emulated one.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(120);

/// What ends a process whose rank stalled; must not return.
pub type StallHandler = fn(&Stalled) -> !;

static ON_STALL: OnceLock<StallHandler> = OnceLock::new();

/// Set, once per process, what a stalled rank does: typically write the
/// line and exit. Later calls are ignored.
pub fn on_stall(handler: StallHandler) {
    let _ = ON_STALL.set(handler);
}

/// Give up: the handler set by [`on_stall`], else a panic with the line.
pub(crate) fn give_up(stalled: Stalled) -> ! {
    if let Some(handler) = ON_STALL.get() {
        handler(&stalled)
    }
    panic!("{stalled}")
}
