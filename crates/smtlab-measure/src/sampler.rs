//! The engine's two seams: where samples come from ([`Sampler`]) and where
//! they go ([`SampleLog`]). The real sampler runs workers
//! (`smtlab_execute::SampleContext`); the real log is the SQLite store,
//! which implements [`SampleLog`] in `smtlab-store` (the store sits above
//! this crate in the pipeline, so the engine cannot call it by name).

use std::sync::OnceLock;
use std::time::Instant;

use smtlab_execute::{Outcome, SampleContext};
use smtlab_types::{Point, Sample};

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

impl Sampler for SampleContext<'_> {
    fn sample(&mut self, point: &Point, seq: usize, warmup: bool) -> Outcome {
        smtlab_execute::run_sample(point, self, seq, warmup)
    }

    fn interrupted(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Where samples are committed as they are measured, and found again when
/// a run is resumed.
pub trait SampleLog {
    type Error;

    /// Every sample of a point committed so far, by sequence number.
    fn samples(&self, point_id: i64) -> Result<Vec<Sample>, Self::Error>;

    /// Commit one sample; when this returns, a crash cannot lose it.
    fn add_sample(&self, point_id: i64, sample: &Sample) -> Result<(), Self::Error>;

    /// Flag the outliers among a point's measured samples by seq.
    fn set_outliers(&self, point_id: i64, seqs: &[usize]) -> Result<(), Self::Error>;
}
