//! Synthetic topologies in a subset of hwloc's synthetic syntax, so plans can
//! be made for machines we do not have: `core:8 pu:4` is an UltraSPARC T1,
//! `package:1 core:4 pu:2` a Xeon X5570, `package:2 numa:2 l3:1 core:8 pu:2`
//! a two-socket server with two NUMA nodes per socket.
//!
//! Levels, outermost first, each at most once: `package` (or `pack`,
//! `socket`), `numa` (or `node`; anywhere above `core`), `l3`, `l2`, `l1`
//! (an L1 data cache), `core`, `pu`. Missing `package` means one package,
//! missing `pu` one PU per core. A level may carry attributes in
//! parentheses: `l3:1(size=32MiB)`, `numa:2(memory=64GiB)`. Sizes are binary
//! (`KB` = `KiB`). PUs are numbered 0.. in depth-first order, as hwloc does;
//! everything is online and allowed.

use crate::assemble::assemble;
use crate::machine::Topology;
use crate::raw::{CacheType, RawCache, RawNode, RawPu, RawTopology, Source};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--synthetic \"{spec}\": {reason}")]
pub struct SyntheticError {
    pub spec: String,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Package,
    Numa,
    L3,
    L2,
    L1,
    Core,
    Pu,
}

const VALID: &str = "valid levels are package, numa, l3, l2, l1, core, pu \
                     (e.g. \"package:2 core:8 pu:2\")";

/// Upper bound on PUs, matching [`smtlab_types::cpuset::MAX_CPU`].
const MAX_PUS: u64 = smtlab_types::cpuset::MAX_CPU as u64 + 1;

/// Upper bound on NUMA nodes: Linux's own (`MAX_NUMNODES` at its largest,
/// 1024). The distance matrix is nodes x nodes, so 65536 nodes would need
/// 17 GB.
const MAX_NUMA_NODES: u64 = 1024;

fn parse_level(name: &str) -> Option<Level> {
    Some(match name.to_ascii_lowercase().as_str() {
        "package" | "pack" | "socket" => Level::Package,
        "numa" | "node" | "numanode" => Level::Numa,
        "l3" | "l3cache" => Level::L3,
        "l2" | "l2cache" => Level::L2,
        "l1" | "l1d" | "l1cache" | "l1dcache" => Level::L1,
        "core" => Level::Core,
        "pu" => Level::Pu,
        _ => return None,
    })
}

fn parse_bytes(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(mult)
}

struct Spec {
    level: Level,
    count: u64,
    bytes: Option<u64>,
}

fn parse_spec(spec: &str) -> Result<Vec<Spec>, SyntheticError> {
    let err = |reason: String| SyntheticError {
        spec: spec.to_string(),
        reason,
    };
    let mut out: Vec<Spec> = Vec::new();
    for token in spec.split_whitespace() {
        let (body, attrs) = match token.split_once('(') {
            Some((b, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(|| {
                    err(format!("`{token}`: attribute list is not closed with `)`"))
                })?;
                (b, Some(inner))
            }
            None => (token, None),
        };
        let (name, count) = body
            .split_once(':')
            .ok_or_else(|| err(format!("`{token}` is not LEVEL:COUNT; {VALID}")))?;
        let level = parse_level(name)
            .ok_or_else(|| err(format!("`{token}`: unknown level `{name}`; {VALID}")))?;
        let count: u64 = count.parse().ok().filter(|c| *c > 0).ok_or_else(|| {
            err(format!(
                "`{token}`: count `{count}` is not a positive integer"
            ))
        })?;
        let mut bytes = None;
        if let Some(attrs) = attrs {
            for a in attrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                let (k, v) = a
                    .split_once('=')
                    .ok_or_else(|| err(format!("`{token}`: attribute `{a}` is not KEY=VALUE")))?;
                let ok_key = match level {
                    Level::Numa => k == "memory",
                    Level::L3 | Level::L2 | Level::L1 => k == "size",
                    _ => false,
                };
                if !ok_key {
                    return Err(err(format!(
                        "`{token}`: attribute `{k}` is not known here; caches take size=, numa takes memory="
                    )));
                }
                bytes =
                    Some(parse_bytes(v).ok_or_else(|| {
                        err(format!("`{token}`: `{v}` is not a size like 32MiB"))
                    })?);
            }
        }
        if out.iter().any(|s| s.level == level) {
            return Err(err(format!("`{token}`: level `{name}` appears twice")));
        }
        if let Some(prev) = out.last() {
            // NUMA may sit above or below the package; everything else nests
            // strictly in the documented order.
            let ordered =
                prev.level < level || (prev.level == Level::Numa && level == Level::Package);
            if !ordered || (level == Level::Numa && out.iter().any(|s| s.level >= Level::Core)) {
                return Err(err(format!(
                    "`{token}` must come before `{}`: list levels outermost first \
                     (package, numa, l3, l2, l1, core, pu)",
                    spec.split_whitespace()
                        .find(|t| t.split(':').next().and_then(parse_level) == Some(prev.level))
                        .unwrap_or("?")
                )));
            }
        }
        out.push(Spec {
            level,
            count,
            bytes,
        });
    }
    if out.is_empty() {
        return Err(err(format!("empty description; {VALID}")));
    }
    if !out.iter().any(|s| s.level == Level::Pu) {
        out.push(Spec {
            level: Level::Pu,
            count: 1,
            bytes: None,
        });
    }
    if !out.iter().any(|s| s.level == Level::Core) {
        // No core level (`pu:4`): every PU is a core of its own, as hwloc
        // shows it; the PU level (always last) becomes the core level.
        let last = out.len() - 1;
        out[last].level = Level::Core;
        out.push(Spec {
            level: Level::Pu,
            count: 1,
            bytes: None,
        });
    }
    out.iter()
        .try_fold(1u64, |acc, s| acc.checked_mul(s.count))
        .filter(|t| *t <= MAX_PUS)
        .ok_or_else(|| err(format!("more than {MAX_PUS} PUs")))?;
    if let Some(i) = out.iter().position(|s| s.level == Level::Numa) {
        let nodes: u64 = out[..=i].iter().map(|s| s.count).product();
        if nodes > MAX_NUMA_NODES {
            return Err(err(format!(
                "{nodes} NUMA nodes; at most {MAX_NUMA_NODES} (Linux's limit)"
            )));
        }
    }
    Ok(out)
}

/// Build a topology from a synthetic description.
pub fn parse(spec: &str) -> Result<Topology, SyntheticError> {
    let levels = parse_spec(spec)?;
    let total: u64 = levels.iter().map(|s| s.count).product();
    // PUs under one object of each level: the product of the counts below it.
    let span = |i: usize| -> u64 { levels[i + 1..].iter().map(|s| s.count).product() };
    let find = |l: Level| levels.iter().position(|s| s.level == l);
    let group = |i: usize, pu: u64| -> u64 { pu / span(i) };

    let mut raw = RawTopology {
        source: Source::Synthetic {
            spec: spec.to_string(),
        },
        ..RawTopology::default()
    };
    let core_level = find(Level::Core).expect("core level");
    let pkg_level = find(Level::Package);
    for pu in 0..total {
        let core_global = group(core_level, pu);
        let (pkg, core_id) = match pkg_level {
            Some(p) => {
                let pkg = group(p, pu);
                let cores_per_pkg = span(p) / span(core_level);
                (pkg as i64, (core_global % cores_per_pkg) as i64)
            }
            None => (0, core_global as i64),
        };
        raw.pus.push(RawPu {
            os_index: pu as u32,
            online: true,
            allowed: true,
            package_id: Some(pkg),
            package_cpus: None,
            die_id: None,
            cluster_id: None,
            core_id: Some(core_id),
            // The core id (unique in its package) groups the PUs; a sibling
            // list per PU would take PUs x PUs-per-core memory (7 GB for
            // `core:1 pu:32768`).
            core_cpus: None,
        });
    }
    for (i, s) in levels.iter().enumerate() {
        let level = match s.level {
            Level::L3 => 3,
            Level::L2 => 2,
            Level::L1 => 1,
            _ => continue,
        };
        let w = span(i);
        for g in 0..total / w {
            raw.caches.push(RawCache {
                level,
                cache_type: if level == 1 {
                    CacheType::Data
                } else {
                    CacheType::Unified
                },
                size_bytes: s.bytes,
                line_size: None,
                ways: None,
                cpus: ((g * w) as u32..((g + 1) * w) as u32).collect(),
            });
        }
    }
    match find(Level::Numa) {
        Some(i) => {
            let w = span(i);
            let n = total / w;
            for g in 0..n {
                raw.nodes.push(RawNode {
                    os_index: g as u32,
                    cpus: ((g * w) as u32..((g + 1) * w) as u32).collect(),
                    memory_bytes: levels[i].bytes,
                    allowed: true,
                    distances: (0..n).map(|h| if h == g { 10 } else { 20 }).collect(),
                });
            }
        }
        None => raw.nodes.push(RawNode {
            os_index: 0,
            cpus: (0..total as u32).collect(),
            memory_bytes: None,
            allowed: true,
            distances: vec![10],
        }),
    }
    Ok(assemble(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ultrasparc_t1() {
        let t = parse("core:8 pu:4").unwrap();
        assert_eq!(t.pus.len(), 32);
        assert_eq!(t.cores.len(), 8);
        assert_eq!(t.packages.len(), 1);
        assert_eq!(t.cores[1].cpus.to_list(), "4-7");
        assert!(t.smt_active());
    }

    #[test]
    fn two_socket_numa() {
        let t = parse("package:2 numa:2 l3:1(size=32MiB) core:4 pu:2").unwrap();
        assert_eq!(t.pus.len(), 32);
        assert_eq!(t.packages.len(), 2);
        assert_eq!(t.numa_nodes.len(), 4);
        assert_eq!(t.numa_nodes[3].cpus.to_list(), "24-31");
        assert_eq!(t.cores.len(), 16);
        // core ids restart in every package, logical ids do not
        assert_eq!(t.cores[8].os_index, Some(0));
        assert_eq!(t.cores[8].package, 1);
        let l3 = t.last_level_caches();
        assert_eq!(l3.len(), 4);
        assert_eq!(l3[0].size_bytes, Some(32 << 20));
        assert_eq!(t.pu(9).unwrap().numa, Some(1));
    }

    #[test]
    fn numa_above_package_and_implicit_levels() {
        let t = parse("numa:2 package:1 core:2").unwrap();
        assert_eq!(t.pus.len(), 4);
        assert_eq!(t.packages.len(), 2);
        assert!(!t.smt_active());
        assert_eq!(parse("pu:4").unwrap().cores.len(), 4);
    }

    #[test]
    fn errors_name_the_token() {
        let e = parse("core:x").unwrap_err();
        assert!(e.reason.contains("`core:x`"), "{e}");
        assert!(parse("core:0").is_err());
        assert!(parse("cores:2")
            .unwrap_err()
            .reason
            .contains("unknown level"));
        assert!(parse("pu:2 core:2").unwrap_err().reason.contains("before"));
        assert!(parse("core:2 core:2").is_err());
        assert!(parse("").is_err());
        assert!(parse("core:70000 pu:2").is_err());
        assert!(parse("l3:1(size=lots) core:2").is_err());
    }

    #[test]
    fn the_largest_machines_build_small_and_beyond_them_one_line_names_the_limit() {
        // At the PU limit, with every PU in one core and with one core per
        // PU: both once took gigabytes or a minute (a sibling list per PU,
        // and a tree built by searching every node's children).
        for spec in [
            "core:1 pu:65536",
            "core:65536",
            "package:64 numa:16 core:64 pu:1",
        ] {
            let t = parse(spec).unwrap();
            assert_eq!(t.pus.len(), 65536, "{spec}");
        }
        assert_eq!(parse("core:1 pu:65536").unwrap().cores.len(), 1);
        let e = parse("core:1 pu:65537").unwrap_err().to_string();
        assert!(e.contains("more than 65536 PUs"), "{e}");
        let e = parse("numa:2048").unwrap_err().to_string();
        assert!(e.contains("2048 NUMA nodes; at most 1024"), "{e}");
        assert_eq!(e.lines().count(), 1);
    }
}
