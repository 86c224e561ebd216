//! What a source (sysfs, a synthetic description) knows about a machine,
//! as flat per-PU facts before grouping ([`RawTopology`]), and where it
//! came from. Uses no other module of this crate.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use smtlab_types::cpuset::CpuSet;

/// Where a topology came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// This machine, read from `/` with this process's affinity mask.
    Live,
    /// A filesystem root holding `sys/` and `proc/` (an extracted dump).
    FsRoot { path: PathBuf },
    /// An hwloc-style synthetic description.
    Synthetic { spec: String },
}

/// Cache type, as sysfs names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheType {
    Unified,
    Data,
    Instruction,
}

impl CacheType {
    /// The letter lstopo appends to the level: `L1d`, `L1i`, `L2`.
    pub fn suffix(self) -> &'static str {
        match self {
            CacheType::Unified => "",
            CacheType::Data => "d",
            CacheType::Instruction => "i",
        }
    }
}

/// Flat facts about one PU, as a source reports them, before grouping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawPu {
    pub os_index: u32,
    pub online: bool,
    pub allowed: bool,
    /// `physical_package_id`; negative means unknown.
    pub package_id: Option<i64>,
    /// `package_cpus` / `core_siblings`: used when the id is unknown.
    pub package_cpus: Option<CpuSet>,
    pub die_id: Option<i64>,
    pub cluster_id: Option<i64>,
    pub core_id: Option<i64>,
    /// `core_cpus` / `thread_siblings`: the PUs of this PU's core.
    pub core_cpus: Option<CpuSet>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCache {
    pub level: u8,
    pub cache_type: CacheType,
    pub size_bytes: Option<u64>,
    pub line_size: Option<u32>,
    pub ways: Option<u32>,
    pub cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawNode {
    pub os_index: u32,
    pub cpus: CpuSet,
    pub memory_bytes: Option<u64>,
    pub allowed: bool,
    /// Distances indexed by position in the list of nodes sorted by OS index.
    pub distances: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawKind {
    pub name: Option<String>,
    pub cpus: CpuSet,
    pub max_freq_mhz: Option<u32>,
    pub base_freq_mhz: Option<u32>,
}

/// Everything a source knows, before grouping into objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTopology {
    pub source: Source,
    pub cpu_model: Option<String>,
    /// Machine memory when no NUMA node reports its own.
    pub memory_bytes: Option<u64>,
    pub pus: Vec<RawPu>,
    pub caches: Vec<RawCache>,
    pub nodes: Vec<RawNode>,
    pub kinds: Vec<RawKind>,
    pub cpuset_source: Option<String>,
    /// `/sys/devices/system/cpu/smt/control` (`on`, `off`, `forceoff`,
    /// `notsupported`, `notimplemented`), when the kernel has it.
    pub smt_control: Option<String>,
    pub notes: Vec<String>,
}

impl Default for RawTopology {
    fn default() -> Self {
        RawTopology {
            source: Source::Live,
            cpu_model: None,
            memory_bytes: None,
            pus: Vec::new(),
            caches: Vec::new(),
            nodes: Vec::new(),
            kinds: Vec::new(),
            cpuset_source: None,
            smt_control: None,
            notes: Vec::new(),
        }
    }
}
