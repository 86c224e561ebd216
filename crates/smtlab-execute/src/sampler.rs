//! A [`SampleContext`] as the engine's [`Sampler`]: each sample dispatched
//! to the module of its program's kind. Here rather than in
//! `smtlab-measure` so that the engine, and the store and analysis above
//! it, compile without the programs it measures. Uses `context` and
//! `dispatch`.

use std::sync::atomic::Ordering;

use smtlab_measure::Sampler;
use smtlab_types::{Outcome, Point};

use crate::context::SampleContext;
use crate::dispatch::run_sample;

impl Sampler for SampleContext<'_> {
    fn sample(&mut self, point: &Point, seq: usize, warmup: bool) -> Outcome {
        run_sample(point, self, seq, warmup)
    }

    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}
