//! [`WorkloadConfig`]: a built-in workload's parameters parsed and
//! range-checked, in the types its set-up takes, one variant per workload,
//! and those types (`SpinSettings`...), plain data.
//!
//! [`Workload::parse`](crate::Workload::parse) (each workload's own file)
//! makes one from the `--param` text when a run is planned; a worker
//! process is handed it (serialized with its spec) and sets up from it, so
//! no worker reads the text again. The types live here rather than beside
//! each workload so that the trait, which names [`WorkloadConfig`], does
//! not depend on the workloads that implement it.

use serde::{Deserialize, Serialize};

use crate::error::WorkloadError;

/// A built-in workload's parameters, parsed once: the variant names the
/// workload, its value is what that workload's set-up takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadConfig {
    Jbb(JbbSettings),
    Spin(SpinSettings),
    Parfib(ParfibSettings),
    Sumeuler(SumeulerSettings),
    Mandel(MandelSettings),
    Stream(StreamSettings),
    Latency(LatencySettings),
    Allocprobe(AllocprobeSettings),
    Larson(LarsonSettings),
    Xmalloc(XmallocSettings),
    CacheScratch(CacheSettings),
    CacheThrash(CacheSettings),
    Mstress(MstressSettings),
}

impl WorkloadConfig {
    /// The name of the workload this configures (as `-w` names it).
    pub fn workload(&self) -> &'static str {
        match self {
            WorkloadConfig::Jbb(_) => "jbb",
            WorkloadConfig::Spin(_) => "spin",
            WorkloadConfig::Parfib(_) => "parfib",
            WorkloadConfig::Sumeuler(_) => "sumeuler",
            WorkloadConfig::Mandel(_) => "mandel",
            WorkloadConfig::Stream(_) => "stream",
            WorkloadConfig::Latency(_) => "latency",
            WorkloadConfig::Allocprobe(_) => "allocprobe",
            WorkloadConfig::Larson(_) => "larson",
            WorkloadConfig::Xmalloc(_) => "xmalloc",
            WorkloadConfig::CacheScratch(_) => "cache_scratch",
            WorkloadConfig::CacheThrash(_) => "cache_thrash",
            WorkloadConfig::Mstress(_) => "mstress",
        }
    }

    /// The error of workload `workload` handed this config, another
    /// workload's: a caller's bug, refused rather than run.
    pub fn not_for(&self, workload: &str) -> WorkloadError {
        WorkloadError::Setup(format!(
            "workload `{workload}` was given the parameters of `{}`",
            self.workload()
        ))
    }
}

/// `jbb`'s: the seed, the catalogue's items, one warehouse's sizes and the
/// test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JbbSettings {
    pub(crate) seed: u64,
    pub(crate) items: usize,
    pub(crate) customers: usize,
    pub(crate) initial_orders: usize,
    pub(crate) max_orders: usize,
    pub(crate) max_history: usize,
    pub(crate) corrupt: bool,
}

/// `spin`'s: the seed and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpinSettings {
    pub(crate) seed: u64,
    pub(crate) corrupt: bool,
}

/// `parfib`'s: `n`, the sequential threshold and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParfibSettings {
    pub(crate) n: u32,
    pub(crate) threshold: u32,
    pub(crate) corrupt: bool,
}

/// `sumeuler`'s: `n`, the chunk size and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SumeulerSettings {
    pub(crate) n: u32,
    pub(crate) chunk: u32,
    pub(crate) corrupt: bool,
}

/// `mandel`'s: width, height and iterations, and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MandelSettings {
    pub(crate) dims: [u32; 3],
    pub(crate) corrupt: bool,
}

/// `stream`'s: blocks per array and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StreamSettings {
    pub(crate) blocks: u64,
    pub(crate) corrupt: bool,
}

/// `latency`'s: the chain's length in lines, the seed and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencySettings {
    pub(crate) lines: usize,
    pub(crate) seed: u64,
    pub(crate) corrupt: bool,
}

/// `allocprobe`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AllocprobeSettings {
    pub(crate) live: usize,
    pub(crate) sizes: Sizes,
    pub(crate) migrate: bool,
    pub(crate) migrate_every: u64,
    pub(crate) seed: u64,
    pub(crate) corrupt: bool,
}

/// `larson`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LarsonSettings {
    pub(crate) slots: usize,
    pub(crate) sizes: Sizes,
    pub(crate) seed: u64,
    pub(crate) touch: usize,
    pub(crate) rounds: u64,
    pub(crate) corrupt: bool,
}

/// `xmalloc`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct XmallocSettings {
    pub(crate) batch: u64,
    pub(crate) depth: usize,
    pub(crate) sizes: Sizes,
    pub(crate) touch: usize,
    pub(crate) seed: u64,
    pub(crate) corrupt: bool,
}

/// `cache_scratch`'s and `cache_thrash`'s: object size, writes per object
/// and the test-only corrupt switch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CacheSettings {
    pub(crate) size: usize,
    pub(crate) writes: u64,
    pub(crate) corrupt: bool,
}

/// `mstress`'s parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MstressSettings {
    pub(crate) batch: u64,
    pub(crate) keep: u64,
    pub(crate) sizes: Sizes,
    pub(crate) seed: u64,
    pub(crate) corrupt: bool,
}

/// A range of block sizes, drawn uniformly (the allocation benchmarks'
/// `min_size` and `max_size`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sizes {
    pub(crate) min: usize,
    pub(crate) max: usize,
}
