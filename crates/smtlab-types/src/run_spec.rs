//! A run specification: what a `run` or a study sweeps and how each point is
//! sampled. Stored with the run (as JSON), so `--resume` rebuilds exactly the
//! same plan and `report` knows what the run was.

use serde::{Deserialize, Serialize};

use crate::point::{Mode, Model, Program, Spawn};
use crate::study::StudyMeta;

/// `--metric NAME=REGEX`: a number a user command prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub name: String,
    pub regex: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// A validated `run` configuration: what to sweep and how to measure. Stored
/// with the run, so `--resume` rebuilds exactly the same plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub programs: Vec<Program>,
    pub models: Vec<Model>,
    pub placements: Vec<String>,
    pub threads: Vec<usize>,
    pub allocs: Vec<String>,
    pub spawn: Spawn,
    /// `None`: each workload's default mode (a command runs to completion).
    pub mode: Option<Mode>,
    pub metric: Option<MetricSpec>,
    pub warmup: usize,
    pub min_samples: usize,
    pub max_samples: usize,
    /// Target relative half-width of the 95% CI of the primary metric.
    pub precision: f64,
    /// Most time to spend on one point, seconds.
    pub max_time_s: f64,
    pub timeout_s: Option<f64>,
    pub seed: u64,
    pub counters: bool,
    /// Set when the run is a study (`smtlab study`): which one, and what
    /// the machine could not show. Absent in plain runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<StudyMeta>,
}
