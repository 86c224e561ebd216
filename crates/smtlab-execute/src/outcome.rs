//! What trying to take one sample gives: a sample to store, or nothing
//! because the user stopped it. Uses no other module of this crate.

use smtlab_types::Sample;

/// The result of trying to take one sample.
#[derive(Debug)]
pub enum Outcome {
    /// Measured, successfully or not: to be stored. (Boxed: a sample is
    /// large and the other variant empty.)
    Measured(Box<Sample>),
    /// Stopped by the user before it finished: nothing to store.
    Interrupted,
}
