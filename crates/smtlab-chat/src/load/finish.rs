//! The end of the measured phase: the last client thread to finish its
//! messages runs the `on_end` hook, and the others wait for it.

use std::time::Duration;

use super::config::Hook;

/// Threads that have ended their messages, and the wait for the last one:
/// connections stay open until every thread is done and `on_end` ran.
pub(crate) struct Finish {
    left: std::sync::Mutex<usize>,
    all_done: std::sync::Condvar,
}

impl Finish {
    pub(crate) fn new(threads: usize) -> Finish {
        Finish {
            left: std::sync::Mutex::new(threads),
            all_done: std::sync::Condvar::new(),
        }
    }

    /// This thread is done: the last one runs `hook`; every caller with
    /// `wait` returns only then (or after `limit`, should a thread never
    /// arrive).
    pub(crate) fn arrive(&self, hook: Option<&Hook>, wait: bool, limit: Duration) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            if let Some(h) = hook {
                (h.0)();
            }
            self.all_done.notify_all();
            return;
        }
        if wait {
            let _ = self
                .all_done
                .wait_timeout_while(left, limit, |l| *l > 0)
                .unwrap_or_else(|e| e.into_inner());
        }
    }
}
