//! `smtlab compare RUN_A RUN_B`: matching points of two runs side by side,
//! with the speed ratio A/B and its 95% CI (baselines, regressions), and
//! the facts of the machines that differ; `smtlab compare --by host`: the
//! latest run of each host in a merged store (or the runs given), point by
//! point, each host against the first.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use smtlab_analyse::analysis::verdict::ON_THIS_MACHINE;
use smtlab_analyse::compare::{compare_hosts, compare_runs, HostComparison, HostRun, Ratio};
use smtlab_analyse::fleet::{
    host_or_unknown, hosts_without_result, latest_per_host, HostWithoutResult,
};
use smtlab_analyse::host_facts::{compare_facts, FactComparison};
use smtlab_analyse::summary::{run_data, RunData};
use smtlab_store::{RunRecord, Store};
use smtlab_types::Table;

use super::report::render_table;
use super::results::table_value;
use super::show::resolve_run;
use crate::exit::usage;
use crate::flags::{self, RunRef};
use crate::output;

/// What `--by` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// The hosts of a merged store (`smtlab merge`).
    Host,
}

#[derive(Args, Debug)]
#[command(
    override_usage = "smtlab compare [OPTIONS] RUN_A RUN_B\n       smtlab compare --by host [OPTIONS] [RUN]...",
    after_help = "A ratio above 1 means RUN_A was faster (higher throughput or lower time); with \
--by host, that the host was faster than the first host (hosts in name order).
Points match when program and parameters, model, placement, N, allocator and metric agree. The \
facts of the machines that differ (CPU model, SMT, kernel, THP, governor, topology) are named."
)]
pub struct CompareArgs {
    /// RUN_A (the run to judge, e.g. after a change) and RUN_B (the
    /// baseline), each a run id or `latest`; with --by host, one run per
    /// host [default: each host's latest run]
    #[arg(value_name = "RUN", value_parser = flags::run_ref("RUN"))]
    pub runs: Vec<RunRef>,
    /// Compare hosts: each host's latest run in a merged store (or the runs
    /// given), every point they share, each host against the first
    #[arg(long, value_name = "WHAT", value_enum)]
    pub by: Option<By>,
    /// SQLite store; {host} and {rank} in it are this host's name
    /// (SMTLAB_HOSTNAME replaces it) and the launcher's rank
    /// (`--db /shared/{host}.db`)
    #[arg(long, value_name = "PATH", default_value = "smtlab.db", value_parser = flags::db)]
    pub db: PathBuf,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// The host a run recorded.
fn host_of(r: &RunRecord) -> String {
    host_or_unknown(&r.host.hostname)
}

/// Where two runs were measured, as their comparison says it: the opening
/// of its verdicts' sentences and the names of the two machines in its
/// facts. Runs of one host are "On this machine", their facts named by
/// run; two hosts' runs say nothing about this machine: "Across hosts beta
/// (A) and alpha (B),", their facts named by host.
fn place_and_names(ra: &RunRecord, rb: &RunRecord) -> (String, [String; 2]) {
    let (ha, hb) = (host_of(ra), host_of(rb));
    if ha == hb {
        (
            ON_THIS_MACHINE.to_string(),
            [format!("run {}", ra.id), format!("run {}", rb.id)],
        )
    } else {
        (format!("Across hosts {ha} (A) and {hb} (B),"), [ha, hb])
    }
}

/// The facts that differ, one line each after the sentence.
fn render_facts(f: &FactComparison) -> String {
    let mut s = format!("machines: {}\n", f.sentence);
    for d in &f.differences {
        let each: Vec<String> = f
            .hosts
            .iter()
            .zip(&d.values)
            .map(|(h, v)| format!("{h} {v}"))
            .collect();
        s.push_str(&format!("  {}: {}\n", d.fact, each.join("; ")));
    }
    s
}

pub fn run(a: CompareArgs) -> anyhow::Result<i32> {
    if a.by == Some(By::Host) {
        return by_host(&a);
    }
    let [run_a, run_b] = a.runs[..] else {
        return Err(usage(format!(
            "compare needs two runs, RUN_A RUN_B ({} given); or --by host to compare the hosts \
             of a merged store",
            a.runs.len()
        )));
    };
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let ida = resolve_run(&store, run_a, &a.db, "RUN_A")?;
    let idb = resolve_run(&store, run_b, &a.db, "RUN_B")?;
    let (ra, rb) = (store.run(ida)?, store.run(idb)?);
    let (place, [name_a, name_b]) = place_and_names(&ra, &rb);
    let facts = compare_facts(&[(name_a, &ra.host), (name_b, &rb.host)]);
    let seed = ra.seed;
    let da = run_data(&store, ida, seed)?;
    let db = run_data(&store, idb, seed)?;
    let cmp = compare_runs(
        &place,
        &da.points,
        &db.points,
        &format!("run {ida}"),
        &format!("run {idb}"),
        seed,
    );
    if a.json {
        let doc = serde_json::json!({
            "schema": "smtlab.compare/1",
            "run_a": ida,
            "run_b": idb,
            "comparison": cmp,
            "facts": facts,
        });
        output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        return Ok(0);
    }
    let mut rows = Vec::new();
    let mut sentences = Vec::new();
    for p in &cmp.points {
        match &p.verdict {
            Some(v) => {
                rows.push(vec![
                    p.key.clone(),
                    table_value(v.median_a, &v.metric.unit),
                    table_value(v.median_b, &v.metric.unit),
                    format!("{:.3}", v.speed_ratio),
                    v.ci95
                        .map(|(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
                        .unwrap_or_else(|| "too few samples".into()),
                    match (v.significant, v.speed_ratio >= 1.0) {
                        (false, _) => "no significant difference".into(),
                        (true, true) => format!("A {:.1}% faster", (v.speed_ratio - 1.0) * 100.0),
                        (true, false) => format!("A {:.1}% slower", (1.0 - v.speed_ratio) * 100.0),
                    },
                ]);
                sentences.push(v.sentence.clone());
            }
            None => rows.push(vec![
                p.key.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "no successful samples on one side".into(),
            ]),
        }
    }
    let table = Table {
        title: format!("run {ida} (A) against run {idb} (B)"),
        columns: [
            "point",
            "median A",
            "median B",
            "A/B speed",
            "95% CI",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some("A/B speed > 1: A faster (throughput A / B, or time B / A)".into()),
    };
    let mut s = render_table(&table);
    if cmp.points.is_empty() {
        s.push_str("no matching points: the runs measured different configurations\n");
    }
    for k in &cmp.only_in_a {
        s.push_str(&format!("only in run {ida}: {k}\n"));
    }
    for k in &cmp.only_in_b {
        s.push_str(&format!("only in run {idb}: {k}\n"));
    }
    for v in sentences {
        s.push_str(&format!("  * {v}\n"));
    }
    // Runs of one machine whose facts agree need no word about them.
    if host_of(&ra) != host_of(&rb) || !facts.differences.is_empty() {
        s.push_str(&render_facts(&facts));
    }
    output::print(&s)?;
    Ok(0)
}

/// `compare --by host`.
fn by_host(a: &CompareArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let mut records: Vec<RunRecord> = Vec::new();
    // Hosts whose runs all failed, said with why rather than left out.
    let mut without: Vec<HostWithoutResult> = Vec::new();
    if a.runs.is_empty() {
        let runs = store.runs()?;
        for (_, id) in latest_per_host(&runs) {
            records.push(store.run(id)?);
        }
        without = hosts_without_result(&store, &runs)?;
    } else {
        for r in &a.runs {
            let id = resolve_run(&store, *r, &a.db, "RUN")?;
            let rec = store.run(id)?;
            if let Some(other) = records.iter().find(|o| host_of(o) == host_of(&rec)) {
                return Err(usage(format!(
                    "--by host: runs {} and {id} are both {}'s; give one run per host",
                    other.id,
                    host_of(&rec)
                )));
            }
            records.push(rec);
        }
    }
    if records.len() < 2 {
        // The hosts that are there but have nothing to compare say why;
        // with none, the way to bring other hosts.
        let (held, rest) = match (records.first(), without.is_empty()) {
            (Some(r), true) => (
                format!("runs of one host only ({})", host_of(r)),
                MERGE_FIRST.to_string(),
            ),
            (Some(r), false) => (
                format!("runs with a result of one host only ({})", host_of(r)),
                format!(", and {}", without_sentence(&without)),
            ),
            (None, true) => ("no run with a result".into(), MERGE_FIRST.to_string()),
            (None, false) => (
                "no run with a result".into(),
                format!(": {}", without_sentence(&without)),
            ),
        };
        return Err(usage(format!(
            "--by host: {} holds {held}{rest}",
            a.db.display()
        )));
    }
    let data: Vec<RunData> = records
        .iter()
        .map(|r| run_data(&store, r.id, r.seed))
        .collect::<Result<_, _>>()?;
    let runs: Vec<HostRun> = records
        .iter()
        .zip(&data)
        .map(|(r, d)| HostRun {
            host: host_of(r),
            run_id: r.id,
            facts: &r.host,
            points: &d.points,
        })
        .collect();
    let cmp = compare_hosts(&runs, records[0].seed);
    if a.json {
        let doc = serde_json::json!({
            "schema": "smtlab.compare.hosts/1",
            "comparison": cmp,
            "without_result": without,
        });
        output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        return Ok(0);
    }
    let mut s = render_hosts(&cmp);
    for w in &without {
        s.push_str(&format!(
            "{}: no run with a result, not compared: {}\n",
            w.host, w.why
        ));
    }
    output::print(&s)?;
    Ok(0)
}

/// How to compare hosts whose runs are in other stores.
const MERGE_FIRST: &str =
    "; merge the stores of the other hosts into one first (smtlab merge A.db B.db -o fleet.db)";

/// `host beta has no run with a result (run 2 (complete): ...)`, for each
/// host of `without`.
fn without_sentence(without: &[HostWithoutResult]) -> String {
    without
        .iter()
        .map(|w| format!("host {} has no run with a result ({})", w.host, w.why))
        .collect::<Vec<_>>()
        .join("; ")
}

/// `1.003 [0.991, 1.012]`, the CI when there is one.
fn ratio_cell(r: &Option<Ratio>) -> String {
    match r {
        Some(r) => match r.ci95 {
            Some((lo, hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.speed_ratio),
            None => format!("{:.3} (too few samples for a CI)", r.speed_ratio),
        },
        None => "-".into(),
    }
}

/// The table of a comparison across hosts, the points only some measured,
/// and the facts of the machines.
fn render_hosts(cmp: &HostComparison) -> String {
    let first = &cmp.hosts[0].host;
    let others = &cmp.hosts[1..];
    let mut columns = vec!["point".to_string()];
    columns.extend(
        cmp.hosts
            .iter()
            .map(|h| format!("{} median [95% CI]", h.host)),
    );
    columns.extend(
        others
            .iter()
            .map(|h| format!("{}/{first} speed [95% CI]", h.host)),
    );
    if others.len() == 1 {
        columns.push("verdict".into());
    }
    let mut rows = Vec::new();
    for p in &cmp.points {
        let unit = &p.metric.unit;
        let mut row = vec![p.key.clone()];
        for v in &p.values {
            row.push(match v.as_ref().and_then(|v| Some((v.median?, v.ci95))) {
                Some((m, Some((lo, hi)))) => format!(
                    "{} [{}, {}]",
                    table_value(m, unit),
                    table_value(lo, unit),
                    table_value(hi, unit)
                ),
                Some((m, None)) => table_value(m, unit),
                None => "-".into(),
            });
        }
        for v in &p.values[1..] {
            row.push(ratio_cell(&v.as_ref().and_then(|v| v.vs_first.clone())));
        }
        if others.len() == 1 {
            let other = &others[0].host;
            row.push(
                match p.values[1].as_ref().and_then(|v| v.vs_first.as_ref()) {
                    Some(r) if r.significant && r.speed_ratio >= 1.0 => {
                        format!("{other} {:.1}% faster", (r.speed_ratio - 1.0) * 100.0)
                    }
                    Some(r) if r.significant => {
                        format!("{other} {:.1}% slower", (1.0 - r.speed_ratio) * 100.0)
                    }
                    Some(_) => "no significant difference".into(),
                    None => "no result on one side".into(),
                },
            );
        }
        rows.push(row);
    }
    let hosts: Vec<String> = cmp
        .hosts
        .iter()
        .map(|h| format!("{} (run {})", h.host, h.run_id))
        .collect();
    let table = Table {
        title: format!(
            "{}: {} matching point{}",
            hosts.join(", "),
            cmp.points.len(),
            if cmp.points.len() == 1 { "" } else { "s" }
        ),
        columns,
        rows,
        note: Some(format!(
            "HOST/{first} speed > 1: that host faster than {first} (throughput ratio, or \
             {first}'s time over the host's)"
        )),
    };
    let mut s = render_table(&table);
    if cmp.points.is_empty() {
        s.push_str("no matching points: the hosts measured different configurations\n");
    }
    for u in &cmp.unmatched {
        s.push_str(&format!("only on {}: {}\n", u.host, u.key));
    }
    s.push_str(&render_facts(&cmp.facts));
    s
}
