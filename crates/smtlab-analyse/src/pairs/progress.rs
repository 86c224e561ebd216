//! How far an analysis has got, for a progress bar: the analysis only
//! counts (atomics, from every thread), and whoever runs it reads the
//! counts from another thread and draws what it likes (the CLI: a bar on a
//! terminal once the analysis has taken 2 s). Uses nothing else in
//! `pairs`.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// What an analysis is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not started.
    Starting,
    /// The exact best and worst schedules.
    Exact,
    /// Random schedules (the distribution, and the re-randomizing
    /// scheduler's draws).
    Random,
    /// The gain's interval over a measured matrix's replicates.
    Gain,
}

impl Phase {
    /// What a progress bar says of it.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Exact => "exact best and worst schedules",
            Phase::Random => "random schedules",
            Phase::Gain => "the gain's interval",
        }
    }
}

/// Work done and planned, in units of about equal cost: a pair of a random
/// schedule drawn; the matching's work in the same units, estimated.
#[derive(Debug)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
    phase: AtomicU8,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress::new()
    }
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            phase: AtomicU8::new(Phase::Starting as u8),
        }
    }

    /// Units done so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Units planned (0 until the analysis has planned them).
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            1 => Phase::Exact,
            2 => Phase::Random,
            3 => Phase::Gain,
            _ => Phase::Starting,
        }
    }

    pub(crate) fn plan(&self, total: u64) {
        self.total.store(total, Ordering::Relaxed);
    }

    pub(crate) fn enter(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    pub(crate) fn advance(&self, units: u64) {
        self.done.fetch_add(units, Ordering::Relaxed);
    }

    /// Set the units done to `at` if that is more (a phase's estimate
    /// caught up with at its end).
    pub(crate) fn reach(&self, at: u64) {
        self.done.fetch_max(at, Ordering::Relaxed);
    }
}
