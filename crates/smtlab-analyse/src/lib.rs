//! Analysis of measured runs: what the samples of each point say
//! ([`summary`]: median, 95% CI, counters and their [`derived`] ratios), and
//! what the points say together ([`analysis`]: scaling, SMT yield, USL
//! fits, verdicts with confidence intervals, recommendations; [`compare`]:
//! two runs, or the runs of several hosts, side by side, with
//! [`host_facts`]: which facts of the machines differ; [`fleet`]: each
//! host's latest runs in a merged store). [`units`] writes the numbers for
//! people.
//!
//! Pure functions over stored results, loaded from the store (the stage
//! below); the report writers and the studies above consume the types
//! defined here.

pub mod analysis;
pub mod compare;
pub mod derived;
pub mod fleet;
pub mod host_facts;
pub mod pairs;
pub mod summary;
pub mod units;
