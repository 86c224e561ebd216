//! A run as stored: its status, its record and the facts of the machine it
//! ran on. The store writes and reads these; reports and `show` print them.

use serde::{Deserialize, Serialize};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Being measured, or killed before it could say otherwise (`--resume`
    /// finishes it).
    Running,
    Complete,
    /// Stopped by Ctrl-C or a signal, everything measured committed.
    Interrupted,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            _ => return None,
        })
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of `smtlab runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    /// Unix seconds.
    pub started_at: f64,
    pub finished_at: Option<f64>,
    pub status: RunStatus,
    pub points: u64,
    /// Stored samples, warm-ups and failures included.
    pub samples: u64,
    /// Samples whose status is not `ok`.
    pub failed_samples: u64,
    pub command_line: Vec<String>,
    pub hostname: Option<String>,
}

/// A run as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: i64,
    /// Unix seconds.
    pub started_at: f64,
    pub finished_at: Option<f64>,
    pub status: RunStatus,
    pub command_line: Vec<String>,
    pub version: String,
    pub git_commit: Option<String>,
    pub seed: u64,
    pub config_json: serde_json::Value,
    pub host: HostFacts,
}

/// The facts stored with a run (as JSON in `runs.host_json`; the `hosts` view
/// shows them as columns).
///
/// `#[serde(default)]`: a fact added in a later smtlab reads as `None` from
/// runs stored before it existed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostFacts {
    /// `/proc/sys/kernel/hostname`.
    pub hostname: Option<String>,
    /// `uname -r` (`/proc/sys/kernel/osrelease`).
    pub kernel: Option<String>,
    /// As given by the topology reader, else `model name` from `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// The topology as smtlab read it (its JSON form).
    pub topology: serde_json::Value,
    /// Whether any core has more than one PU online.
    pub smt_active: bool,
    /// `scaling_governor` of the online CPUs: one name when they agree,
    /// otherwise the distinct names sorted and joined with `,`.
    pub governor: Option<String>,
    /// Transparent huge pages: the bracketed value of
    /// `/sys/kernel/mm/transparent_hugepage/enabled` (`always`, `madvise`,
    /// `never`).
    pub thp: Option<String>,
    /// `/proc/sys/kernel/perf_event_paranoid`.
    pub perf_event_paranoid: Option<i32>,
    /// 1, 5 and 15 minute load averages before the run started.
    pub load_avg: Option<[f64; 3]>,
    /// Other tasks of the same launcher's job ran on this host beside the
    /// run (`--shared-host`), so their measurements may have disturbed each
    /// other; absent when the run had its host to itself as far as the
    /// launcher said (and in runs stored before this fact existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_host: Option<SharedHost>,
    /// The CPUs are emulated (QEMU TCG), with the evidence: the kernel's
    /// topology is real to smtlab, but no timing measured there says
    /// anything about hardware. Absent on real or virtualized CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulated: Option<String>,
}

/// A launcher's job ran more than one task on the run's host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedHost {
    /// `Open MPI`, `Slurm` or `PMI`.
    pub launcher: String,
    /// The job's tasks on this host, the run's own included.
    pub tasks: usize,
}
