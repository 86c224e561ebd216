//! A run specification: what a `run` or a study sweeps and how each point is
//! sampled. Stored with the run (as JSON), so `--resume` rebuilds exactly the
//! same plan and `report` knows what the run was.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::point::{Mode, Model, Program, Spawn};
use crate::policy::PolicySpec;
use crate::study::StudyMeta;

/// `--metric NAME=REGEX`: a number a user command prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricSpec {
    pub name: String,
    pub regex: MetricRegex,
    pub unit: String,
    pub higher_is_better: bool,
}

/// The regular expression of `--metric`, compiled once where it enters: at
/// the command line, or when a stored run is read back. Stored as its text.
#[derive(Debug, Clone)]
pub struct MetricRegex(regex::Regex);

impl MetricRegex {
    /// Compile `text`; the error is regex's own (possibly several lines:
    /// callers that print one line take its last).
    pub fn new(text: &str) -> Result<MetricRegex, regex::Error> {
        regex::Regex::new(text).map(MetricRegex)
    }

    pub fn regex(&self) -> &regex::Regex {
        &self.0
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// Two regexes are the same when they are written the same.
impl PartialEq for MetricRegex {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for MetricRegex {}

impl fmt::Display for MetricRegex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for MetricRegex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for MetricRegex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        MetricRegex::new(&text).map_err(serde::de::Error::custom)
    }
}

/// A validated `run` configuration: what to sweep and how to measure. Stored
/// with the run, so `--resume` rebuilds exactly the same plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub programs: Vec<Program>,
    /// `--comm`: the mechanisms each DSM application (`-w sor`, ...) runs
    /// with; `plan::expand` turns such a workload into one
    /// [`Program::Ranks`] per mechanism. Empty for other runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comms: Vec<crate::comm::Comm>,
    pub models: Vec<Model>,
    /// As written, each with its parsed policy.
    pub placements: Vec<PolicySpec>,
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
