//! Reading the topology from a Linux filesystem root: `sys/devices/system/cpu`,
//! `sys/devices/system/node`, the cgroup cpuset in effect, `proc/cpuinfo` and
//! `proc/meminfo`.
//!
//! Everything is read relative to the root, so an extracted dump of another
//! machine (hwloc's test dumps, `../shared/fixtures/sysfs`) reads exactly like
//! that machine. Real sysfs trees miss files all the time (offline CPUs have
//! no `topology/`, ARM boards no `cache/`, old kernels no `*_list` files,
//! POWER reports package id -1); each gap falls back to what hwloc does and
//! is recorded in [`Topology::notes`].

use std::cell::RefCell;
use std::fs;
use std::path::{Path, PathBuf};

use crate::assemble::assemble;
use crate::machine::Topology;
use crate::raw::{CacheType, RawCache, RawKind, RawNode, RawPu, RawTopology, Source};
use smtlab_types::cpuset::{CpuSet, CpuSetError, MAX_CPU};

#[derive(Debug, thiserror::Error)]
pub enum SysfsError {
    #[error("--fsroot {path}: no such directory")]
    NoRoot { path: PathBuf },
    #[error(
        "--fsroot {path}: no sys/devices/system/cpu/cpuN directories inside; \
         expected a Linux filesystem root (or an extracted dump) holding sys/ and proc/"
    )]
    NotLinuxRoot { path: PathBuf },
    #[error(
        "--fsroot {path}: every sys/devices/system/cpu/cpuN is above {max} (cpu{first}); \
         expected the kernel's CPU numbers"
    )]
    CpuNumbersTooLarge { path: PathBuf, first: u64, max: u32 },
}

/// Read the live machine: `/` plus this process's affinity mask.
pub fn read_live() -> Result<Topology, SysfsError> {
    let mut raw = read_raw(Path::new("/"))?;
    raw.source = Source::Live;
    if let Ok(affinity) = smtlab_sys::current_affinity() {
        let mut narrowed = false;
        for pu in &mut raw.pus {
            if pu.allowed && !affinity.contains(pu.os_index) {
                pu.allowed = false;
                narrowed = true;
            }
        }
        if narrowed {
            raw.cpuset_source = Some(match raw.cpuset_source.take() {
                Some(s) => format!("{s} and sched_getaffinity"),
                None => "sched_getaffinity".to_string(),
            });
        }
    }
    Ok(assemble(raw))
}

/// Read a dump (or any root) without consulting this process's affinity.
pub fn read_root(root: &Path) -> Result<Topology, SysfsError> {
    let mut raw = read_raw(root)?;
    raw.source = Source::FsRoot {
        path: root.to_path_buf(),
    };
    Ok(assemble(raw))
}

fn read_string(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn read_i64(p: &Path) -> Option<i64> {
    read_string(p)?.parse().ok()
}

/// `core_id`: a core number, 0 to `u32::MAX` as the kernel prints it
/// (hwloc reads it as unsigned); anything else (text, negative, larger) is
/// no id.
fn read_core_id(topology: &Path) -> Option<i64> {
    read_string(&topology.join("core_id"))?
        .parse::<u32>()
        .ok()
        .map(i64::from)
}

/// What a file holds, for a note: `missing`, or its text (shortened).
fn what_is_there(dir: &Path, files: &[&str]) -> String {
    match files.iter().find_map(|f| read_string(&dir.join(f))) {
        None => "missing".to_string(),
        Some(text) => {
            let short: String = text.chars().take(24).collect();
            format!("`{short}`")
        }
    }
}

fn read_list(p: &Path) -> Option<CpuSet> {
    CpuSet::parse_list(&read_string(p)?).ok()
}

fn read_mask(p: &Path) -> Option<CpuSet> {
    CpuSet::parse_mask(&read_string(p)?).ok()
}

/// The first readable of several set files: masks (`thread_siblings`) are
/// preferred to lists because hwloc reads masks, and some kernels have
/// printed wrong lists (the Bulldozer dump's L1i `shared_cpu_list`).
fn read_set(dir: &Path, masks: &[&str], lists: &[&str]) -> Option<CpuSet> {
    masks
        .iter()
        .find_map(|m| read_mask(&dir.join(m)))
        .or_else(|| lists.iter().find_map(|l| read_list(&dir.join(l))))
}

/// Reads CPU set files like [`read_list`] and [`read_set`], and remembers
/// the ones that exist but do not parse (garbage, or a CPU past
/// [`MAX_CPU`], which [`CpuSet`] refuses rather than allocating for
/// `0-4294967295`), for one note: an ignored file silently changes what is
/// allowed (a cpuset) or grouped (a node's or a cache's PUs).
struct SetFiles<'a> {
    root: &'a Path,
    /// (path inside the root, why it did not parse).
    unreadable: RefCell<Vec<(String, String)>>,
}

impl<'a> SetFiles<'a> {
    fn new(root: &'a Path) -> Self {
        SetFiles {
            root,
            unreadable: RefCell::new(Vec::new()),
        }
    }

    /// `None` for a missing file and for one that does not parse (noted).
    fn list(&self, p: &Path) -> Option<CpuSet> {
        self.parse(p, CpuSet::parse_list).ok().flatten()
    }

    /// `Ok(None)`: no such file; `Err`: there, but not a set (noted).
    fn parse(
        &self,
        p: &Path,
        parse: fn(&str) -> Result<CpuSet, CpuSetError>,
    ) -> Result<Option<CpuSet>, ()> {
        let Some(text) = read_string(p) else {
            return Ok(None);
        };
        parse(&text).map(Some).map_err(|e| {
            let shown = p.strip_prefix(self.root).unwrap_or(p);
            self.unreadable
                .borrow_mut()
                .push((shown.display().to_string(), e.to_string()));
        })
    }

    /// Like [`read_set`]; a file that does not parse is noted only when no
    /// other one does (a bad mask beside a good list is no loss).
    fn set(&self, dir: &Path, masks: &[&str], lists: &[&str]) -> Option<CpuSet> {
        let mark = self.unreadable.borrow().len();
        let files = masks
            .iter()
            .map(|m| (*m, CpuSet::parse_mask as fn(&str) -> _))
            .chain(
                lists
                    .iter()
                    .map(|l| (*l, CpuSet::parse_list as fn(&str) -> _)),
            );
        for (file, parse) in files {
            if let Ok(Some(set)) = self.parse(&dir.join(file), parse) {
                self.unreadable.borrow_mut().truncate(mark);
                return Some(set);
            }
        }
        // Keep one failure per call: the first file tried.
        self.unreadable.borrow_mut().truncate(mark + 1);
        None
    }

    /// The note, when some file did not parse.
    fn note(&self) -> Option<String> {
        let bad = self.unreadable.borrow();
        if bad.is_empty() {
            return None;
        }
        let shown: Vec<String> = bad
            .iter()
            .take(3)
            .map(|(file, why)| format!("{file} ({})", shorten(why, 100)))
            .collect();
        let more = match bad.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        Some(format!(
            "{} could not be read and {} ignored: {}{more}",
            if bad.len() == 1 {
                "1 CPU set".to_string()
            } else {
                format!("{} CPU sets", bad.len())
            },
            if bad.len() == 1 { "was" } else { "were" },
            shown.join(", ")
        ))
    }
}

/// At most `max` characters of `text`, with `…` when cut (a mask file can
/// hold thousands).
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `64K`, `4096K`, `24M`, or plain bytes.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1024 * 1024),
        'G' | 'g' => (&s[..s.len() - 1], 1024 * 1024 * 1024),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

/// `cpuN` or `nodeN` entries (sorted by N) up to [`MAX_CPU`], the largest
/// number a [`CpuSet`] read from text holds (so every PU and node can be
/// named in a CPU list or `cpuset.mems`), and a note naming the others:
/// a dump claiming `cpu4294967295` must not make a PU nothing can name.
fn kernel_numbered(
    root: &Path,
    rel: &str,
    prefix: &str,
) -> (Vec<(u32, PathBuf)>, Vec<u64>, Option<String>) {
    let dir = root.join(rel);
    let mut kept = Vec::new();
    let mut past: Vec<u64> = Vec::new();
    for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        let Some(digits) = name.strip_prefix(prefix) else {
            continue;
        };
        // Digits only (`cpufreq`, `cpuidle` are not CPUs); numbers past u64
        // are past the limit as well.
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        match digits.parse::<u64>() {
            Ok(n) if n <= u64::from(MAX_CPU) => kept.push((n as u32, e.path())),
            Ok(n) => past.push(n),
            Err(_) => past.push(u64::MAX),
        }
    }
    kept.sort();
    past.sort_unstable();
    let note = (!past.is_empty()).then(|| {
        let mut shown: Vec<String> = past.iter().take(8).map(u64::to_string).collect();
        if past.len() > 8 {
            shown.push(format!("… ({} in all)", past.len()));
        }
        format!(
            "{rel}/{prefix}N above {MAX_CPU} (the largest CPU or node number smtlab handles) \
             left out: {}",
            shown.join(",")
        )
    });
    (kept, past, note)
}

/// Numbered entries `prefixN` of a directory, sorted by N.
fn numbered_entries(dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
    let mut out: Vec<(u32, PathBuf)> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u32 = name.strip_prefix(prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    out.sort();
    out
}

fn read_raw(root: &Path) -> Result<RawTopology, SysfsError> {
    if !root.is_dir() {
        return Err(SysfsError::NoRoot {
            path: root.to_path_buf(),
        });
    }
    let cpu_dir = root.join("sys/devices/system/cpu");
    let (cpus, past_limit, cpus_note) = kernel_numbered(root, "sys/devices/system/cpu", "cpu");
    if cpus.is_empty() {
        return Err(match past_limit.first() {
            Some(&first) => SysfsError::CpuNumbersTooLarge {
                path: root.to_path_buf(),
                first,
                max: MAX_CPU,
            },
            None => SysfsError::NotLinuxRoot {
                path: root.to_path_buf(),
            },
        });
    }
    let mut raw = RawTopology::default();
    raw.notes.extend(cpus_note);
    let files = SetFiles::new(root);
    let global_online = files.list(&cpu_dir.join("online"));

    let cpuset = read_cpuset(root, &files);
    raw.cpuset_source = cpuset.source.clone();
    raw.smt_control = std::fs::read_to_string(cpu_dir.join("smt/control"))
        .ok()
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty());

    let mut missing_topology = Vec::new();
    let mut bad_core_id: Vec<(u32, String)> = Vec::new();
    let mut bad_siblings: Vec<(u32, String)> = Vec::new();
    let mut any_cache = false;
    for (os, dir) in &cpus {
        let online = match &global_online {
            Some(set) => set.contains(*os),
            None => read_i64(&dir.join("online")).is_none_or(|v| v != 0),
        };
        let t = dir.join("topology");
        if online && !t.is_dir() {
            missing_topology.push(*os);
        }
        let pu = RawPu {
            os_index: *os,
            online,
            allowed: cpuset.cpus.as_ref().is_none_or(|c| c.contains(*os)),
            package_id: read_i64(&t.join("physical_package_id")),
            package_cpus: files.set(
                &t,
                &["package_cpus", "core_siblings"],
                &["package_cpus_list", "core_siblings_list"],
            ),
            die_id: read_i64(&t.join("die_id")),
            cluster_id: read_i64(&t.join("cluster_id")),
            core_id: read_core_id(&t),
            core_cpus: read_set(
                &t,
                &["core_cpus", "thread_siblings"],
                &["core_cpus_list", "thread_siblings_list"],
            ),
        };
        if online && t.is_dir() {
            if pu.core_id.is_none() {
                bad_core_id.push((*os, what_is_there(&t, &["core_id"])));
            }
            match &pu.core_cpus {
                None => bad_siblings.push((
                    *os,
                    what_is_there(&t, &["thread_siblings_list", "thread_siblings"]),
                )),
                Some(set) if !set.contains(*os) => {
                    bad_siblings.push((*os, format!("`{}` without the CPU itself", set.to_list())))
                }
                Some(_) => {}
            }
        }
        if online {
            for (_, idx) in numbered_entries(&dir.join("cache"), "index") {
                if let Some(c) = read_cache(&files, &idx, *os, pu.core_cpus.as_ref()) {
                    any_cache = true;
                    raw.caches.push(c);
                }
            }
        }
        raw.pus.push(pu);
    }
    if !missing_topology.is_empty() {
        raw.notes.push(format!(
            "no topology/ directory for online CPUs {}: each is taken as a core of its own",
            missing_topology.iter().copied().collect::<CpuSet>()
        ));
    }
    // Like a missing package id: a core id or sibling list the kernel did
    // not give (or gave as garbage) may split a core into several, so the
    // user is told which CPUs and what was read.
    for (file, bad) in [
        ("core_id", &bad_core_id),
        ("thread_siblings", &bad_siblings),
    ] {
        if !bad.is_empty() {
            let cpus: CpuSet = bad.iter().map(|(c, _)| *c).collect();
            let mut seen: Vec<&str> = bad.iter().map(|(_, w)| w.as_str()).collect();
            seen.dedup();
            seen.truncate(3);
            raw.notes.push(format!(
                "topology/{file} of CPUs {cpus} is missing or not valid ({}): their cores were \
                 inferred from the other files, and may be split or merged",
                seen.join(", ")
            ));
        }
    }
    if !any_cache {
        raw.notes
            .push("no cache information in sys/devices/system/cpu/cpuN/cache".to_string());
    }

    raw.nodes = read_nodes(root, &files, cpuset.mems.as_ref(), &mut raw.notes);
    raw.kinds = read_kinds(root, &files, &cpus, &mut raw.notes);
    raw.notes.extend(files.note());
    raw.cpu_model = read_cpu_model(root);
    raw.memory_bytes = read_string(&root.join("proc/meminfo"))
        .as_deref()
        .and_then(meminfo_total);
    Ok(raw)
}

fn read_cache(
    files: &SetFiles,
    dir: &Path,
    cpu: u32,
    core_cpus: Option<&CpuSet>,
) -> Option<RawCache> {
    let cache_type = match read_string(&dir.join("type"))?.as_str() {
        "Data" => CacheType::Data,
        "Instruction" => CacheType::Instruction,
        "Unified" => CacheType::Unified,
        // Trace caches and the like: hwloc ignores them too.
        _ => return None,
    };
    let level = read_i64(&dir.join("level"))? as u8;
    let mut cpus = files
        .set(dir, &["shared_cpu_map"], &["shared_cpu_list"])
        .unwrap_or_default();
    if cpus.is_empty() {
        // IA-64 kernels print an empty sharing map: like hwloc, take the
        // cache as shared by the core's threads.
        cpus = core_cpus.cloned().unwrap_or_default();
    }
    cpus.insert(cpu);
    let positive = |v: Option<i64>| v.filter(|v| *v > 0).map(|v| v as u32);
    Some(RawCache {
        level,
        cache_type,
        size_bytes: read_string(&dir.join("size"))
            .as_deref()
            .and_then(parse_size)
            .filter(|s| *s > 0),
        line_size: positive(read_i64(&dir.join("coherency_line_size"))),
        ways: positive(read_i64(&dir.join("ways_of_associativity"))),
        cpus,
    })
}

fn meminfo_total(text: &str) -> Option<u64> {
    // `MemTotal:  16433296 kB` in /proc/meminfo, `Node 0 MemTotal: ... kB` per node.
    let line = text.lines().find(|l| l.contains("MemTotal:"))?;
    let after = line.split("MemTotal:").nth(1)?.trim();
    let kb: u64 = after.split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

fn read_nodes(
    root: &Path,
    files: &SetFiles,
    mems: Option<&CpuSet>,
    notes: &mut Vec<String>,
) -> Vec<RawNode> {
    let (entries, _, note) = kernel_numbered(root, "sys/devices/system/node", "node");
    notes.extend(note);
    let mut nodes: Vec<RawNode> = entries
        .iter()
        .map(|(os, dir)| RawNode {
            os_index: *os,
            cpus: files
                .set(dir, &["cpumap"], &["cpulist"])
                .unwrap_or_default(),
            memory_bytes: read_string(&dir.join("meminfo"))
                .as_deref()
                .and_then(meminfo_total),
            allowed: mems.is_none_or(|m| m.contains(*os)),
            distances: read_string(&dir.join("distance"))
                .map(|s| {
                    s.split_whitespace()
                        .filter_map(|v| v.parse().ok())
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect();
    nodes.sort_by_key(|n| n.os_index);
    nodes
}

fn read_cpu_model(root: &Path) -> Option<String> {
    let text = fs::read_to_string(root.join("proc/cpuinfo")).ok()?;
    // x86 says "model name", POWER "cpu", old ARM "Processor", IA-64 "family".
    for key in ["model name", "cpu", "Processor", "family"] {
        for line in text.lines() {
            if let Some((k, v)) = line.split_once(':') {
                if k.trim() == key && !v.trim().is_empty() {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    None
}

/// Hybrid CPUs: the kernel's PMU device lists (`cpu_core`, `cpu_atom`) when
/// present, else cpufreq base (or maximum) frequencies, grouped. Reported
/// only when there are two kinds or more.
fn read_kinds(
    root: &Path,
    files: &SetFiles,
    cpus: &[(u32, PathBuf)],
    notes: &mut Vec<String>,
) -> Vec<RawKind> {
    let freq = |os: u32, file: &str| -> Option<u32> {
        let dir = root.join(format!("sys/devices/system/cpu/cpu{os}/cpufreq"));
        read_i64(&dir.join(file))
            .or_else(|| {
                // Some dumps keep only cpufreq/policyN, naming its CPUs.
                numbered_entries(&root.join("sys/devices/system/cpu/cpufreq"), "policy")
                    .into_iter()
                    .find(|(_, p)| {
                        read_list(&p.join("related_cpus"))
                            .or_else(|| read_list(&p.join("affected_cpus")))
                            .is_some_and(|s| s.contains(os))
                    })
                    .and_then(|(_, p)| read_i64(&p.join(file)))
            })
            .map(|khz| (khz / 1000) as u32)
    };
    let mut kinds = Vec::new();
    for (name, dev) in [("P-core", "cpu_core"), ("E-core", "cpu_atom")] {
        if let Some(set) = files
            .list(
                &root
                    .join("sys/bus/event_source/devices")
                    .join(dev)
                    .join("cpus"),
            )
            .or_else(|| files.list(&root.join("sys/devices").join(dev).join("cpus")))
        {
            let first = set.first();
            kinds.push(RawKind {
                name: Some(name.to_string()),
                max_freq_mhz: first.and_then(|c| freq(c, "cpuinfo_max_freq")),
                base_freq_mhz: first.and_then(|c| freq(c, "base_frequency")),
                cpus: set,
            });
        }
    }
    if kinds.len() >= 2 {
        return kinds;
    }
    kinds.clear();
    let base: Vec<(u32, Option<u32>)> = cpus
        .iter()
        .map(|(os, _)| (*os, freq(*os, "base_frequency")))
        .collect();
    let use_base = base.iter().all(|(_, f)| f.is_some());
    let mut groups: std::collections::BTreeMap<u32, CpuSet> = Default::default();
    for (os, b) in &base {
        let key = if use_base {
            *b
        } else {
            freq(*os, "cpuinfo_max_freq")
        };
        if let Some(k) = key {
            groups.entry(k).or_default().insert(*os);
        }
    }
    if groups.len() < 2 {
        return Vec::new();
    }
    notes.push(format!(
        "hybrid CPU kinds inferred from cpufreq {} frequencies",
        if use_base { "base" } else { "maximum" }
    ));
    for (f, set) in groups {
        let first = set.first().expect("non-empty group");
        kinds.push(RawKind {
            name: None,
            max_freq_mhz: freq(first, "cpuinfo_max_freq"),
            base_freq_mhz: if use_base { Some(f) } else { None },
            cpus: set,
        });
    }
    kinds
}

/// The cgroup cpuset in effect for this process, read inside the root.
#[derive(Debug, Default)]
struct CpusetFacts {
    cpus: Option<CpuSet>,
    mems: Option<CpuSet>,
    source: Option<String>,
}

struct Mount {
    point: String,
    fstype: String,
    options: String,
}

fn mounts(root: &Path) -> Vec<Mount> {
    read_string(&root.join("proc/mounts"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| Mount {
                point: f[1].to_string(),
                fstype: f[2].to_string(),
                options: f[3].to_string(),
            })
        })
        .collect()
}

/// Look for `names` in `mount/path`, then its parents up to the mount point:
/// a child cgroup without a cpuset file inherits its parent's. One that is
/// there but does not parse ends the search (noted by `files`): it is the
/// set in effect, unknown, and like hwloc nothing is restricted then,
/// rather than guessing from the parent.
fn find_up(
    root: &Path,
    files: &SetFiles,
    mount: &str,
    path: &str,
    names: &[&str],
) -> Option<(CpuSet, String)> {
    let mut rel = PathBuf::from(path.trim_start_matches('/'));
    loop {
        let mut unreadable = false;
        for f in names {
            let shown = Path::new(mount).join(&rel).join(f);
            let p = root.join(shown.strip_prefix("/").unwrap_or(&shown));
            match files.parse(&p, CpuSet::parse_list) {
                Ok(Some(set)) => return Some((set, shown.display().to_string())),
                Ok(None) => {}
                Err(_) => unreadable = true,
            }
        }
        if unreadable || !rel.pop() {
            return None;
        }
    }
}

fn read_cpuset(root: &Path, files: &SetFiles) -> CpusetFacts {
    let mounts = mounts(root);
    let cgroup = read_string(&root.join("proc/self/cgroup")).unwrap_or_default();
    let mut v1_path = None;
    let mut v2_path = None;
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(hier), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if hier == "0" && ctrls.is_empty() {
            v2_path = Some(path.to_string());
        } else if ctrls.split(',').any(|c| c == "cpuset") {
            v1_path = Some(path.to_string());
        }
    }
    let lookup = |mount: &Mount, path: &str, cpus: &[&str], mems: &[&str]| {
        let c = find_up(root, files, &mount.point, path, cpus);
        let m = find_up(root, files, &mount.point, path, mems);
        c.map(|(cpus, src)| CpusetFacts {
            cpus: Some(cpus),
            mems: m.map(|(m, _)| m),
            source: Some(src),
        })
    };
    // The set's name: /proc/self/cgroup's cpuset line, or on kernels
    // without that file /proc/self/cpuset (as hwloc falls back).
    let self_cpuset = read_string(&root.join("proc/self/cpuset"));
    let v1_name = v1_path.clone().or_else(|| self_cpuset.clone());
    if let Some(path) = &v1_name {
        if let Some(m) = mounts
            .iter()
            .find(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "cpuset"))
        {
            // Mounted with `noprefix`, the controller's files are `cpus` and
            // `mems`, without their `cpuset.` prefix.
            let noprefix = m.options.split(',').any(|o| o == "noprefix");
            let (cpus, mems): (&[&str], &[&str]) = if noprefix {
                (&["effective_cpus", "cpus"], &["effective_mems", "mems"])
            } else {
                (
                    &["cpuset.effective_cpus", "cpuset.cpus"],
                    &["cpuset.effective_mems", "cpuset.mems"],
                )
            };
            if let Some(f) = lookup(m, path, cpus, mems) {
                return f;
            }
        }
    }
    if let Some(path) = &v2_path {
        if let Some(m) = mounts.iter().find(|m| m.fstype == "cgroup2") {
            if let Some(f) = lookup(
                m,
                path,
                &["cpuset.cpus.effective"],
                &["cpuset.mems.effective"],
            ) {
                return f;
            }
        }
    }
    // The old cpuset filesystem: /proc/self/cpuset names the set.
    if let Some(path) = self_cpuset {
        if let Some(m) = mounts.iter().find(|m| m.fstype == "cpuset") {
            if let Some(f) = lookup(m, &path, &["cpus", "cpuset.cpus"], &["mems", "cpuset.mems"]) {
                return f;
            }
        }
    }
    CpusetFacts::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64K"), Some(65536));
        assert_eq!(parse_size("24576K\n"), Some(24576 * 1024));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn meminfo() {
        assert_eq!(
            meminfo_total("Node 1 MemTotal:       8388608 kB\nNode 1 MemFree: 1 kB"),
            Some(8 << 30)
        );
        assert_eq!(meminfo_total("MemTotal: 1024 kB"), Some(1 << 20));
    }

    #[test]
    fn missing_root_is_an_error_naming_the_flag() {
        let e = read_root(Path::new("/nonexistent/smtlab")).unwrap_err();
        assert!(e.to_string().starts_with("--fsroot /nonexistent/smtlab"));
        let dir = tempfile::tempdir().unwrap();
        let e = read_root(dir.path()).unwrap_err();
        assert!(matches!(e, SysfsError::NotLinuxRoot { .. }));
    }

    #[test]
    fn a_bare_minimum_root_reads_with_fallbacks() {
        let dir = tempfile::tempdir().unwrap();
        for c in 0..3 {
            fs::create_dir_all(dir.path().join(format!("sys/devices/system/cpu/cpu{c}"))).unwrap();
        }
        let t = read_root(dir.path()).unwrap();
        assert_eq!(t.pus.len(), 3);
        assert_eq!(t.cores.len(), 3);
        assert_eq!(t.numa_nodes.len(), 1);
        assert!(t.notes.iter().any(|n| n.contains("no cache information")));
        assert!(t.notes.iter().any(|n| n.contains("one node")));
    }

    /// Write `text` to `root/rel`, creating directories.
    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A machine with sparse CPU numbers (0, 4, 9, 130), SMT pairs 0+130 and
    /// 4+9, core ids repeated in two packages, list-only files (no masks), an
    /// offline CPU without topology, and a cgroup v2 cpuset set on a parent
    /// cgroup only. (Cores sharing an L2 are covered by the real dumps.)
    fn sparse_root(root: &Path) {
        let cpu = "sys/devices/system/cpu";
        for (os, pkg, core, sibs) in [
            (0, 0, 0, "0,130"),
            (130, 0, 0, "0,130"),
            (4, 1, 0, "4,9"),
            (9, 1, 0, "4,9"),
        ] {
            put(
                root,
                &format!("{cpu}/cpu{os}/topology/physical_package_id"),
                &format!("{pkg}\n"),
            );
            put(
                root,
                &format!("{cpu}/cpu{os}/topology/core_id"),
                &format!("{core}\n"),
            );
            put(
                root,
                &format!("{cpu}/cpu{os}/topology/thread_siblings_list"),
                sibs,
            );
            put(root, &format!("{cpu}/cpu{os}/cache/index0/level"), "2");
            put(root, &format!("{cpu}/cpu{os}/cache/index0/type"), "Unified");
            put(root, &format!("{cpu}/cpu{os}/cache/index0/size"), "1024K");
            let l2 = if pkg == 0 { "0,130" } else { "4,9" };
            put(
                root,
                &format!("{cpu}/cpu{os}/cache/index0/shared_cpu_list"),
                l2,
            );
        }
        // CPU 77 exists but is offline, without a topology directory.
        put(root, &format!("{cpu}/cpu77/online"), "0\n");
        put(root, &format!("{cpu}/online"), "0,4,9,130\n");
        put(root, "sys/devices/system/node/node0/cpulist", "0,130");
        put(root, "sys/devices/system/node/node2/cpulist", "4,9");
        put(
            root,
            "sys/devices/system/node/node2/meminfo",
            "Node 2 MemTotal: 2048 kB\n",
        );
        put(root, "proc/self/cgroup", "0::/app.slice/job.scope\n");
        put(
            root,
            "proc/mounts",
            "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n",
        );
        put(
            root,
            "sys/fs/cgroup/app.slice/cpuset.cpus.effective",
            "0,4,130\n",
        );
        put(root, "sys/fs/cgroup/app.slice/cpuset.mems.effective", "2\n");
        fs::create_dir_all(root.join("sys/fs/cgroup/app.slice/job.scope")).unwrap();
    }

    /// Two cores of two PUs (0+1, 2+3), every file right, then `edit`.
    fn two_cores(root: &Path, edit: impl Fn(&Path)) {
        let cpu = "sys/devices/system/cpu";
        for os in 0..4u32 {
            put(
                root,
                &format!("{cpu}/cpu{os}/topology/physical_package_id"),
                "0\n",
            );
            put(
                root,
                &format!("{cpu}/cpu{os}/topology/core_id"),
                &format!("{}\n", os / 2),
            );
            let sibs = if os < 2 { "0-1" } else { "2-3" };
            put(
                root,
                &format!("{cpu}/cpu{os}/topology/thread_siblings_list"),
                sibs,
            );
        }
        put(root, &format!("{cpu}/online"), "0-3\n");
        edit(root);
    }

    #[test]
    fn a_bad_core_id_or_sibling_list_is_said_in_a_note() {
        let cpu1 = "sys/devices/system/cpu/cpu1/topology";
        let notes = |edit: &dyn Fn(&Path)| {
            let dir = tempfile::tempdir().unwrap();
            two_cores(dir.path(), edit);
            read_raw(dir.path()).unwrap().notes
        };
        assert!(
            !notes(&|_: &Path| {})
                .iter()
                .any(|n| n.contains("topology/")),
            "a sound machine has no such note"
        );
        // Garbage, negative, huge and missing, for both files (the sibling
        // list also without the CPU itself, and huge as a mask).
        for (file, text, shown) in [
            ("core_id", Some("abc\n"), "`abc`"),
            ("core_id", Some("-3\n"), "`-3`"),
            ("core_id", Some("99999999999\n"), "`99999999999`"),
            ("core_id", None, "missing"),
            ("thread_siblings_list", Some("x-y\n"), "`x-y`"),
            ("thread_siblings_list", Some("-1\n"), "`-1`"),
            (
                "thread_siblings_list",
                Some("0-4294967295\n"),
                "`0-4294967295`",
            ),
            ("thread_siblings_list", None, "missing"),
            (
                "thread_siblings_list",
                Some("0\n"),
                "`0` without the CPU itself",
            ),
        ] {
            let n = notes(&|root: &Path| {
                let p = root.join(cpu1).join(file);
                match text {
                    Some(t) => fs::write(&p, t).unwrap(),
                    None => fs::remove_file(&p).unwrap(),
                }
            });
            let kind = if file == "core_id" {
                "core_id"
            } else {
                "thread_siblings"
            };
            let want = format!("topology/{kind} of CPUs 1 is missing or not valid ({shown})");
            assert!(
                n.iter().any(|l| l.starts_with(&want)),
                "{file} {text:?}: {n:?}"
            );
        }
        // A mask with a bit past CPU 65535 (thread_siblings, read before
        // the list): the list is used, so nothing is said.
        let n = notes(&|root: &Path| {
            let mut mask = "2".to_string();
            mask.push_str(&",00000000".repeat(2048));
            fs::write(root.join(cpu1).join("thread_siblings"), mask).unwrap();
        });
        assert!(!n.iter().any(|l| l.contains("topology/")), "{n:?}");
        let n = notes(&|root: &Path| {
            fs::write(
                root.join(cpu1).join("thread_siblings"),
                "1".to_string() + &"0".repeat(20_000),
            )
            .unwrap();
            fs::remove_file(root.join(cpu1).join("thread_siblings_list")).unwrap();
        });
        assert!(
            n.iter().any(|l| l
                .starts_with("topology/thread_siblings of CPUs 1 is missing or not valid (`10000")),
            "{n:?}"
        );
    }

    #[test]
    fn cpu_and_node_numbers_past_the_limit_are_left_out_with_a_note() {
        // cpuN and nodeN directories are the kernel's numbers; a dump that
        // claims CPU 4294967295 must not make a PU no CPU list can name
        // (lists stop at MAX_CPU), nor anything sized by the number.
        let dir = tempfile::tempdir().unwrap();
        two_cores(dir.path(), |root| {
            for n in ["70000", "4294967295"] {
                put(
                    root,
                    &format!("sys/devices/system/cpu/cpu{n}/topology/core_id"),
                    "0\n",
                );
            }
            put(root, "sys/devices/system/node/node0/cpulist", "0-3\n");
            put(root, "sys/devices/system/node/node99999/cpulist", "0\n");
        });
        let t = read_root(dir.path()).unwrap();
        assert_eq!(t.all().to_list(), "0-3");
        let ids: Vec<u32> = t.numa_nodes.iter().map(|n| n.os_index).collect();
        assert_eq!(ids, [0]);
        let note = |what: &str| {
            t.notes
                .iter()
                .find(|n| n.contains(what))
                .cloned()
                .unwrap_or_else(|| panic!("no note about {what}: {:?}", t.notes))
        };
        assert_eq!(
            note("cpuN"),
            "sys/devices/system/cpu/cpuN above 65535 (the largest CPU or node number smtlab \
             handles) left out: 70000,4294967295"
        );
        assert_eq!(
            note("nodeN"),
            "sys/devices/system/node/nodeN above 65535 (the largest CPU or node number smtlab \
             handles) left out: 99999"
        );

        // Only such CPUs: not a machine, said in one line.
        let dir = tempfile::tempdir().unwrap();
        put(
            dir.path(),
            "sys/devices/system/cpu/cpu4294967295/topology/core_id",
            "0\n",
        );
        let e = read_root(dir.path()).unwrap_err();
        assert!(matches!(e, SysfsError::CpuNumbersTooLarge { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.ends_with(
                ": every sys/devices/system/cpu/cpuN is above 65535 (cpu4294967295); \
                 expected the kernel's CPU numbers"
            ),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
    }

    #[test]
    fn cpu_sets_that_do_not_parse_are_said_in_a_note_not_dropped_silently() {
        // `0-4294967295` must not allocate a set of 4 billion CPUs (CpuSet
        // refuses past MAX_CPU); the file is then ignored, and the user told
        // which file and why, since ignoring a cpuset makes every PU allowed
        // and ignoring a node's list leaves it without CPUs.
        let dir = tempfile::tempdir().unwrap();
        two_cores(dir.path(), |root| {
            put(root, "sys/devices/system/cpu/online", "0-4294967295\n");
            put(
                root,
                "sys/devices/system/node/node0/cpulist",
                "0-4294967295\n",
            );
            put(root, "proc/self/cpuset", "/job\n");
            put(
                root,
                "proc/mounts",
                "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n",
            );
            put(root, "sys/fs/cgroup/cpuset/cpuset.cpus", "0-1\n");
            put(
                root,
                "sys/fs/cgroup/cpuset/job/cpuset.cpus",
                "0-4294967295\n",
            );
        });
        let t = read_root(dir.path()).unwrap();
        assert_eq!(t.online().to_list(), "0-3", "per-CPU online files");
        assert_eq!(
            t.allowed().to_list(),
            "0-3",
            "like hwloc, an unreadable cpuset restricts nothing (not its parent's)"
        );
        let n: Vec<&String> = t.notes.iter().filter(|n| n.contains("CPU sets")).collect();
        assert_eq!(n.len(), 1, "{:?}", t.notes);
        let n = n[0];
        for part in [
            "3 CPU sets could not be read and were ignored: ",
            "sys/devices/system/cpu/online (CPU 4294967295 in `0-4294967295` is larger than 65535)",
            "sys/devices/system/node/node0/cpulist (CPU 4294967295",
            "sys/fs/cgroup/cpuset/job/cpuset.cpus (CPU 4294967295",
        ] {
            assert!(n.contains(part), "{part}: {n}");
        }
        // A sound dump has no such note (the fixtures are checked too).
        let dir = tempfile::tempdir().unwrap();
        sparse_root(dir.path());
        let t = read_root(dir.path()).unwrap();
        assert!(
            !t.notes.iter().any(|n| n.contains("CPU sets")),
            "{:?}",
            t.notes
        );
    }

    #[test]
    fn sparse_numbering_repeated_core_ids_and_cgroup_v2_walk_up() {
        let dir = tempfile::tempdir().unwrap();
        sparse_root(dir.path());
        let t = read_root(dir.path()).unwrap();
        assert_eq!(t.all().to_list(), "0,4,9,77,130");
        assert_eq!(t.online().to_list(), "0,4,9,130");
        assert_eq!(t.allowed().to_list(), "0,4,130");
        assert_eq!(
            t.cpuset_source.as_deref(),
            Some("/sys/fs/cgroup/app.slice/cpuset.cpus.effective")
        );
        assert_eq!(t.packages.len(), 2);
        assert_eq!(t.cores.len(), 2, "core id 0 in both packages is two cores");
        assert_eq!(t.cores[0].cpus.to_list(), "0,130");
        assert_eq!(t.cores[1].cpus.to_list(), "4,9");
        assert_eq!(t.pu(77).unwrap().core, None);
        assert!(!t.pu(77).unwrap().online);
        // Logical order follows the tree: P#130 is L#1, before P#4.
        assert_eq!(t.pu(130).unwrap().logical_index, Some(1));
        assert_eq!(t.pu(4).unwrap().logical_index, Some(2));
        assert_eq!(t.caches.len(), 2);
        let nodes: Vec<(u32, bool, Option<u64>)> = t
            .numa_nodes
            .iter()
            .map(|n| (n.os_index, n.allowed, n.memory_bytes))
            .collect();
        assert_eq!(nodes, [(0, false, None), (2, true, Some(2 << 20))]);
        assert_eq!(t.pu(9).unwrap().numa, Some(1));
    }

    #[test]
    fn cgroup_v1_cpuset_is_read_through_proc_self_cgroup() {
        let dir = tempfile::tempdir().unwrap();
        sparse_root(dir.path());
        put(dir.path(), "proc/self/cgroup", "3:cpuset:/batch\n0::/\n");
        put(
            dir.path(),
            "proc/mounts",
            "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n",
        );
        put(
            dir.path(),
            "sys/fs/cgroup/cpuset/batch/cpuset.effective_cpus",
            "9,130",
        );
        let t = read_root(dir.path()).unwrap();
        assert_eq!(t.allowed().to_list(), "9,130");
    }
}
