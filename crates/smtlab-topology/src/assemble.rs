//! From flat per-PU facts to numbered objects, the way hwloc does it.
//!
//! Objects are grouped from what each PU reports (package id, core sibling
//! set, cache sharing sets), then nested by CPU-set inclusion into one tree
//! (bigger sets above smaller; for equal sets, package above die above caches
//! from the outermost level down above core above PU). Children are ordered
//! by their first PU, and logical indexes are handed out in depth-first
//! order: this reproduces lstopo's `L#` numbers even for asymmetric machines
//! where a core's logical index depends on which cache it sits under.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::machine::{Cache, Core, CpuKind, Die, NumaNode, Package, Pu, Topology};
use crate::raw::{CacheType, RawCache, RawNode, RawTopology};
use smtlab_types::cpuset::CpuSet;

/// What a tree node stands for, with an index into the matching vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum What {
    Machine,
    Package(usize),
    Die(usize),
    Cache(usize),
    Core(usize),
    Pu(u32),
}

#[derive(Debug, Clone)]
pub(crate) struct TreeNode {
    pub what: What,
    rank: u32,
    pub cpus: CpuSet,
    pub children: Vec<usize>,
}

/// The containment tree; node 0 is the machine.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    pub nodes: Vec<TreeNode>,
    /// Each node's parent (the machine is its own).
    parent: Vec<usize>,
    /// The deepest node holding each PU.
    owner: HashMap<u32, usize>,
}

fn cache_rank(level: u8, t: CacheType) -> u32 {
    // Outer levels first; at one level unified/data above instruction, as
    // lstopo nests L1d above L1i.
    let type_order = match t {
        CacheType::Unified => 0,
        CacheType::Data => 1,
        CacheType::Instruction => 2,
    };
    10 + (9u32.saturating_sub(level as u32)) * 3 + type_order
}

impl Tree {
    /// Nest `objects` (what, rank, cpus) under a machine holding `all`.
    fn build(all: CpuSet, mut objects: Vec<(What, u32, CpuSet)>) -> Tree {
        objects.retain(|(_, _, c)| !c.is_empty());
        objects.sort_by(|a, b| {
            b.2.len()
                .cmp(&a.2.len())
                .then(a.1.cmp(&b.1))
                .then(a.2.first().cmp(&b.2.first()))
        });
        let mut nodes = vec![TreeNode {
            what: What::Machine,
            rank: 0,
            cpus: all,
            children: Vec::new(),
        }];
        // Objects come largest first, so an object's parent is the deepest
        // one inserted so far that contains it. `owner[cpu]` is the deepest
        // node holding that PU: the parent is found from the object's first
        // PU, walking up (`parent`) past a node that does not hold all of it
        // (objects that overlap without nesting). Linear in the PUs of all
        // objects, where searching each node's children was quadratic (55 s
        // for `core:65536`).
        let mut owner: HashMap<u32, usize> = HashMap::new();
        let mut parent: Vec<usize> = vec![0];
        for (what, rank, cpus) in objects {
            let first = cpus.first().expect("empty objects were dropped");
            let mut at = owner.get(&first).copied().unwrap_or(0);
            while at != 0 && !cpus.is_subset(&nodes[at].cpus) {
                at = parent[at];
            }
            let id = nodes.len();
            for c in cpus.iter() {
                owner.insert(c, id);
            }
            nodes.push(TreeNode {
                what,
                rank,
                cpus,
                children: Vec::new(),
            });
            parent.push(at);
            nodes[at].children.push(id);
        }
        let keys: Vec<(Option<u32>, u32)> =
            nodes.iter().map(|n| (n.cpus.first(), n.rank)).collect();
        for n in &mut nodes {
            n.children.sort_by_key(|&c| keys[c]);
        }
        Tree {
            nodes,
            parent,
            owner,
        }
    }

    /// Depth-first order of node indexes, root first.
    pub fn dfs(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes.len());
        let mut stack = vec![0];
        while let Some(n) = stack.pop() {
            out.push(n);
            stack.extend(self.nodes[n].children.iter().rev());
        }
        out
    }

    /// The tree of a finished topology (online PUs only), for rendering.
    pub fn of(topo: &Topology) -> Tree {
        let mut objects = Vec::new();
        for p in &topo.packages {
            objects.push((What::Package(p.id), 1, p.cpus.clone()));
        }
        for d in &topo.dies {
            objects.push((What::Die(d.id), 2, d.cpus.clone()));
        }
        for (i, c) in topo.caches.iter().enumerate() {
            objects.push((
                What::Cache(i),
                cache_rank(c.level, c.cache_type),
                c.cpus.clone(),
            ));
        }
        for c in &topo.cores {
            objects.push((What::Core(c.id), 50, c.cpus.clone()));
        }
        for p in topo.pus.iter().filter(|p| p.online) {
            objects.push((What::Pu(p.os_index), 60, CpuSet::from_iter([p.os_index])));
        }
        Tree::build(topo.online(), objects)
    }

    /// Where lstopo attaches a NUMA node holding `cpus`: the outermost
    /// object below the machine with exactly those PUs (a package, or an L3
    /// on AMD parts with two nodes per package), else the deepest object
    /// containing them; the machine for an empty set.
    pub fn attach_point(&self, cpus: &CpuSet) -> usize {
        let Some(first) = cpus.first() else {
            return 0;
        };
        // The deepest node holding them all: up from the one holding the
        // first PU (a walk, where descending through every child of every
        // level was quadratic: 1024 NUMA nodes over 65536 cores).
        let mut at = self.owner.get(&first).copied().unwrap_or(0);
        while at != 0 && !cpus.is_subset(&self.nodes[at].cpus) {
            at = self.parent[at];
        }
        if at != 0 && self.nodes[at].cpus == *cpus {
            // The outermost object below the machine with exactly them.
            while self.parent[at] != 0 && self.nodes[self.parent[at]].cpus == *cpus {
                at = self.parent[at];
            }
            return at;
        }
        // Else the deepest container that is not a PU.
        while matches!(self.nodes[at].what, What::Pu(_)) {
            at = self.parent[at];
        }
        at
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PackageKey {
    Id(i64),
    Siblings(CpuSet),
    Unknown,
}

/// A core being grouped: its sysfs core id and its PUs.
type CoreGroup = (Option<i64>, CpuSet);

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum CoreKey {
    Siblings(CpuSet),
    Id(Option<i64>, i64),
    Alone(u32),
}

/// Group, nest and number. Pure: the same raw facts give the same topology.
pub fn assemble(mut raw: RawTopology) -> Topology {
    raw.pus.sort_by_key(|p| p.os_index);
    raw.pus.dedup_by_key(|p| p.os_index);
    let mut notes = raw.notes.clone();
    let online: CpuSet = raw
        .pus
        .iter()
        .filter(|p| p.online)
        .map(|p| p.os_index)
        .collect();

    let (pkg_of, pkgs) = group_packages(&raw, &mut notes);
    let dies = group_dies(&raw, &pkg_of);
    let cores = group_cores(&raw, &online, &pkg_of, &mut notes);
    let caches = distinct_caches(&raw, &online);

    // Nest everything and number in depth-first order.
    let pkg_list: Vec<(PackageKey, CpuSet)> = pkgs.into_iter().collect();
    let die_list: Vec<((PackageKey, i64), CpuSet)> = dies.into_iter().collect();
    let core_list: Vec<((PackageKey, CoreKey), CoreGroup)> = cores.into_iter().collect();
    let tree = nest(&raw, &online, &pkg_list, &die_list, &caches, &core_list);
    let order = DfsOrder::of(&tree);

    let packages = number_packages(&order.packages, &pkg_list);
    let package_at: HashMap<u32, usize> = packages
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.cpus.iter().map(move |c| (c, i)))
        .collect();
    let dies_out = number_dies(&order.dies, &die_list, &package_at);
    let cores_out = number_cores(&order.cores, &core_list, &package_at);
    let caches_out = number_caches(&order.caches, &caches);

    let numa_nodes = numa_nodes(&raw, &mut notes);
    let memory_bytes = if numa_nodes.iter().all(|n| n.memory_bytes.is_some()) {
        Some(numa_nodes.iter().filter_map(|n| n.memory_bytes).sum())
    } else {
        raw.memory_bytes
    };
    let cpu_kinds = cpu_kinds(&raw);
    let pus = place_pus(
        &raw,
        &order.pu_logical,
        &Holders {
            package: &package_at,
            core: &index_of(cores_out.iter().map(|c| &c.cpus)),
            die: &index_of(dies_out.iter().map(|d| &d.cpus)),
            numa: &index_of(numa_nodes.iter().map(|n| &n.cpus)),
            kind: &index_of(cpu_kinds.iter().map(|k| &k.cpus)),
        },
    );

    Topology {
        source: raw.source.clone(),
        cpu_model: raw.cpu_model.clone(),
        memory_bytes,
        pus,
        packages,
        dies: dies_out,
        cores: cores_out,
        caches: caches_out,
        numa_nodes,
        cpu_kinds,
        cpuset_source: raw.cpuset_source.clone(),
        smt_control: raw.smt_control.clone(),
        notes,
        raw,
    }
}

/// Packages of the online PUs: by physical_package_id; POWER reports -1, so
/// fall back to the package sibling set (what hwloc does, giving one package
/// per core there), with a note saying so. Returns each PU's package key and
/// each package's PUs.
fn group_packages(
    raw: &RawTopology,
    notes: &mut Vec<String>,
) -> (BTreeMap<u32, PackageKey>, BTreeMap<PackageKey, CpuSet>) {
    let mut pkg_of: BTreeMap<u32, PackageKey> = BTreeMap::new();
    let mut pkgs: BTreeMap<PackageKey, CpuSet> = BTreeMap::new();
    let mut pkg_fallback = false;
    for pu in raw.pus.iter().filter(|p| p.online) {
        let key = match (pu.package_id, &pu.package_cpus) {
            (Some(id), _) if id >= 0 => PackageKey::Id(id),
            (_, Some(s)) if !s.is_empty() => {
                pkg_fallback = true;
                PackageKey::Siblings(s.clone())
            }
            _ => {
                pkg_fallback = true;
                PackageKey::Unknown
            }
        };
        pkgs.entry(key.clone()).or_default().insert(pu.os_index);
        pkg_of.insert(pu.os_index, key);
    }
    if pkg_fallback {
        notes.push(
            "the kernel does not give package ids (physical_package_id missing or -1): \
             packages were inferred from the package sibling sets"
                .to_string(),
        );
    }
    (pkg_of, pkgs)
}

/// Dies of the online PUs, by (package, die id): only worth showing when
/// some package has more than one, so empty otherwise.
fn group_dies(
    raw: &RawTopology,
    pkg_of: &BTreeMap<u32, PackageKey>,
) -> BTreeMap<(PackageKey, i64), CpuSet> {
    let mut dies_by_pkg: BTreeMap<PackageKey, BTreeSet<i64>> = BTreeMap::new();
    for pu in raw.pus.iter().filter(|p| p.online) {
        if let Some(d) = pu.die_id.filter(|d| *d >= 0) {
            dies_by_pkg
                .entry(pkg_of[&pu.os_index].clone())
                .or_default()
                .insert(d);
        }
    }
    let multi_die = dies_by_pkg.values().any(|s| s.len() > 1);
    let mut dies: BTreeMap<(PackageKey, i64), CpuSet> = BTreeMap::new();
    if multi_die {
        for pu in raw.pus.iter().filter(|p| p.online) {
            if let Some(d) = pu.die_id.filter(|d| *d >= 0) {
                dies.entry((pkg_of[&pu.os_index].clone(), d))
                    .or_default()
                    .insert(pu.os_index);
            }
        }
    }
    dies
}

/// Cores of the online PUs: by the core's sibling set; then by (die,
/// core_id) inside the package, because core ids repeat across packages;
/// else one core per PU, with a note saying so.
fn group_cores(
    raw: &RawTopology,
    online: &CpuSet,
    pkg_of: &BTreeMap<u32, PackageKey>,
    notes: &mut Vec<String>,
) -> BTreeMap<(PackageKey, CoreKey), CoreGroup> {
    let mut cores: BTreeMap<(PackageKey, CoreKey), CoreGroup> = BTreeMap::new();
    let mut core_fallback = false;
    let core_id_of: HashMap<u32, Option<i64>> =
        raw.pus.iter().map(|p| (p.os_index, p.core_id)).collect();
    // Per distinct sibling list (PUs of one core share it): its online part
    // and the core ids its PUs give, computed once rather than per PU.
    let mut sibling_facts: HashMap<&CpuSet, (CpuSet, BTreeSet<i64>)> = HashMap::new();
    for s in raw
        .pus
        .iter()
        .filter(|p| p.online)
        .filter_map(|p| p.core_cpus.as_ref())
    {
        sibling_facts.entry(s).or_insert_with(|| {
            let on = s.intersection(online);
            let ids = on
                .iter()
                .filter_map(|o| core_id_of.get(&o).copied().flatten())
                .collect();
            (on, ids)
        });
    }
    for pu in raw.pus.iter().filter(|p| p.online) {
        // AMD compute units (Bulldozer) list both cores of a module as
        // "thread siblings" but give them different core ids: like hwloc,
        // trust the ids and make one core per PU.
        let facts = pu.core_cpus.as_ref().map(|s| &sibling_facts[s]);
        let compute_unit = facts.is_some_and(|(_, ids)| ids.iter().any(|i| Some(*i) != pu.core_id));
        let key = match (&pu.core_cpus, pu.core_id) {
            _ if compute_unit => CoreKey::Alone(pu.os_index),
            (Some(s), _) if s.contains(pu.os_index) => {
                CoreKey::Siblings(facts.expect("listed").0.clone())
            }
            (_, Some(id)) if id >= 0 => CoreKey::Id(pu.die_id, id),
            _ => {
                core_fallback = true;
                CoreKey::Alone(pu.os_index)
            }
        };
        let e = cores
            .entry((pkg_of[&pu.os_index].clone(), key))
            .or_insert((pu.core_id.filter(|c| *c >= 0), CpuSet::new()));
        e.1.insert(pu.os_index);
    }
    if core_fallback {
        notes.push(
            "the kernel does not give core ids or sibling lists for some PUs: \
             each such PU is taken as a core of its own"
                .to_string(),
        );
    }
    cores
}

/// Caches: one object per distinct (level, type, sharing set), restricted
/// to the online PUs. Each PU reports every cache it sees, so the same
/// cache comes once per PU sharing it: a set finds the repeats in linear
/// time (a search of the list took minutes for 65536 one-core L1s).
fn distinct_caches(raw: &RawTopology, online: &CpuSet) -> Vec<RawCache> {
    let mut caches: Vec<RawCache> = Vec::new();
    let mut seen: HashSet<(u8, CacheType, CpuSet)> = HashSet::new();
    for c in &raw.caches {
        let cpus = c.cpus.intersection(online);
        if cpus.is_empty() {
            continue;
        }
        if seen.insert((c.level, c.cache_type, cpus.clone())) {
            caches.push(RawCache { cpus, ..c.clone() });
        }
    }
    caches
}

/// The grouped objects and the online PUs nested into one tree; each
/// object's `What` indexes its list.
fn nest(
    raw: &RawTopology,
    online: &CpuSet,
    pkg_list: &[(PackageKey, CpuSet)],
    die_list: &[((PackageKey, i64), CpuSet)],
    caches: &[RawCache],
    core_list: &[((PackageKey, CoreKey), CoreGroup)],
) -> Tree {
    let mut objects = Vec::new();
    for (i, (_, cpus)) in pkg_list.iter().enumerate() {
        objects.push((What::Package(i), 1, cpus.clone()));
    }
    for (i, (_, cpus)) in die_list.iter().enumerate() {
        objects.push((What::Die(i), 2, cpus.clone()));
    }
    for (i, c) in caches.iter().enumerate() {
        objects.push((
            What::Cache(i),
            cache_rank(c.level, c.cache_type),
            c.cpus.clone(),
        ));
    }
    for (i, (_, (_, cpus))) in core_list.iter().enumerate() {
        objects.push((What::Core(i), 50, cpus.clone()));
    }
    for p in raw.pus.iter().filter(|p| p.online) {
        objects.push((What::Pu(p.os_index), 60, CpuSet::from_iter([p.os_index])));
    }
    Tree::build(online.clone(), objects)
}

/// The order in which a depth-first walk of the tree meets each kind of
/// object (indexes into the grouped lists), and each online PU's logical
/// index: what numbers the objects the way lstopo does.
struct DfsOrder {
    packages: Vec<usize>,
    dies: Vec<usize>,
    caches: Vec<usize>,
    cores: Vec<usize>,
    pu_logical: HashMap<u32, u32>,
}

impl DfsOrder {
    fn of(tree: &Tree) -> DfsOrder {
        let mut order = DfsOrder {
            packages: Vec::new(),
            dies: Vec::new(),
            caches: Vec::new(),
            cores: Vec::new(),
            pu_logical: HashMap::new(),
        };
        for n in tree.dfs() {
            match tree.nodes[n].what {
                What::Machine => {}
                What::Package(i) => order.packages.push(i),
                What::Die(i) => order.dies.push(i),
                What::Cache(i) => order.caches.push(i),
                What::Core(i) => order.cores.push(i),
                What::Pu(os) => {
                    let l = order.pu_logical.len() as u32;
                    order.pu_logical.insert(os, l);
                }
            }
        }
        order
    }
}

/// The packages, numbered in depth-first order.
fn number_packages(order: &[usize], pkg_list: &[(PackageKey, CpuSet)]) -> Vec<Package> {
    order
        .iter()
        .enumerate()
        .map(|(id, &i)| Package {
            id,
            os_index: match &pkg_list[i].0 {
                PackageKey::Id(v) => u32::try_from(*v).ok(),
                _ => None,
            },
            cpus: pkg_list[i].1.clone(),
        })
        .collect()
}

/// The dies, numbered in depth-first order, each in the package holding
/// its first PU (`package_at`: each PU's package).
fn number_dies(
    order: &[usize],
    die_list: &[((PackageKey, i64), CpuSet)],
    package_at: &HashMap<u32, usize>,
) -> Vec<Die> {
    order
        .iter()
        .enumerate()
        .map(|(id, &i)| {
            let cpus = die_list[i].1.clone();
            Die {
                id,
                os_index: u32::try_from(die_list[i].0 .1).ok(),
                package: cpus
                    .first()
                    .and_then(|c| package_at.get(&c).copied())
                    .unwrap_or(0),
                cpus,
            }
        })
        .collect()
}

/// The cores, numbered in depth-first order, each in the package holding
/// its first PU.
fn number_cores(
    order: &[usize],
    core_list: &[((PackageKey, CoreKey), CoreGroup)],
    package_at: &HashMap<u32, usize>,
) -> Vec<Core> {
    order
        .iter()
        .enumerate()
        .map(|(id, &i)| {
            let (core_id, cpus) = &core_list[i].1;
            Core {
                id,
                os_index: core_id.and_then(|v| u32::try_from(v).ok()),
                package: cpus
                    .first()
                    .and_then(|c| package_at.get(&c).copied())
                    .unwrap_or(0),
                cpus: cpus.clone(),
            }
        })
        .collect()
}

/// The caches, numbered in depth-first order within each (level, type),
/// then listed by level, type and number.
fn number_caches(order: &[usize], caches: &[RawCache]) -> Vec<Cache> {
    let mut per_kind: BTreeMap<(u8, CacheType), usize> = BTreeMap::new();
    let mut caches_out: Vec<Cache> = order
        .iter()
        .map(|&i| {
            let c = &caches[i];
            let n = per_kind.entry((c.level, c.cache_type)).or_insert(0);
            *n += 1;
            Cache {
                id: *n - 1,
                level: c.level,
                cache_type: c.cache_type,
                size_bytes: c.size_bytes,
                line_size: c.line_size,
                ways: c.ways,
                cpus: c.cpus.clone(),
            }
        })
        .collect();
    caches_out.sort_by_key(|c| (c.level, c.cache_type, c.id));
    caches_out
}

/// NUMA nodes, by OS index; a machine without any is one node holding
/// every PU and all the memory, with a note saying so.
fn numa_nodes(raw: &RawTopology, notes: &mut Vec<String>) -> Vec<NumaNode> {
    let mut raw_nodes = raw.nodes.clone();
    raw_nodes.sort_by_key(|n| n.os_index);
    if raw_nodes.is_empty() {
        notes.push(
            "no NUMA information (no sys/devices/system/node): the machine is taken as one node"
                .to_string(),
        );
        raw_nodes.push(RawNode {
            os_index: 0,
            cpus: raw.pus.iter().map(|p| p.os_index).collect(),
            memory_bytes: raw.memory_bytes,
            allowed: true,
            distances: vec![10],
        });
    }
    raw_nodes
        .iter()
        .enumerate()
        .map(|(id, n)| NumaNode {
            id,
            os_index: n.os_index,
            cpus: n.cpus.clone(),
            memory_bytes: n.memory_bytes,
            allowed: n.allowed,
            distances: n.distances.clone(),
        })
        .collect()
}

/// CPU kinds: ranked by frequency, slowest first (hwloc's efficiency 0).
fn cpu_kinds(raw: &RawTopology) -> Vec<CpuKind> {
    let mut kinds = raw.kinds.clone();
    kinds.sort_by_key(|k| (k.base_freq_mhz, k.max_freq_mhz, k.cpus.first()));
    kinds
        .into_iter()
        .enumerate()
        .map(|(id, k)| CpuKind {
            id,
            efficiency: id as u32,
            name: k.name,
            cpus: k.cpus,
            max_freq_mhz: k.max_freq_mhz,
            base_freq_mhz: k.base_freq_mhz,
        })
        .collect()
}

/// Which object holds each PU, by index (the first that does): one pass
/// over the list, where a search per PU was quadratic.
fn index_of<'a>(sets: impl Iterator<Item = &'a CpuSet>) -> HashMap<u32, usize> {
    let mut m: HashMap<u32, usize> = HashMap::new();
    for (i, set) in sets.enumerate() {
        for c in set.iter() {
            m.entry(c).or_insert(i);
        }
    }
    m
}

/// For each PU, the index of the object of each kind that holds it.
struct Holders<'a> {
    package: &'a HashMap<u32, usize>,
    core: &'a HashMap<u32, usize>,
    die: &'a HashMap<u32, usize>,
    numa: &'a HashMap<u32, usize>,
    kind: &'a HashMap<u32, usize>,
}

/// Every PU (offline ones too, in no core, package or die) with its
/// logical index and the objects holding it.
fn place_pus(raw: &RawTopology, pu_logical: &HashMap<u32, u32>, at: &Holders) -> Vec<Pu> {
    raw.pus
        .iter()
        .map(|p| {
            let os = p.os_index;
            let (core, package, die) = if p.online {
                (
                    at.core.get(&os).copied(),
                    at.package.get(&os).copied(),
                    at.die.get(&os).copied(),
                )
            } else {
                (None, None, None)
            };
            Pu {
                os_index: os,
                logical_index: pu_logical.get(&os).copied(),
                core,
                package,
                die,
                // x86 kernels without clusters print 65535 (a u16 -1).
                cluster: p.cluster_id.filter(|c| *c >= 0 && *c != 0xffff),
                numa: at.numa.get(&os).copied(),
                kind: at.kind.get(&os).copied(),
                online: p.online,
                allowed: p.online && p.allowed,
            }
        })
        .collect()
}

impl Topology {
    /// The same machine as hwloc shows it by default: only online PUs this
    /// process may use, and only the objects that keep at least one of them.
    /// Logical indexes are renumbered accordingly.
    pub fn restricted_to_allowed(&self) -> Topology {
        let mut raw = self.raw.clone();
        for pu in &mut raw.pus {
            if !pu.allowed {
                pu.online = false;
            }
        }
        raw.nodes.retain(|n| n.allowed);
        assemble(raw)
    }
}
