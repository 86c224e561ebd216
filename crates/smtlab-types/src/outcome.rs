//! What trying to take one sample gives: a sample to store, or nothing
//! because the user stopped it. Here, not in execute, because the engine's
//! `Sampler` contract returns it and the engine must not depend on the crate
//! that runs workers (nor, through it, on the servers and the DSM).

use crate::sample::Sample;

/// The result of trying to take one sample.
#[derive(Debug)]
pub enum Outcome {
    /// Measured, successfully or not: to be stored. (Boxed: a sample is
    /// large and the other variant empty.)
    Measured(Box<Sample>),
    /// Stopped by the user before it finished: nothing to store.
    Interrupted,
}
