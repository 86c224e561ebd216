//! The machine as objects ([`Topology`]): packages, dies, cores, PUs,
//! caches, NUMA nodes and CPU kinds, numbered as hwloc numbers them, and
//! the questions the rest of smtlab asks of it. Built by `assemble`; uses
//! `raw`.

use serde::{Deserialize, Serialize};

use smtlab_types::cpuset::CpuSet;

use crate::raw::{CacheType, RawTopology, Source};

/// One PU (hardware thread, what Linux calls a CPU).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pu {
    /// The kernel's CPU number (hwloc's `P#`).
    pub os_index: u32,
    /// Position in depth-first order of the tree (hwloc's `L#`); `None` for
    /// offline PUs, which are not in the tree.
    pub logical_index: Option<u32>,
    /// Index into [`Topology::cores`]: unique in the machine (sysfs core ids
    /// repeat across packages, this does not). `None` when offline.
    pub core: Option<usize>,
    /// Index into [`Topology::packages`]. `None` when offline.
    pub package: Option<usize>,
    /// Index into [`Topology::dies`], where the machine has dies.
    pub die: Option<usize>,
    /// The kernel's cluster id (`topology/cluster_id`), where exposed.
    pub cluster: Option<i64>,
    /// Index into [`Topology::numa_nodes`].
    pub numa: Option<usize>,
    /// Index into [`Topology::cpu_kinds`] on hybrid machines.
    pub kind: Option<usize>,
    pub online: bool,
    /// This process may run here: online, inside the cgroup cpuset in effect,
    /// and (live machine only) inside `sched_getaffinity`.
    pub allowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    /// Logical index (hwloc's `L#`).
    pub id: usize,
    /// `physical_package_id`, when the kernel knows it (POWER reports -1).
    pub os_index: Option<u32>,
    pub cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Die {
    pub id: usize,
    pub os_index: Option<u32>,
    pub package: usize,
    pub cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Core {
    /// Logical index: unique in the machine.
    pub id: usize,
    /// The kernel's `core_id` (unique only inside a package).
    pub os_index: Option<u32>,
    pub package: usize,
    /// The core's PUs (its SMT siblings), online ones only.
    pub cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    /// Logical index among caches of the same level and type.
    pub id: usize,
    pub level: u8,
    #[serde(rename = "type")]
    pub cache_type: CacheType,
    pub size_bytes: Option<u64>,
    pub line_size: Option<u32>,
    pub ways: Option<u32>,
    /// The PUs sharing this cache (online ones).
    pub cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    pub id: usize,
    pub os_index: u32,
    pub cpus: CpuSet,
    pub memory_bytes: Option<u64>,
    /// Inside the cgroup's `cpuset.mems`.
    pub allowed: bool,
    /// Relative distances to every node, in [`Topology::numa_nodes`] order.
    pub distances: Vec<u32>,
}

/// A class of cores on a hybrid CPU (P-cores and E-cores), ranked like
/// hwloc's CPU kinds: a higher `efficiency` is a bigger, faster core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuKind {
    pub id: usize,
    pub efficiency: u32,
    pub name: Option<String>,
    pub cpus: CpuSet,
    pub max_freq_mhz: Option<u32>,
    pub base_freq_mhz: Option<u32>,
}

/// A whole machine. Every vector is in logical order: `cores[i].id == i`.
///
/// It deserializes from its JSON form (a stored run's machine) for analysis
/// and reports; such a copy has no raw facts, so derive nothing from it with
/// [`Topology::restricted_to_allowed`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Topology {
    pub source: Source,
    pub cpu_model: Option<String>,
    pub memory_bytes: Option<u64>,
    /// Every PU the kernel knows (online or not), by OS index.
    pub pus: Vec<Pu>,
    pub packages: Vec<Package>,
    pub dies: Vec<Die>,
    pub cores: Vec<Core>,
    pub caches: Vec<Cache>,
    pub numa_nodes: Vec<NumaNode>,
    pub cpu_kinds: Vec<CpuKind>,
    /// Where the cpuset came from (`/sys/fs/cgroup/.../cpuset.cpus.effective`).
    pub cpuset_source: Option<String>,
    /// The kernel's SMT switch (`/sys/devices/system/cpu/smt/control`):
    /// `off` or `forceoff` means the cores have siblings the kernel took
    /// offline, not that the machine has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt_control: Option<String>,
    /// Fallbacks taken where the source lacked something, in plain words.
    pub notes: Vec<String>,
    #[serde(skip)]
    pub(crate) raw: RawTopology,
}

impl Topology {
    pub fn pu(&self, os_index: u32) -> Option<&Pu> {
        self.pus
            .binary_search_by_key(&os_index, |p| p.os_index)
            .ok()
            .map(|i| &self.pus[i])
    }

    /// SMT is switched off at run time (`smt/control` is `off` or
    /// `forceoff`): siblings exist but are offline.
    pub fn smt_switched_off(&self) -> bool {
        matches!(self.smt_control.as_deref(), Some("off" | "forceoff"))
    }

    pub fn online(&self) -> CpuSet {
        self.pus
            .iter()
            .filter(|p| p.online)
            .map(|p| p.os_index)
            .collect()
    }

    /// PUs this process may use (online and inside the cpuset/affinity).
    pub fn allowed(&self) -> CpuSet {
        self.pus
            .iter()
            .filter(|p| p.allowed)
            .map(|p| p.os_index)
            .collect()
    }

    /// Every PU the kernel knows, online or not.
    pub fn all(&self) -> CpuSet {
        self.pus.iter().map(|p| p.os_index).collect()
    }

    /// The most PUs any core has: 1 means no SMT.
    pub fn max_pus_per_core(&self) -> usize {
        self.cores.iter().map(|c| c.cpus.len()).max().unwrap_or(0)
    }

    /// SMT is active when some core has more than one online PU.
    pub fn smt_active(&self) -> bool {
        self.max_pus_per_core() > 1
    }

    /// A core's PUs in the order placements use them: by OS index.
    pub fn core_pus(&self, core: usize) -> Vec<u32> {
        self.cores[core].cpus.iter().collect()
    }

    /// The last-level caches (the `C` domains of CPU expressions), in
    /// logical order.
    pub fn last_level_caches(&self) -> Vec<&Cache> {
        let top = self
            .caches
            .iter()
            .filter(|c| c.cache_type != CacheType::Instruction)
            .map(|c| c.level)
            .max();
        match top {
            Some(l) => self
                .caches
                .iter()
                .filter(|c| c.level == l && c.cache_type != CacheType::Instruction)
                .collect(),
            None => Vec::new(),
        }
    }
}
