//! Statistics over the samples of one point: location, spread, a bootstrap
//! 95% confidence interval of the median, MAD-based outlier flags, the ratio
//! of two points with its interval, the precision estimate the stop rule
//! compares with its target, and the seeded random streams everything here
//! draws from.
//!
//! Owns every statistical choice smtlab makes about samples; pure functions
//! over `f64` slices, with no I/O and no knowledge of what a sample is, so it
//! depends on nothing else in smtlab. Called by the measurement loop
//! (`smtlab-measure`: the stop rule and the seeded order of rounds, while a
//! run is in progress) and by analyse and report (summaries and comparisons
//! of stored samples).
//!
//! # Choices, and why
//!
//! * **The median is the headline number** (hyperfine also reports it;
//!   the acceptance test compares ours with hyperfine's): timing noise on a
//!   shared machine is one-sided (interrupts, migrations, a neighbour waking
//!   up only ever make a run slower), so the mean is pulled by a few bad
//!   samples and the median is not.
//! * **Its 95% CI is a percentile bootstrap** with [`BOOTSTRAP_RESAMPLES`]
//!   resamples: it makes no normality assumption and works for the median,
//!   whose standard error has no simple closed form. Limits, stated so that
//!   nobody reads more into the interval than it holds: a percentile
//!   bootstrap interval never extends beyond `[min, max]`, and `[min, max]`
//!   covers the true median with probability only `1 - 2^(1-n)` (75% at
//!   n = 3, 87.5% at 4, 93.75% at 5), so below about ten samples the
//!   interval is narrower than a true 95% interval. Measured coverage
//!   (4000 simulated data sets each, normal and log-normal alike):
//!
//!   | n | 3 | 5 | 7 | 10 | 15 | 20 | 30 | 50+ |
//!   |---|---|---|---|---|---|---|---|---|
//!   | coverage | 75% | 94% | 88% | 94% | 92% | 93–94% | 94.5% | 95% |
//!
//!   (odd n are worse at small sizes: the resampled median can only land on
//!   an order statistic). Hence the default of 10 samples at least, and
//!   the t-based guard of the stop rule below that ([`precision_estimate`]).
//!   No interval is given below 3 samples (see [`summarize`]).
//! * **Seeded and value-stable**: resampling draws from ChaCha8 (whose output
//!   `rand_chacha` guarantees across versions) through our own bounded
//!   integer sampler, and resamples the *sorted* values, so the interval
//!   depends only on the multiset of values and the seed — not on the order
//!   the store returns samples in, nor on `rand`'s internal algorithms.
//! * **Outliers are flagged, never removed** (as hyperfine does): a slow
//!   sample is a real observation of the machine, and silently dropping it
//!   would make the numbers look better than what a user will see. Flags let
//!   a report say "3 of 40 samples were outliers"; the statistics include
//!   them (the median and its interval are robust to a few anyway).
//! * **Non-finite values are rejected**, not propagated: `NaN` and `±inf`
//!   are dropped by every function here and counted in
//!   [`Summary::non_finite`], so one failed parse cannot turn a whole table
//!   into `NaN`, and the count keeps the drop visible.
//!
//! # Files
//!
//! Bottom-up: `random.rs` (the seeded streams and the bounded integer),
//! `descriptive.rs` (median, percentile, mean, standard deviation, MAD),
//! `outliers.rs`, `bootstrap.rs` (intervals of a median, of a ratio, and of
//! a function of several medians),
//! `precision.rs` (the stop rule's estimate), `summary.rs` ([`summarize`]).
//! This root only declares them and re-exports their names.

mod bootstrap;
mod descriptive;
mod outliers;
mod precision;
mod random;
mod summary;
#[cfg(test)]
mod tests;

pub use bootstrap::{
    medians_ci, medians_cis, ratio_ci, Estimates, BOOTSTRAP_RESAMPLES, CONFIDENCE,
};
pub use descriptive::{median, percentile};
pub use outliers::OUTLIER_Z;
pub use precision::{precision_estimate, t_quantile_975, SMALL_N};
pub use random::{rng_for_domain, uniform_below};
pub use summary::{summarize, Summary};
/// Test data for this crate's tests and the stop rule's (`smtlab-measure`,
/// through the `testing` feature): deterministic normal draws.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
