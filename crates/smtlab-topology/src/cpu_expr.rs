//! CPU expressions: the text a user writes to say which PUs to run on, in
//! likwid-pin's `-c` syntax, turned into an ordered list of OS indexes.
//!
//! Owns the syntax and its error messages; knows nothing about workers or
//! policies (that is [`crate::placement`]). Forms, concatenated with `@`:
//!
//! * physical lists, `0,2-5,8`: OS indexes, in the order written;
//! * logical lists inside an affinity domain, `N:0-3`, `S1:0,2`, `C0:0-3`,
//!   `M1:0-3`, `D0:1` (also with likwid's optional `L:` prefix, and `L:0-3`
//!   meaning `L:N:0-3`): index k counts the domain's usable PUs "physical
//!   cores first" — the first PU of every core, cores in logical order, then
//!   the second PU of every core, and so on;
//! * a bare domain, `S0`: all its usable PUs, core by core;
//! * selections, `E:<domain>[:<count>[:<chunk>:<stride>]]`: walk the domain's
//!   PUs core by core (each core's PUs together), take `chunk` consecutive
//!   PUs, move `stride` PUs on from the start of that chunk, until `count`
//!   PUs are taken.
//!
//! Domains (letters in either case) are `N` (the node), `S<i>` (package,
//! logical index), `C<i>` (last-level cache), `M<i>` (NUMA node) and `D<i>`
//! (die). A PU is usable when it is online and allowed; unusable PUs are
//! skipped in the logical numbering, as likwid skips PUs outside its
//! affinity mask.
//!
//! The semantics follow likwid's own parser (`src/cpustring.c`,
//! `src/affinity.c` and `doc/likwid-pin.1` of RRZE-HPC/likwid), with two
//! deliberate differences: where likwid silently wraps around a domain or
//! skips a bad token, we refuse with an error that names the token, because
//! a measurement on the wrong PUs is worse than no measurement; and "physical
//! cores first" ranks a PU by its position among its core's *usable* PUs
//! (likwid uses the hardware SMT thread id), so that when a cpuset removes a
//! core's first sibling the core still gets a PU in the first round.

use std::collections::HashSet;

use crate::machine::Topology;
use smtlab_types::cpuset::{CpuSet, CpuSetError};

/// Why a CPU expression was refused. Every message is one line that starts
/// with "CPU expression `<expr>`: " and names the offending token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuExprError {
    #[error(
        "CPU expression `{expr}`: empty; expected e.g. `0,2-5`, `N:0-3`, \
         `S0:0-1@S1:0-1` or `E:N:8:1:2`"
    )]
    Empty { expr: String },
    #[error("CPU expression `{expr}`: {reason}")]
    Syntax { expr: String, reason: String },
    #[error("CPU expression `{expr}`: no CPU {cpu}; this machine has CPUs {existing}")]
    NoSuchCpu {
        expr: String,
        cpu: u32,
        existing: String,
    },
    #[error("CPU expression `{expr}`: CPU {cpu} is {why}; usable CPUs are {usable}")]
    UnusableCpu {
        expr: String,
        cpu: u32,
        why: &'static str,
        usable: String,
    },
    #[error(
        "CPU expression `{expr}`: unknown domain `{token}`; valid domains are \
         N, S<i> (package), C<i> (last-level cache), M<i> (NUMA node), D<i> (die)"
    )]
    UnknownDomain { expr: String, token: String },
    #[error("CPU expression `{expr}`: no {kind} domain {tag}; this machine has {available}")]
    NoSuchDomain {
        expr: String,
        kind: &'static str,
        tag: String,
        available: String,
    },
    #[error(
        "CPU expression `{expr}`: domain {tag} has no usable PUs \
         (all offline or outside the allowed CPUs)"
    )]
    EmptyDomain { expr: String, tag: String },
    #[error(
        "CPU expression `{expr}`: index {index} in `{token}` is out of range; \
         domain {tag} has {size} usable PUs (indexes 0-{last})",
        last = .size - 1
    )]
    IndexOutOfRange {
        expr: String,
        token: String,
        index: u32,
        tag: String,
        size: usize,
    },
}

/// One likwid affinity domain of a machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityDomain {
    /// `N`, `S0`, `C3`, `M1`, `D0`.
    pub tag: String,
    /// Usable PUs core by core (cores in logical order, each core's PUs by
    /// OS index): the order `E:` selections walk.
    pub pus: Vec<u32>,
    /// The same PUs physical cores first: the order logical indexes count.
    pub logical: Vec<u32>,
}

/// Every affinity domain of `topo` that has at least one usable PU, in the
/// order likwid-pin -p lists them: N, then S, D, C and M domains.
pub fn domains(topo: &Topology) -> Vec<AffinityDomain> {
    let mut out = Vec::new();
    for kind in [
        Kind::Node,
        Kind::Socket,
        Kind::Die,
        Kind::Cache,
        Kind::Memory,
    ] {
        for (i, set) in kind.sets(topo).into_iter().enumerate() {
            let tag = kind.tag(i);
            let cores = domain_cores(topo, &set);
            if !cores.is_empty() {
                out.push(AffinityDomain {
                    tag,
                    pus: hardware_order(&cores),
                    logical: physical_first(&cores),
                });
            }
        }
    }
    out
}

/// Parse `expr` against `topo` into OS indexes, in the order the expression
/// lists them. Repeats appear only where the user wrote them (`0,0`).
pub fn parse(expr: &str, topo: &Topology) -> Result<Vec<u32>, CpuExprError> {
    let p = Parser { expr, topo };
    let text = expr.trim();
    if text.is_empty() {
        return Err(CpuExprError::Empty {
            expr: expr.to_string(),
        });
    }
    let mut out = Vec::new();
    for part in text.split('@') {
        let part = part.trim();
        if part.is_empty() {
            return Err(p.syntax(
                "empty part between `@` separators; write e.g. `S0:0-1@S1:0-1`".to_string(),
            ));
        }
        out.extend(p.part(part)?);
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Node,
    Socket,
    Die,
    Cache,
    Memory,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Node => 'N',
            Kind::Socket => 'S',
            Kind::Die => 'D',
            Kind::Cache => 'C',
            Kind::Memory => 'M',
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Node => "node",
            Kind::Socket => "socket",
            Kind::Die => "die",
            Kind::Cache => "last-level cache",
            Kind::Memory => "NUMA",
        }
    }

    fn tag(self, i: usize) -> String {
        match self {
            Kind::Node => "N".to_string(),
            _ => format!("{}{i}", self.letter()),
        }
    }

    /// The PU sets of every domain of this kind, by logical index.
    fn sets(self, topo: &Topology) -> Vec<CpuSet> {
        match self {
            Kind::Node => vec![topo.online()],
            Kind::Socket => topo.packages.iter().map(|p| p.cpus.clone()).collect(),
            Kind::Die => topo.dies.iter().map(|d| d.cpus.clone()).collect(),
            Kind::Cache => topo
                .last_level_caches()
                .into_iter()
                .map(|c| c.cpus.clone())
                .collect(),
            Kind::Memory => topo.numa_nodes.iter().map(|n| n.cpus.clone()).collect(),
        }
    }
}

/// The usable PUs of `set`, grouped by core: cores in logical order, each
/// core's PUs by OS index. Cores without a usable PU in `set` are left out.
fn domain_cores(topo: &Topology, set: &CpuSet) -> Vec<Vec<u32>> {
    // Only the cores holding a PU of `set`, found from its PUs: going over
    // every core for every domain took 18 s to list 32768 L2 domains.
    let mut core_indexes: Vec<usize> = set
        .iter()
        .filter_map(|cpu| topo.pu(cpu).and_then(|p| p.core))
        .collect();
    core_indexes.sort_unstable();
    core_indexes.dedup();
    core_indexes
        .into_iter()
        .map(|i| {
            topo.cores[i]
                .cpus
                .iter()
                .filter(|&cpu| set.contains(cpu) && usable(topo, cpu))
                .collect::<Vec<u32>>()
        })
        .filter(|pus| !pus.is_empty())
        .collect()
}

fn usable(topo: &Topology, cpu: u32) -> bool {
    topo.pu(cpu).is_some_and(|p| p.online && p.allowed)
}

/// Each core's PUs together: likwid's domain processor list.
fn hardware_order(cores: &[Vec<u32>]) -> Vec<u32> {
    cores.iter().flatten().copied().collect()
}

/// First PU of every core, then second PU of every core, ...: likwid's
/// "physical cores first" order for logical indexes.
fn physical_first(cores: &[Vec<u32>]) -> Vec<u32> {
    let rounds = cores.iter().map(Vec::len).max().unwrap_or(0);
    (0..rounds)
        .flat_map(|r| cores.iter().filter_map(move |c| c.get(r).copied()))
        .collect()
}

/// `S0-S3`, `S0`, or "no S domains".
fn tag_range(kind: Kind, n: usize) -> String {
    match n {
        0 => format!("no {} domains", kind.letter()),
        1 => kind.tag(0),
        _ => format!("{}-{}", kind.tag(0), kind.tag(n - 1)),
    }
}

struct Parser<'a> {
    expr: &'a str,
    topo: &'a Topology,
}

/// A resolved domain: its tag and its usable PUs grouped by core.
struct Domain {
    tag: String,
    cores: Vec<Vec<u32>>,
}

impl Parser<'_> {
    fn syntax(&self, reason: String) -> CpuExprError {
        CpuExprError::Syntax {
            expr: self.expr.to_string(),
            reason,
        }
    }

    fn part(&self, part: &str) -> Result<Vec<u32>, CpuExprError> {
        if part.starts_with(|c: char| c.is_ascii_digit()) {
            return self.physical(part);
        }
        let fields: Vec<&str> = part.split(':').map(str::trim).collect();
        match fields[0] {
            "E" | "e" => self.selection(part, &fields),
            "L" | "l" => match fields.len() {
                2 => self.logical(part, "N", fields[1]),
                3 => self.logical(part, fields[1], fields[2]),
                _ => Err(self.syntax(format!(
                    "`{part}` is not a logical list; expected L:<domain>:<indexes>, e.g. L:S0:0-3"
                ))),
            },
            tag => match fields.len() {
                1 => Ok(hardware_order(&self.domain(tag)?.cores)),
                2 => self.logical(part, tag, fields[1]),
                _ => Err(self.syntax(format!(
                    "`{part}` has too many `:`; expected <domain>:<indexes>, e.g. S0:0-3"
                ))),
            },
        }
    }

    /// OS indexes, each checked to exist and to be usable.
    fn physical(&self, part: &str) -> Result<Vec<u32>, CpuExprError> {
        let mut out = Vec::new();
        for token in part.split(',') {
            let set = CpuSet::parse_list(token).map_err(|e| self.syntax(e.to_string()))?;
            if set.is_empty() {
                return Err(self.syntax(format!(
                    "empty item in `{part}`; expected a list like 0,2-5,8"
                )));
            }
            for cpu in set.iter() {
                match self.topo.pu(cpu) {
                    None => {
                        return Err(CpuExprError::NoSuchCpu {
                            expr: self.expr.to_string(),
                            cpu,
                            existing: self.topo.all().to_list(),
                        })
                    }
                    Some(pu) if !pu.online || !pu.allowed => {
                        return Err(CpuExprError::UnusableCpu {
                            expr: self.expr.to_string(),
                            cpu,
                            why: if pu.online {
                                "outside the CPUs this process may use (cgroup cpuset or affinity)"
                            } else {
                                "offline"
                            },
                            usable: self.topo.allowed().to_list(),
                        })
                    }
                    Some(_) => out.push(cpu),
                }
            }
        }
        Ok(out)
    }

    /// Look a domain tag up; it must exist and have a usable PU.
    fn domain(&self, token: &str) -> Result<Domain, CpuExprError> {
        let unknown = || CpuExprError::UnknownDomain {
            expr: self.expr.to_string(),
            token: token.to_string(),
        };
        let mut chars = token.chars();
        let kind = match chars.next().map(|c| c.to_ascii_uppercase()) {
            Some('N') => Kind::Node,
            Some('S') => Kind::Socket,
            Some('D') => Kind::Die,
            Some('C') => Kind::Cache,
            Some('M') => Kind::Memory,
            _ => return Err(unknown()),
        };
        let digits = chars.as_str();
        let index = if kind == Kind::Node {
            if !digits.is_empty() {
                return Err(unknown());
            }
            0
        } else {
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(self.syntax(format!(
                    "domain `{token}` needs a number, e.g. {}",
                    kind.tag(0)
                )));
            }
            digits.parse::<usize>().unwrap_or(usize::MAX)
        };
        let sets = kind.sets(self.topo);
        let tag = kind.tag(index);
        let Some(set) = sets.get(index) else {
            return Err(CpuExprError::NoSuchDomain {
                expr: self.expr.to_string(),
                kind: kind.name(),
                tag: format!("{}{digits}", kind.letter()),
                available: tag_range(kind, sets.len()),
            });
        };
        let cores = domain_cores(self.topo, set);
        if cores.is_empty() {
            return Err(CpuExprError::EmptyDomain {
                expr: self.expr.to_string(),
                tag,
            });
        }
        Ok(Domain { tag, cores })
    }

    /// `<domain>:<indexes>`: indexes count physical cores first.
    fn logical(&self, part: &str, tag: &str, list: &str) -> Result<Vec<u32>, CpuExprError> {
        let dom = self.domain(tag)?;
        let order = physical_first(&dom.cores);
        if list.is_empty() {
            return Err(self.syntax(format!(
                "`{part}` has no indexes after `:`; expected e.g. {}:0-3",
                dom.tag
            )));
        }
        let mut out = Vec::new();
        for token in list.split(',') {
            let token = token.trim();
            let set = CpuSet::parse_list(token).map_err(|e| {
                self.syntax(match e {
                    CpuSetError::Descending { .. } => format!(
                        "`{token}` in `{part}` is a descending range; write it low-high, e.g. 0-3"
                    ),
                    _ => format!(
                        "`{token}` in `{part}` is not an index or range; expected e.g. {}:0-3 or {}:0,2",
                        dom.tag, dom.tag
                    ),
                })
            })?;
            if set.is_empty() {
                return Err(self.syntax(format!(
                    "empty item in `{part}`; expected e.g. {}:0,2",
                    dom.tag
                )));
            }
            for index in set.iter() {
                match order.get(index as usize) {
                    Some(&cpu) => out.push(cpu),
                    None => {
                        return Err(CpuExprError::IndexOutOfRange {
                            expr: self.expr.to_string(),
                            token: token.to_string(),
                            index,
                            tag: dom.tag,
                            size: order.len(),
                        })
                    }
                }
            }
        }
        Ok(out)
    }

    /// `E:<domain>[:<count>[:<chunk>:<stride>]]`, as likwid's
    /// `cpustr_to_cpulist_expression`: from the start of the domain's
    /// core-by-core list take `chunk` PUs (fewer if the list ends), advance
    /// the start by `stride`, and go back to the beginning of the list when
    /// the start passes its end; stop after `count` PUs.
    fn selection(&self, part: &str, fields: &[&str]) -> Result<Vec<u32>, CpuExprError> {
        if !matches!(fields.len(), 2 | 3 | 5) {
            return Err(self.syntax(format!(
                "`{part}` is not a selection; expected E:<domain>:<count> or \
                 E:<domain>:<count>:<chunk>:<stride>, e.g. E:N:8:1:2"
            )));
        }
        let dom = self.domain(fields[1])?;
        let list = hardware_order(&dom.cores);
        let number = |i: usize, what: &str| -> Result<usize, CpuExprError> {
            let f = fields[i];
            if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                return Err(self.syntax(format!(
                    "{what} `{f}` in `{part}` is not a number; expected e.g. E:N:8:1:2"
                )));
            }
            let v = f.parse::<usize>().unwrap_or(usize::MAX);
            if v == 0 {
                return Err(self.syntax(format!("{what} in `{part}` must be at least 1")));
            }
            Ok(v)
        };
        let count = if fields.len() >= 3 {
            number(2, "count")?
        } else {
            list.len()
        };
        let (chunk, stride) = if fields.len() == 5 {
            (number(3, "chunk")?, number(4, "stride")?)
        } else {
            (1, 1)
        };
        if count > list.len() {
            // The count as typed: one past usize was read as usize::MAX.
            let asked = fields.get(2).map_or(count.to_string(), |f| f.to_string());
            return Err(self.syntax(format!(
                "`{part}` asks for {asked} PUs but domain {} has {} usable PUs",
                dom.tag,
                list.len()
            )));
        }
        let mut out = Vec::with_capacity(count);
        let mut start = 0;
        'outer: loop {
            for j in 0..chunk {
                let Some(&cpu) = list.get(start + j) else {
                    break;
                };
                out.push(cpu);
                if out.len() == count {
                    break 'outer;
                }
            }
            start += stride;
            if start >= list.len() {
                start = 0;
            }
        }
        // likwid lets the walk wrap around and reuse PUs; the user did not
        // write those repeats, so refuse instead of silently doubling up.
        let mut seen = HashSet::new();
        if let Some(dup) = out.iter().find(|&&c| !seen.insert(c)) {
            return Err(self.syntax(format!(
                "`{part}` wraps around domain {} ({} usable PUs) and would use CPU {dup} twice; \
                 lower the count or the stride",
                dom.tag,
                list.len()
            )));
        }
        Ok(out)
    }
}

/// Real machine dumps, extracted once per test binary and read into memory.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::sync::OnceLock;

    use crate::{sysfs, Topology};

    fn dir() -> PathBuf {
        let in_repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sysfs");
        if in_repo.is_dir() {
            in_repo
        } else {
            PathBuf::from("/work/shared/fixtures/sysfs")
        }
    }

    fn load() -> Vec<(String, Topology)> {
        let dir = dir();
        let mut tarballs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("fixtures {}: {e}", dir.display()))
            .map(|e| e.expect("readable fixture dir").path())
            .filter(|p| p.to_string_lossy().ends_with(".tar.bz2"))
            .collect();
        tarballs.sort();
        assert!(!tarballs.is_empty(), "no *.tar.bz2 in {}", dir.display());
        // Extraction is dominated by per-file filesystem cost (thousands of
        // small sysfs files), so unpack the dumps in parallel.
        std::thread::scope(|scope| {
            let jobs: Vec<_> = tarballs
                .iter()
                .map(|tarball| scope.spawn(move || load_one(tarball)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("fixture loader panicked"))
                .collect()
        })
    }

    fn load_one(tarball: &Path) -> (String, Topology) {
        let name = tarball
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .trim_end_matches(".tar.bz2")
            .to_string();
        let tmp = tempfile::tempdir().expect("tempdir");
        let status = Command::new("tar")
            .arg("xjf")
            .arg(tarball)
            .arg("-C")
            .arg(tmp.path())
            .status()
            .expect("run tar");
        assert!(status.success(), "tar xjf {}", tarball.display());
        // The one top-level directory's name may differ from the
        // tarball's.
        let roots: Vec<PathBuf> = std::fs::read_dir(tmp.path())
            .expect("read tempdir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_dir())
            .collect();
        assert_eq!(roots.len(), 1, "{name}: expected one top-level dir");
        let topo = sysfs::read_root(&roots[0]).unwrap_or_else(|e| panic!("{name}: {e}"));
        (name, topo)
    }

    /// Every dump, by tarball name (without `.tar.bz2`).
    pub(crate) fn all() -> &'static [(String, Topology)] {
        static ALL: OnceLock<Vec<(String, Topology)>> = OnceLock::new();
        ALL.get_or_init(load)
    }

    pub(crate) fn get(name: &str) -> &'static Topology {
        &all()
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no fixture {name}"))
            .1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;
    use proptest::prelude::*;

    fn syn(spec: &str) -> Topology {
        synthetic::parse(spec).unwrap()
    }

    fn err(expr: &str, topo: &Topology) -> String {
        let e = parse(expr, topo).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("CPU expression `{expr}`: ")),
            "bad prefix: {e}"
        );
        assert!(!e.contains('\n'), "not one line: {e}");
        e
    }

    #[test]
    fn physical_lists_keep_the_users_order() {
        let t = syn("package:2 core:4 pu:2");
        assert_eq!(parse("0,2-5,8", &t).unwrap(), vec![0, 2, 3, 4, 5, 8]);
        assert_eq!(parse("3,1", &t).unwrap(), vec![3, 1]);
        assert_eq!(parse("0,0", &t).unwrap(), vec![0, 0]);
        assert_eq!(parse(" 7 , 6 ", &t).unwrap(), vec![7, 6]);
    }

    #[test]
    fn logical_numbering_is_physical_cores_first() {
        // Core c holds PUs 2c and 2c+1.
        let t = syn("package:2 core:4 pu:2");
        assert_eq!(parse("N:0-3", &t).unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse("N:8-9", &t).unwrap(), vec![1, 3]);
        assert_eq!(parse("S1:0-1", &t).unwrap(), vec![8, 10]);
        assert_eq!(parse("S0:0,2", &t).unwrap(), vec![0, 4]);
        assert_eq!(parse("S0:4-5", &t).unwrap(), vec![1, 3]);
        assert_eq!(parse("L:S1:3", &t).unwrap(), vec![14]);
        assert_eq!(parse("L:0-1", &t).unwrap(), vec![0, 2]);
    }

    #[test]
    fn concatenation_and_bare_domains() {
        let t = syn("package:2 core:4 pu:2");
        assert_eq!(parse("S0:0-1@S1:0-1", &t).unwrap(), vec![0, 2, 8, 10]);
        assert_eq!(parse("S1", &t).unwrap(), (8..16).collect::<Vec<_>>());
        assert_eq!(parse("0@N:1", &t).unwrap(), vec![0, 2]);
    }

    #[test]
    fn cache_and_numa_domains() {
        let t = syn("package:2 numa:2 l3:1 core:2 pu:2");
        // Four L3 caches / NUMA nodes of 2 cores x 2 PUs each.
        assert_eq!(parse("C1:0-3", &t).unwrap(), vec![4, 6, 5, 7]);
        assert_eq!(parse("M2:0-1", &t).unwrap(), vec![8, 10]);
        assert_eq!(parse("M3", &t).unwrap(), vec![12, 13, 14, 15]);
    }

    #[test]
    fn selections_follow_likwid() {
        let t = syn("package:2 core:4 pu:2");
        // One PU per core: the documented use of E:N:<n>:1:<SMT width>.
        assert_eq!(
            parse("E:N:8:1:2", &t).unwrap(),
            vec![0, 2, 4, 6, 8, 10, 12, 14]
        );
        assert_eq!(parse("E:N:4", &t).unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse("E:S1", &t).unwrap(), (8..16).collect::<Vec<_>>());
        // likwid-pin(1): domain P = 0,4,1,5,2,6,3,7, E:P:4:2:4 = 0,4,2,6,
        // i.e. positions 0,1,4,5.
        assert_eq!(parse("E:N:4:2:4", &t).unwrap(), vec![0, 1, 4, 5]);
        // A chunk cut short by the end of the list, then wrap to the start.
        assert_eq!(parse("E:S0:3:2:3", &t).unwrap(), vec![0, 1, 3]);
        assert_eq!(parse("E:S0:6:2:3", &t).unwrap(), vec![0, 1, 3, 4, 6, 7]);
    }

    #[test]
    fn errors_name_the_token() {
        let t = syn("package:2 core:4 pu:2");
        let e = err("S9:0", &t);
        assert!(
            e.contains("no socket domain S9") && e.contains("S0-S1"),
            "{e}"
        );
        let e = err("0-", &t);
        assert!(e.contains("`0-`"), "{e}");
        let e = err("E:N:0", &t);
        assert!(e.contains("count") && e.contains("at least 1"), "{e}");
        let e = err("X:0", &t);
        assert!(e.contains("`X`") && e.contains("N, S<i>"), "{e}");
        let e = err("S0:0-9", &t);
        assert!(e.contains("`0-9`") && e.contains("8 usable PUs"), "{e}");
        let e = err("", &t);
        assert!(e.contains("empty"), "{e}");
        err("   ", &t);
        let e = err("99", &t);
        assert!(e.contains("no CPU 99") && e.contains("0-15"), "{e}");
        let e = err("S0:0@", &t);
        assert!(e.contains("`@`"), "{e}");
        let e = err("E:N:17", &t);
        assert!(e.contains("17") && e.contains("16 usable"), "{e}");
        let e = err("E:N:8:1:4", &t);
        assert!(e.contains("twice"), "{e}");
        let e = err("E:N:2:x:1", &t);
        assert!(e.contains("`x`"), "{e}");
        let e = err("E:N:2:1:0", &t);
        assert!(e.contains("stride"), "{e}");
        let e = err("E:N:2:1", &t);
        assert!(e.contains("E:N:2:1"), "{e}");
        let e = err("S:0", &t);
        assert!(e.contains("needs a number"), "{e}");
        let e = err("S0:3-1", &t);
        assert!(e.contains("descending"), "{e}");
        let e = err("S0:0:1", &t);
        assert!(e.contains("too many"), "{e}");
        let e = err("C0:0", &t);
        assert!(e.contains("no C domains"), "{e}");
        let e = err("N1:0", &t);
        assert!(e.contains("`N1`"), "{e}");
    }

    #[test]
    fn a_count_past_usize_is_said_as_typed() {
        let t = syn("package:1 core:2 pu:1");
        let e = err("E:N:99999999999999999999", &t);
        assert!(
            e.ends_with("asks for 99999999999999999999 PUs but domain N has 2 usable PUs"),
            "{e}"
        );
        assert!(!e.contains("18446744073709551615"), "{e}");
    }

    #[test]
    fn domains_are_listed() {
        let t = syn("package:2 core:2 pu:2");
        let d = domains(&t);
        let tags: Vec<&str> = d.iter().map(|d| d.tag.as_str()).collect();
        // Synthetic machines have no dies and, without `l3`, no caches.
        assert_eq!(tags, ["N", "S0", "S1", "M0"]);
        assert_eq!(d[1].pus, vec![0, 1, 2, 3]);
        assert_eq!(d[1].logical, vec![0, 2, 1, 3]);
    }

    #[test]
    fn power7_numa_domain_is_first_pus_of_its_cores() {
        let t = fixtures::get("256ppc-8n8s4t");
        let node = &t.numa_nodes[1];
        let first_cores: Vec<u32> = t
            .cores
            .iter()
            .filter(|c| c.cpus.is_subset(&node.cpus))
            .take(4)
            .map(|c| c.cpus.first().unwrap())
            .collect();
        assert_eq!(first_cores.len(), 4);
        assert_eq!(parse("M1:0-3", t).unwrap(), first_cores);
        // 8 cores x 4 PUs per node: index 8 is the second PU of the first core.
        assert_eq!(
            parse("M1:8", t).unwrap(),
            vec![first_cores[0] + 1],
            "POWER7 siblings are consecutive"
        );
    }

    #[test]
    fn non_contiguous_siblings_count_cores_first() {
        let t = fixtures::get("16em64t-4s2c2t");
        // P#0 and P#8 share core L#0; core L#1 is P#4+P#12; then package 1.
        let firsts: Vec<u32> = t.cores.iter().map(|c| c.cpus.first().unwrap()).collect();
        assert_eq!(parse("N:0-1", t).unwrap(), firsts[..2].to_vec());
        assert_eq!(parse("N:0-1", t).unwrap(), vec![0, 4]);
        assert_eq!(parse("N:8", t).unwrap(), vec![8]);
        assert_eq!(parse("S1:0-3", t).unwrap(), vec![1, 5, 9, 13]);
        assert_eq!(parse("E:S0:4", t).unwrap(), vec![0, 8, 4, 12]);
        assert_eq!(parse("E:N:8:1:2", t).unwrap(), firsts);
    }

    #[test]
    fn unusable_pus_are_refused_and_skipped() {
        let t = fixtures::get("16amd64-8n2c-cpusets");
        let e = err("7", t);
        assert!(e.contains("CPU 7") && e.contains("may use"), "{e}");
        let e = err("4", t);
        assert!(e.contains("CPU 4") && e.contains("offline"), "{e}");
        let allowed = t.allowed();
        let n: Vec<u32> = parse("N", t).unwrap();
        assert_eq!(n.iter().copied().collect::<CpuSet>(), allowed);
        assert_eq!(n.len(), allowed.len());
        let t = fixtures::get("16em64t-4s2c2t-offlines");
        let all = parse(&format!("N:0-{}", t.allowed().len() - 1), t).unwrap();
        assert!(all.iter().all(|&c| usable(t, c)));
    }

    fn spec() -> impl Strategy<Value = String> {
        (1usize..4, 0usize..3, 1usize..7, 1usize..5).prop_map(|(p, numa, c, t)| {
            let numa = if numa > 0 {
                format!(" numa:{numa}")
            } else {
                String::new()
            };
            format!("package:{p}{numa} l3:1 core:{c} pu:{t}")
        })
    }

    /// Checks that hold on any machine: domains enumerate exactly their
    /// usable PUs, logical order puts one PU per core first, and selections
    /// that fit never repeat a PU.
    fn check_machine(t: &Topology) -> Result<(), TestCaseError> {
        for d in domains(t) {
            let a: CpuSet = d.pus.iter().copied().collect();
            let b: CpuSet = d.logical.iter().copied().collect();
            prop_assert_eq!(a.len(), d.pus.len());
            prop_assert_eq!(&a, &b);
            prop_assert!(a.is_subset(&t.allowed()));
            let whole = parse(&d.tag, t).unwrap();
            prop_assert_eq!(&whole, &d.pus);
            let last = d.logical.len() - 1;
            prop_assert_eq!(
                &parse(&format!("{}:0-{last}", d.tag), t).unwrap(),
                &d.logical
            );
            // Physical cores first: the first k logical PUs sit on k cores.
            let ncores = d
                .pus
                .iter()
                .map(|&c| t.pu(c).unwrap().core)
                .collect::<HashSet<_>>()
                .len();
            let cores: HashSet<_> = d.logical[..ncores]
                .iter()
                .map(|&c| t.pu(c).unwrap().core)
                .collect();
            prop_assert_eq!(cores.len(), ncores);
            let e = err(&format!("{}:{}", d.tag, d.logical.len()), t);
            prop_assert!(e.contains("out of range"));
        }
        Ok(())
    }

    #[test]
    fn every_fixture_domain_is_consistent() {
        for (name, t) in fixtures::all() {
            check_machine(t).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    proptest! {
        #[test]
        fn synthetic_domains_are_consistent(spec in spec()) {
            check_machine(&syn(&spec))?;
        }

        #[test]
        fn selections_never_repeat(
            spec in spec(),
            count in 1usize..40,
            chunk in 1usize..5,
            stride in 1usize..9,
            fixture in 0usize..16,
            use_fixture in any::<bool>(),
        ) {
            let owned;
            let t = if use_fixture {
                let all = fixtures::all();
                &all[fixture % all.len()].1
            } else {
                owned = syn(&spec);
                &owned
            };
            let expr = format!("E:N:{count}:{chunk}:{stride}");
            match parse(&expr, t) {
                Ok(v) => {
                    prop_assert_eq!(v.len(), count);
                    prop_assert_eq!(v.iter().collect::<HashSet<_>>().len(), count);
                    prop_assert!(v.iter().all(|&c| usable(t, c)));
                    if chunk == 1 && stride == 1 {
                        let n = parse("N", t).unwrap();
                        prop_assert_eq!(&v[..], &n[..count]);
                    }
                }
                Err(e) => {
                    let msg = e.to_string();
                    let prefix = format!("CPU expression `{expr}`: ");
                    prop_assert!(msg.starts_with(&prefix), "{}", msg);
                }
            }
        }

        #[test]
        fn physical_lists_round_trip(spec in spec(), picks in proptest::collection::vec(0usize..1000, 1..10)) {
            let t = syn(&spec);
            let all: Vec<u32> = t.allowed().iter().collect();
            let want: Vec<u32> = picks.iter().map(|&i| all[i % all.len()]).collect();
            let text: Vec<String> = want.iter().map(u32::to_string).collect();
            prop_assert_eq!(parse(&text.join(","), &t).unwrap(), want);
        }
    }
}
