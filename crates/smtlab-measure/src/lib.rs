//! Measuring a plan: every point sampled in interleaved rounds, with
//! warm-ups, until its stop rule says it is measured precisely enough (or
//! its budget is spent, or it keeps failing), every sample committed as soon
//! as it is taken, and an interrupted run resumable where it stopped.
//!
//! * [`engine`]: the loop, and the [`Event`]s it emits
//!   (it never prints);
//! * [`sampler`]: its seam [`Sampler`] (where samples come from); where
//!   they are committed is `smtlab_types::SampleLog`;
//! * [`schedule`]: the seeded order of each round;
//! * [`stop_rule`]: when a point has enough samples.
//!
//! It depends on the record types and the statistics only: the real
//! sampler (`smtlab-execute`'s `SampleContext`) implements [`Sampler`]
//! above this crate, and the store implements `SampleLog` beside it, so
//! neither the programs measured nor the store are compiled into it.

pub mod engine;
pub mod sampler;
pub mod schedule;
pub mod stop_rule;
#[cfg(test)]
mod testing;

pub use engine::{measure, Event, EventSink, RunEnd, MAX_FAILURES_IN_A_ROW};
pub use sampler::Sampler;
pub use stop_rule::{should_stop, StopDecision, StopReason, StopRule, StopRuleError};
