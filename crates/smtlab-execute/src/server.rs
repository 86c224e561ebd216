//! One sample of a [`Program::Server`] point: the server started on the
//! point's CPUs, driven by the load generator on other CPUs. Not built yet.

use smtlab_types::{Point, Program, Sample, SampleStatus};

use crate::context::SampleContext;
use crate::outcome::Outcome;

/// Take one sample of a server point.
pub fn run(point: &Point, _ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    let Program::Server { server, .. } = &point.program else {
        unreachable!("server::run is only called for server points");
    };
    let _ = (seq, warmup, server, SampleStatus::Failed);
    let _: Option<Sample> = None;
    Outcome::Interrupted
}
