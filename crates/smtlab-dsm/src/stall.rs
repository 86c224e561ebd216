//! A rank that waited too long for the others gives up. [`Stalled`] says
//! which rank went silent and what this one was waiting for, in one line;
//! how the process then ends is its program's choice ([`on_stall`]:
//! `smtlab rank` prints the line and exits 1), a panic when it made none
//! (tests, and ranks run as threads).
//!
//! The wait that gives up may be inside the `SIGSEGV` handler (a page
//! fetch), from which a panic cannot unwind: it would abort the process
//! with a core instead of saying why. So a program that runs ranks sets a
//! handler that ends the process itself.
//!
//! Used by `node` (the waits); `rank` takes the timeout with a run.

use std::sync::OnceLock;
use std::time::Duration;

/// How long a rank waits for a reply before it gives up, unless its run
/// says otherwise (`--stall-timeout`): far beyond any page, lock or
/// barrier of a healthy run, even an emulated one.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(120);

/// A rank waited longer than its stall timeout for a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "rank {rank}: no reply from {} for {} s while waiting for {what} (a rank died or \
     stopped, or the network between them is gone); {detail}",
    silent_list(silent),
    tenths(*waited)
)]
pub struct Stalled {
    /// The rank that gave up.
    pub rank: usize,
    /// The ranks it was waiting to hear from.
    pub silent: Vec<usize>,
    /// What it was waiting for: `a page`, `a barrier`, ...
    pub what: String,
    pub waited: Duration,
    /// The state of its communication, one line, for whoever debugs it.
    pub detail: String,
}

/// Seconds to a tenth, without a trailing `.0`: `120`, `2.5`.
fn tenths(d: Duration) -> String {
    let t = (d.as_secs_f64() * 10.0).round() / 10.0;
    if t.fract() == 0.0 {
        format!("{t:.0}")
    } else {
        format!("{t:.1}")
    }
}

fn silent_list(ranks: &[usize]) -> String {
    let list: Vec<String> = ranks.iter().map(ToString::to_string).collect();
    match ranks.len() {
        0 => "the other ranks".to_string(),
        1 => format!("rank {}", list[0]),
        _ => format!("ranks {}", list.join(", ")),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_one_line_naming_the_silent_rank_and_the_wait() {
        let s = Stalled {
            rank: 0,
            silent: vec![1],
            what: "a barrier".into(),
            waited: Duration::from_millis(2500),
            detail: "socket 127.0.0.1:5000".into(),
        };
        assert_eq!(
            s.to_string(),
            "rank 0: no reply from rank 1 for 2.5 s while waiting for a barrier (a rank died \
             or stopped, or the network between them is gone); socket 127.0.0.1:5000"
        );
        let two = Stalled {
            silent: vec![2, 3],
            ..s.clone()
        };
        assert!(two.to_string().contains("no reply from ranks 2, 3 for"));
        // A wait just past a whole number of seconds reads as that number.
        let late = Stalled {
            waited: Duration::from_nanos(120_001_000_500),
            ..s.clone()
        };
        assert!(late.to_string().contains(" for 120 s while"), "{late}");
        assert!(!two.to_string().contains('\n'));
    }
}
