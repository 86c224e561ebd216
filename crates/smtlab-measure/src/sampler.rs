//! The engine's seam for where samples come from ([`Sampler`]). The real
//! sampler runs workers: `smtlab-execute` implements this trait for its
//! `SampleContext`, above this crate, so the engine compiles without the
//! programs it measures. Where samples go is `smtlab_types::SampleLog`,
//! which the store implements.

use std::sync::OnceLock;
use std::time::Instant;

use smtlab_types::{Outcome, Point};

/// Takes one sample of a point.
pub trait Sampler {
    /// Measure sample `seq` of `point` (a warm-up if `warmup`).
    fn sample(&mut self, point: &Point, seq: usize, warmup: bool) -> Outcome;

    /// Whether the user asked to stop (Ctrl-C): the engine stops before
    /// the next sample.
    fn interrupted(&self) -> bool;

    /// Seconds on a monotonic clock: the engine charges each point the time
    /// its samples took (its `--max-time` budget) by this clock. Real
    /// samplers keep the default, the machine's monotonic clock; a test's
    /// sampler advances its own, so budgets can be tested without waiting.
    fn now_s(&self) -> f64 {
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_secs_f64()
    }
}
