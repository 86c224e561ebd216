//! What every sample of a run shares ([`SampleContext`]: the smtlab
//! binary, the allocators' preloads, the timeout, the stop flag, the
//! programs' typed parameters), set up once by the caller. Uses no other module of this crate.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use smtlab_allocators::{Preload, Preloads};
use smtlab_plan::TypedPrograms;
use smtlab_types::Point;

/// What every sample of a run shares.
pub struct SampleContext<'a> {
    /// The smtlab binary, for `__worker` and the pin library.
    pub exe: PathBuf,
    /// LD_PRELOAD (and options) of each allocator of the run, by name,
    /// found when the run was planned. Per point rather than per run, so
    /// that one measurement interleaves the points of every allocator like
    /// any other points.
    pub preloads: Preloads,
    pub timeout: Option<Duration>,
    /// Open perf counters on the workers.
    pub counters: bool,
    /// Set by Ctrl-C: stop, kill the workers, store nothing for this sample.
    pub stop: &'a AtomicBool,
    /// `--metric NAME=REGEX` for user commands.
    pub metric_regex: Option<regex::Regex>,
    /// The run's programs with their parameters, parsed and checked when
    /// the run was planned: a sample runs with them as they are.
    pub programs: TypedPrograms,
}

impl SampleContext<'_> {
    /// What to preload for `point`'s allocator.
    pub fn preload_for(&self, point: &Point) -> Option<&Preload> {
        self.preloads.get(&point.alloc)
    }
}
