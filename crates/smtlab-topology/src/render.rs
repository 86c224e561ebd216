//! Text views of a topology: an lstopo-like tree and a one-line summary.
//!
//! The tree follows `lstopo-no-graphics`: one object per line, indented by
//! nesting, a chain of only children folded onto one line with ` + `, NUMA
//! nodes listed first under the object whose PUs they hold. Unlike lstopo it
//! keeps PUs this process may not use, marked `not allowed`, because plans
//! must be explainable on the whole machine.

use std::fmt::Write;

use crate::assemble::{Tree, What};
use crate::machine::Topology;

/// Human size, as lstopo prints it: whole KiB, MiB or GiB.
pub fn human_bytes(b: u64) -> String {
    const K: u64 = 1024;
    if b >= 10 * K * K * K {
        format!("{}GiB", (b + K * K * K / 2) / (K * K * K))
    } else if b >= 10 * K * K {
        format!("{}MiB", (b + K * K / 2) / (K * K))
    } else {
        format!("{}KiB", (b + K / 2) / K)
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `1 package, 2 cores, 2 PUs, SMT off` (`SMT switched off` when the
/// kernel's SMT switch took the siblings offline), then what is not usable,
/// if any.
pub fn summary_line(t: &Topology) -> String {
    let online = t.online();
    let allowed = t.allowed();
    let per_core: Vec<usize> = t.cores.iter().map(|c| c.cpus.len()).collect();
    let (lo, hi) = (
        per_core.iter().copied().min().unwrap_or(0),
        per_core.iter().copied().max().unwrap_or(0),
    );
    let smt = if hi <= 1 && t.smt_switched_off() {
        // Siblings exist; the kernel's SMT switch took them offline.
        "SMT switched off".to_string()
    } else if hi <= 1 {
        "SMT off".to_string()
    } else if lo == hi {
        format!("SMT on ({hi} PUs per core)")
    } else {
        format!("SMT on ({lo}-{hi} PUs per core)")
    };
    let mut s = format!(
        "{}, {}, {}, {}",
        plural(t.packages.len(), "package", "packages"),
        plural(t.cores.len(), "core", "cores"),
        plural(online.len(), "PU", "PUs"),
        smt
    );
    if t.numa_nodes.len() > 1 {
        write!(s, ", {} NUMA nodes", t.numa_nodes.len()).unwrap();
    }
    let offline = t.all().difference(&online);
    if allowed != online {
        write!(
            s,
            "; {} of {} online PUs allowed",
            allowed.len(),
            online.len()
        )
        .unwrap();
        if let Some(src) = &t.cpuset_source {
            write!(s, " (by {src})").unwrap();
        }
    }
    if !offline.is_empty() {
        write!(s, "; {} offline", plural(offline.len(), "PU", "PUs")).unwrap();
    }
    s
}

fn label(t: &Topology, what: What) -> String {
    match what {
        What::Machine => match t.memory_bytes {
            Some(b) => format!("Machine ({} total)", human_bytes(b)),
            None => "Machine".to_string(),
        },
        What::Package(i) => match t.packages[i].os_index {
            Some(p) => format!("Package L#{i} (P#{p})"),
            None => format!("Package L#{i}"),
        },
        What::Die(i) => match t.dies[i].os_index {
            Some(p) => format!("Die L#{i} (P#{p})"),
            None => format!("Die L#{i}"),
        },
        What::Cache(i) => {
            let c = &t.caches[i];
            let name = format!("L{}{}", c.level, c.cache_type.suffix());
            match c.size_bytes {
                Some(b) => format!("{name} L#{} ({})", c.id, human_bytes(b)),
                None => format!("{name} L#{}", c.id),
            }
        }
        What::Core(i) => {
            let c = &t.cores[i];
            let kind = c
                .cpus
                .first()
                .and_then(|p| t.pu(p))
                .and_then(|p| p.kind)
                .map(|k| match &t.cpu_kinds[k].name {
                    Some(n) => format!(", {n}"),
                    None => format!(", kind {k}"),
                })
                .unwrap_or_default();
            match c.os_index {
                Some(p) => format!("Core L#{i} (P#{p}{kind})"),
                None if kind.is_empty() => format!("Core L#{i}"),
                None => format!("Core L#{i} ({})", &kind[2..]),
            }
        }
        What::Pu(os) => {
            let p = t.pu(os).expect("tree PU exists");
            let l = p.logical_index.unwrap_or(0);
            if p.allowed {
                format!("PU L#{l} (P#{os})")
            } else {
                format!("PU L#{l} (P#{os}, not allowed)")
            }
        }
    }
}

/// The lstopo-like tree, followed by offline/disallowed PUs, CPU kinds and
/// the notes on what the source lacked.
pub fn render_tree(t: &Topology) -> String {
    let tree = Tree::of(t);
    // NUMA nodes hang under the deepest object holding all their PUs.
    let mut numa_at: Vec<Vec<usize>> = vec![Vec::new(); tree.nodes.len()];
    for n in &t.numa_nodes {
        let online_cpus = n.cpus.intersection(&t.online());
        numa_at[tree.attach_point(&online_cpus)].push(n.id);
    }
    let mut out = String::new();
    let mut stack = vec![(0usize, 0usize)];
    while let Some((mut node, depth)) = stack.pop() {
        let indent = "  ".repeat(depth);
        let mut line = label(t, tree.nodes[node].what);
        // Fold chains of only children (no NUMA node in between), like
        // lstopo, which never folds the machine line.
        while node != 0 && tree.nodes[node].children.len() == 1 && numa_at[node].is_empty() {
            let child = tree.nodes[node].children[0];
            line.push_str(" + ");
            line.push_str(&label(t, tree.nodes[child].what));
            node = child;
        }
        writeln!(out, "{indent}{line}").unwrap();
        for &n in &numa_at[node] {
            let numa = &t.numa_nodes[n];
            let mem = numa
                .memory_bytes
                .map(|b| format!(" {}", human_bytes(b)))
                .unwrap_or_default();
            let allowed = if numa.allowed { "" } else { ", not allowed" };
            writeln!(
                out,
                "{indent}  NUMANode L#{} (P#{}{mem}{allowed})",
                numa.id, numa.os_index
            )
            .unwrap();
        }
        for &c in tree.nodes[node].children.iter().rev() {
            stack.push((c, depth + 1));
        }
    }
    let offline = t.all().difference(&t.online());
    if !offline.is_empty() {
        writeln!(out, "Offline PUs: {offline}").unwrap();
    }
    let disallowed = t.online().difference(&t.allowed());
    if !disallowed.is_empty() {
        let by = t
            .cpuset_source
            .as_deref()
            .map(|s| format!(" (outside {s})"))
            .unwrap_or_default();
        writeln!(out, "Not allowed{by}: {disallowed}").unwrap();
    }
    for k in &t.cpu_kinds {
        let name = k
            .name
            .as_deref()
            .map(|n| format!("{n}, "))
            .unwrap_or_default();
        let mut freq = String::new();
        if let Some(m) = k.max_freq_mhz {
            write!(freq, ", max {m} MHz").unwrap();
        }
        if let Some(b) = k.base_freq_mhz {
            write!(freq, ", base {b} MHz").unwrap();
        }
        writeln!(
            out,
            "CPU kind #{} ({name}efficiency {}): PUs {}{freq}",
            k.id, k.efficiency, k.cpus
        )
        .unwrap();
    }
    for n in &t.notes {
        writeln!(out, "note: {n}").unwrap();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic;

    #[test]
    fn folds_single_children_and_places_numa() {
        let t = synthetic::parse("package:1 numa:1 l3:1(size=32MiB) core:2 pu:1").unwrap();
        let s = render_tree(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines,
            [
                "Machine",
                "  Package L#0 (P#0)",
                "    NUMANode L#0 (P#0)",
                "    L3 L#0 (32MiB)",
                "      Core L#0 (P#0) + PU L#0 (P#0)",
                "      Core L#1 (P#1) + PU L#1 (P#1)",
            ]
        );
        assert_eq!(summary_line(&t), "1 package, 2 cores, 2 PUs, SMT off");
    }

    #[test]
    fn summary_counts_smt() {
        let t = synthetic::parse("package:2 core:4 pu:2").unwrap();
        assert_eq!(
            summary_line(&t),
            "2 packages, 8 cores, 16 PUs, SMT on (2 PUs per core)"
        );
    }

    #[test]
    fn sizes_like_lstopo() {
        assert_eq!(human_bytes(32 * 1024), "32KiB");
        assert_eq!(human_bytes(1280 * 1024), "1280KiB");
        assert_eq!(human_bytes(24 << 20), "24MiB");
        assert_eq!(human_bytes(16 << 30), "16GiB");
    }
}
