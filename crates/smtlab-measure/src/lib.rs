//! Measuring a plan: every point sampled in interleaved rounds, with
//! warm-ups, until its stop rule says it is measured precisely enough (or
//! its budget is spent, or it keeps failing), every sample committed as soon
//! as it is taken, and an interrupted run resumable where it stopped.
//!
//! * [`engine`]: the loop, and the [`Event`]s it emits
//!   (it never prints);
//! * [`sampler`]: its seams, [`Sampler`] (where samples come from) and
//!   [`SampleLog`] (where they are committed);
//! * [`schedule`]: the seeded order of each round;
//! * [`stop_rule`]: when a point has enough samples.
//!
//! Above execute in the pipeline (the real sampler runs a sample through
//! `smtlab-execute`) and below the store (which implements [`SampleLog`]).

pub mod engine;
pub mod sampler;
pub mod schedule;
pub mod stop_rule;
#[cfg(test)]
mod testing;

pub use engine::{measure, Event, EventSink, RunEnd, MAX_FAILURES_IN_A_ROW};
pub use sampler::{SampleLog, Sampler};
pub use stop_rule::{should_stop, StopDecision, StopReason, StopRule, StopRuleError};
