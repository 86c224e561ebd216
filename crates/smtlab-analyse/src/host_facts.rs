//! Which facts of the machines differ between hosts (or between two runs):
//! what a reader must know before trusting a ratio across machines. The
//! facts compared are those that change a result: the CPU model, SMT on or
//! off, the kernel, transparent huge pages, the frequency governor and the
//! topology (packages, cores, PUs and what is online and allowed). The
//! load average and `perf_event_paranoid` are not: they describe a moment
//! or what could be counted, not the machine.

use serde::Serialize;
use smtlab_topology::Topology;
use smtlab_types::HostFacts;

/// The facts compared, in the order they are listed.
pub const COMPARED: [&str; 6] = ["CPU model", "SMT", "kernel", "THP", "governor", "topology"];

/// A fact whose value is not the same on every host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactDifference {
    /// One of [`COMPARED`].
    pub fact: String,
    /// Each host's value, in the order the hosts were given.
    pub values: Vec<String>,
}

/// What the facts of `hosts` (name, facts) say together: the facts that
/// differ, and one sentence.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactComparison {
    pub hosts: Vec<String>,
    pub differences: Vec<FactDifference>,
    pub sentence: String,
}

/// The compared facts of one host, as text (`unknown` where the run did
/// not record one; `none` for the governor of a machine without cpufreq).
pub fn compared_values(h: &HostFacts) -> [String; 6] {
    let known = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let topology = serde_json::from_value::<Topology>(h.topology.clone())
        .map(|t| smtlab_topology::summary_line(&t))
        .unwrap_or_else(|_| "unknown".into());
    [
        known(&h.cpu_model),
        if h.smt_active { "on" } else { "off" }.into(),
        known(&h.kernel),
        known(&h.thp),
        h.governor.clone().unwrap_or_else(|| "none".into()),
        topology,
    ]
}

/// Compare the facts of `hosts` (each a name and its facts, in the order
/// values are listed).
pub fn compare_facts(hosts: &[(String, &HostFacts)]) -> FactComparison {
    let values: Vec<[String; 6]> = hosts.iter().map(|(_, h)| compared_values(h)).collect();
    let differences: Vec<FactDifference> = COMPARED
        .iter()
        .enumerate()
        .filter(|(i, _)| values.iter().any(|v| v[*i] != values[0][*i]))
        .map(|(i, fact)| FactDifference {
            fact: fact.to_string(),
            values: values.iter().map(|v| v[i].clone()).collect(),
        })
        .collect();
    let names: Vec<String> = hosts.iter().map(|(n, _)| n.clone()).collect();
    let sentence = sentence(&names, &differences);
    FactComparison {
        hosts: names,
        differences,
        sentence,
    }
}

/// `The hosts differ in SMT (alpha on, beta off) and kernel (...).`, or
/// that the compared facts are the same.
fn sentence(names: &[String], differences: &[FactDifference]) -> String {
    if let [one] = names {
        return format!("{one} is the only host: no other machine to compare it with.");
    }
    let who = match names {
        [a, b] => format!("{a} and {b}"),
        _ => format!("The {} hosts", names.len()),
    };
    if differences.is_empty() {
        return format!(
            "{who}: the same {} (as recorded with the runs).",
            list(&COMPARED.map(String::from))
        );
    }
    let items: Vec<String> = differences
        .iter()
        .map(|d| {
            let each: Vec<String> = names
                .iter()
                .zip(&d.values)
                .map(|(n, v)| format!("{n} {v}"))
                .collect();
            format!("{} ({})", d.fact, each.join(", "))
        })
        .collect();
    format!("{who} differ in {}.", list(&items))
}

/// `a`, `a and b`, `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_topology::synthetic;

    fn host(topo: &str, smt: bool, kernel: &str) -> HostFacts {
        let t = synthetic::parse(topo).unwrap();
        HostFacts {
            hostname: None,
            kernel: Some(kernel.into()),
            cpu_model: Some("EPYC 7B13".into()),
            topology: serde_json::to_value(&t).unwrap(),
            smt_active: smt,
            governor: None,
            thp: Some("madvise".into()),
            ..HostFacts::default()
        }
    }

    #[test]
    fn smt_and_kernel_that_differ_are_named() {
        let a = host("core:2 pu:2", true, "6.1.0-18-amd64");
        let b = host("core:2", false, "6.8.0-45-generic");
        let c = compare_facts(&[("alpha".into(), &a), ("beta".into(), &b)]);
        let facts: Vec<&str> = c.differences.iter().map(|d| d.fact.as_str()).collect();
        assert_eq!(facts, ["SMT", "kernel", "topology"]);
        assert_eq!(c.differences[0].values, ["on", "off"]);
        assert_eq!(
            c.differences[1].values,
            ["6.1.0-18-amd64", "6.8.0-45-generic"]
        );
        assert!(c.differences[2].values[0].contains("4 PUs"), "{c:?}");
        assert!(
            c.sentence.starts_with(
                "alpha and beta differ in SMT (alpha on, beta off), kernel (alpha \
                 6.1.0-18-amd64, beta 6.8.0-45-generic) and topology ("
            ),
            "{}",
            c.sentence
        );
    }

    #[test]
    fn the_same_facts_say_so() {
        let a = host("core:2", false, "6.1.0");
        let c = compare_facts(&[("alpha".into(), &a), ("beta".into(), &a.clone())]);
        assert!(c.differences.is_empty());
        assert_eq!(
            c.sentence,
            "alpha and beta: the same CPU model, SMT, kernel, THP, governor and topology (as \
             recorded with the runs)."
        );
        let three = compare_facts(&[
            ("a".into(), &a),
            ("b".into(), &a),
            ("c".into(), &HostFacts::default()),
        ]);
        assert!(three
            .sentence
            .starts_with("The 3 hosts differ in CPU model (a EPYC 7B13, b EPYC 7B13, c unknown)"));
    }
}
