//! A fleet in one store (the stores of many hosts merged with `smtlab
//! merge`): its hosts, each host's latest run ([`latest_per_host`], what
//! `compare --by host` compares), and each host's latest run of each
//! workload, analysed ([`load_fleet`], what `report --fleet` draws): per
//! workload a line per host and each host's recommendation, and the facts
//! of the machines that differ.
//!
//! A run's host is the name its facts recorded (the kernel's, or
//! `SMTLAB_HOSTNAME`); a run that recorded none is [`UNKNOWN_HOST`]'s. The
//! latest run is the one started last that has a successful sample: an
//! interrupted run with nothing measured says nothing about its host. A
//! host none of whose runs has one is not left out: it is listed apart
//! with why ([`hosts_without_result`]), for a host that failed everything
//! is what a fleet's report must not hide.

use std::collections::BTreeMap;

use serde::Serialize;
use smtlab_store::{Store, StoreError};
use smtlab_topology::Topology;
use smtlab_types::{HostFacts, Metric, Program, RunRecord, RunSummary, SampleStatus};

use crate::analysis::recommend::{NO_SMT_REASON, NO_STUDY_REASON, SMT_SWITCHED_OFF_REASON};
use crate::analysis::{analyze, Recommendation, SeriesKey, SmtAdvice};
use crate::host_facts::{compare_facts, compared_values, FactComparison, COMPARED};
use crate::summary::{run_data, RunData};

/// The host of a run that recorded no host name.
pub const UNKNOWN_HOST: &str = "unknown";

/// The host a run recorded (its summary's or its facts' host name), or
/// [`UNKNOWN_HOST`]; as it can be shown in one line of a table (a name
/// stored before names were checked, with a line break, escaped: two names
/// stay two).
pub fn host_or_unknown(name: &Option<String>) -> String {
    match name {
        Some(n) => smtlab_store::printable(n).into_owned(),
        None => UNKNOWN_HOST.into(),
    }
}

/// Runs in a store, latest first per host: (host, runs), hosts sorted by
/// name; only runs with a successful sample.
fn runs_per_host(runs: &[RunSummary]) -> Vec<(String, Vec<&RunSummary>)> {
    let mut by_host: BTreeMap<String, Vec<&RunSummary>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.samples > r.failed_samples) {
        by_host
            .entry(host_or_unknown(&r.hostname))
            .or_default()
            .push(r);
    }
    by_host
        .into_iter()
        .map(|(h, mut rs)| {
            rs.sort_by(|a, b| b.started_at.total_cmp(&a.started_at).then(b.id.cmp(&a.id)));
            (h, rs)
        })
        .collect()
}

/// A host with runs in the store, none with a successful sample.
#[derive(Debug, Clone, Serialize)]
pub struct HostWithoutResult {
    pub host: String,
    /// Its runs, latest first.
    pub runs: Vec<i64>,
    /// Why its latest run has no result: `run 2 (complete): its 4 samples
    /// failed: 4 crashed (worker 0 killed by SIGSEGV)`.
    pub why: String,
    /// The compared facts (name, value) of its latest run.
    pub facts: Vec<(String, String)>,
    /// Its latest run's facts, for comparing the machines.
    #[serde(skip)]
    pub host_facts: HostFacts,
}

/// The hosts of `runs` none of whose runs has a successful sample, by
/// name, each with why its latest run has none (read from `store`).
pub fn hosts_without_result(
    store: &Store,
    runs: &[RunSummary],
) -> Result<Vec<HostWithoutResult>, StoreError> {
    let with: Vec<String> = runs_per_host(runs).into_iter().map(|(h, _)| h).collect();
    let mut by_host: BTreeMap<String, Vec<&RunSummary>> = BTreeMap::new();
    for r in runs {
        let host = host_or_unknown(&r.hostname);
        if !with.contains(&host) {
            by_host.entry(host).or_default().push(r);
        }
    }
    let mut out = Vec::new();
    for (host, mut rs) in by_host {
        rs.sort_by(|a, b| b.started_at.total_cmp(&a.started_at).then(b.id.cmp(&a.id)));
        let latest = rs[0];
        let mut why = why_no_result(store, latest)?;
        if rs.len() > 1 {
            why.push_str(&format!(
                "; its {} earlier run{} had none either",
                rs.len() - 1,
                if rs.len() == 2 { "" } else { "s" }
            ));
        }
        let host_facts = store.run(latest.id)?.host;
        out.push(HostWithoutResult {
            host,
            runs: rs.iter().map(|r| r.id).collect(),
            why,
            facts: COMPARED
                .iter()
                .map(|f| f.to_string())
                .zip(compared_values(&host_facts))
                .collect(),
            host_facts,
        });
    }
    Ok(out)
}

/// Why run `r` has no successful sample: it has none at all, or what its
/// samples failed with, by kind (failed, crashed, ...), the commonest
/// first, each with its first reason (its first line, cut to 120
/// characters) and how many other reasons it had.
fn why_no_result(store: &Store, r: &RunSummary) -> Result<String, StoreError> {
    let head = format!("run {} ({})", r.id, r.status.as_str());
    if r.samples == 0 {
        return Ok(format!("{head} has no sample"));
    }
    // Per kind: how many samples, and their reasons in order, once each.
    let mut kinds: BTreeMap<&'static str, (u64, Vec<String>)> = BTreeMap::new();
    for (point_id, _) in store.points(r.id)? {
        for s in store.samples(point_id)? {
            if s.status == SampleStatus::Ok {
                continue;
            }
            let reason: String = s
                .reason
                .as_deref()
                .and_then(|t| t.lines().map(str::trim).find(|l| !l.is_empty()))
                .unwrap_or("no reason recorded")
                .chars()
                .take(120)
                .collect();
            let kind = kinds.entry(s.status.as_str()).or_default();
            kind.0 += 1;
            if !kind.1.contains(&reason) {
                kind.1.push(reason);
            }
        }
    }
    let mut counted: Vec<(&str, (u64, Vec<String>))> = kinds.into_iter().collect();
    counted.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    let parts: Vec<String> = counted
        .iter()
        .map(|(kind, (n, reasons))| {
            let others = match reasons.len() {
                0 | 1 => String::new(),
                2 => "; 1 other reason".into(),
                k => format!("; {} other reasons", k - 1),
            };
            format!(
                "{n} {} ({}{others})",
                kind.replace('_', " "),
                reasons.first().map_or("", String::as_str)
            )
        })
        .collect();
    let all = if r.samples == 1 {
        "its sample failed".to_string()
    } else {
        format!("its {} samples failed", r.samples)
    };
    Ok(format!("{head}: {all}: {}", parts.join(", ")))
}

/// Each host's latest run with a successful sample: (host, run id), hosts
/// sorted by name.
pub fn latest_per_host(runs: &[RunSummary]) -> Vec<(String, i64)> {
    runs_per_host(runs)
        .into_iter()
        .filter_map(|(h, rs)| Some((h, rs.first()?.id)))
        .collect()
}

/// The fleet as its report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct Fleet {
    /// The hosts with a run with a result.
    pub hosts: Vec<FleetHost>,
    /// The hosts with runs but none with a result, and why.
    pub without_result: Vec<HostWithoutResult>,
    /// Every workload some host measured, by name.
    pub workloads: Vec<FleetWorkload>,
    /// The facts of the hosts' machines that differ (from each host's
    /// latest run used, or latest run for a host without a result), hosts
    /// by name.
    pub facts: FactComparison,
    /// What could not be shown and why.
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FleetHost {
    pub host: String,
    /// The runs the report uses, latest first.
    pub runs: Vec<i64>,
    /// The compared facts (name, value) of its latest run used.
    pub facts: Vec<(String, String)>,
    /// The run shared its host with other tasks of a launcher's job.
    pub shared: bool,
}

/// One workload across the hosts that measured it.
#[derive(Debug, Clone, Serialize)]
pub struct FleetWorkload {
    /// The program's label (`spin`, `jbb`, `sor thr2`).
    pub program: String,
    /// The metric of the chart: the first host's.
    pub metric: Metric,
    /// The hosts that measured it, in host order.
    pub hosts: Vec<WorkloadOnHost>,
}

/// One host's latest run of a workload.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadOnHost {
    pub host: String,
    pub run_id: i64,
    /// The analysis' recommendations for the workload (one per allocator
    /// measured); empty when no point has a result.
    pub recommendations: Vec<HostRecommendation>,
    /// The recommended configuration's median against N (the chart's
    /// line); `None` without a result, or on another metric than the
    /// chart's.
    pub line: Option<FleetLine>,
}

/// A recommendation, short enough for a table row.
#[derive(Debug, Clone, Serialize)]
pub struct HostRecommendation {
    /// `2 processes, compact; SMT pays +18%`.
    pub short: String,
    /// The analysis' own sentence.
    pub sentence: String,
    pub alloc: String,
    pub median: f64,
    pub metric: Metric,
    pub smt: SmtAdvice,
}

/// A host's line on a workload's chart.
#[derive(Debug, Clone, Serialize)]
pub struct FleetLine {
    /// The configuration: `thread / compact` (`/ jemalloc` when not glibc).
    pub series: String,
    pub metric: Metric,
    pub points: Vec<LinePoint>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LinePoint {
    pub workers: usize,
    pub median: f64,
    pub ci95: Option<(f64, f64)>,
}

/// `2 processes`, `1 thread`, `4 workers as hybrid:2x2`.
fn workers_phrase(model: &str, n: usize) -> String {
    let plural = |one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match model {
        "thread" => plural("thread", "threads"),
        "process" => plural("process", "processes"),
        other => format!("{} as {other}", plural("worker", "workers")),
    }
}

/// What a recommendation says about SMT, in a few words.
fn smt_phrase(smt: &SmtAdvice) -> String {
    let pct = |gain: f64| format!("{:+.0}%", gain * 100.0);
    match smt {
        SmtAdvice::Pays { gain, .. } => format!("SMT pays {}", pct(*gain)),
        SmtAdvice::DoesNotPay { gain, .. } => format!("SMT does not pay ({})", pct(*gain)),
        SmtAdvice::CannotTell { gain, .. } => format!("SMT undecided ({})", pct(*gain)),
        SmtAdvice::Unknown { reason } if reason == NO_SMT_REASON => "no SMT".into(),
        SmtAdvice::Unknown { reason } if reason == SMT_SWITCHED_OFF_REASON => {
            "SMT switched off".into()
        }
        SmtAdvice::Unknown { reason } if reason == NO_STUDY_REASON => "SMT not studied".into(),
        SmtAdvice::Unknown { .. } => "SMT unknown".into(),
    }
}

/// `2 processes, compact; SMT pays +18%` (`, jemalloc` when the allocator
/// is not the system's).
pub fn short_recommendation(r: &Recommendation) -> String {
    let alloc = if r.alloc == "glibc" {
        String::new()
    } else {
        format!(", {}", r.alloc)
    };
    format!(
        "{}, {}{alloc}; {}",
        workers_phrase(&r.model, r.workers),
        r.placement,
        smt_phrase(&r.smt)
    )
}

/// One run loaded and analysed.
struct Analysed {
    run: RunRecord,
    data: RunData,
    analysis: crate::analysis::Analysis,
}

/// The programs of a run, in plan order; co-runs (the pairs study) are not
/// a sweep over N and are left out.
fn programs(data: &RunData) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &data.points {
        let pt = &p.summary.point;
        if matches!(pt.program, Program::CoRun { .. }) {
            continue;
        }
        let label = pt.program.label();
        if !out.contains(&label) {
            out.push(label);
        }
    }
    out
}

/// Load every host's latest run of each workload from `store` and analyse
/// it.
pub fn load_fleet(store: &Store) -> Result<Fleet, StoreError> {
    let summaries = store.runs()?;
    let mut hosts = Vec::new();
    let mut notes = Vec::new();
    // Per host: the runs used (latest first) and, per program, the index
    // of the run that measured it last.
    let mut used: Vec<Vec<Analysed>> = Vec::new();
    let mut per_program: Vec<BTreeMap<String, usize>> = Vec::new();
    for (host, runs) in runs_per_host(&summaries) {
        let (mine, programs_of) = analyse_host_runs(store, &host, &runs, &mut notes)?;
        if mine.is_empty() {
            continue;
        }
        hosts.push(fleet_host(&host, &mine, &mut notes));
        used.push(mine);
        per_program.push(programs_of);
    }

    // Workloads in name order, each host's latest run of it.
    let mut names: Vec<String> = per_program.iter().flat_map(|m| m.keys().cloned()).collect();
    names.sort();
    names.dedup();
    let ran = HostRuns {
        hosts: &hosts,
        used: &used,
        per_program: &per_program,
    };
    let workloads: Vec<FleetWorkload> = names
        .into_iter()
        .filter_map(|program| ran.workload(program, &mut notes))
        .collect();
    let without_result = hosts_without_result(store, &summaries)?;
    for w in &without_result {
        notes.push(format!(
            "{}: no run with a result, so no recommendation and no line: {}.",
            w.host, w.why
        ));
    }
    let mut named: Vec<(String, &HostFacts)> = hosts
        .iter()
        .zip(&used)
        .map(|(h, runs)| (h.host.clone(), &runs[0].run.host))
        .chain(
            without_result
                .iter()
                .map(|w| (w.host.clone(), &w.host_facts)),
        )
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    let facts = compare_facts(&named);
    Ok(Fleet {
        hosts,
        without_result,
        workloads,
        facts,
        notes,
    })
}

/// One host's runs (latest first), each loaded and analysed if it is the
/// latest to measure some program; a run whose stored topology cannot be
/// read is left out with a note. Returns the runs used and, per program,
/// the index of the run that measured it last.
fn analyse_host_runs(
    store: &Store,
    host: &str,
    runs: &[&RunSummary],
    notes: &mut Vec<String>,
) -> Result<(Vec<Analysed>, BTreeMap<String, usize>), StoreError> {
    let mut mine: Vec<Analysed> = Vec::new();
    let mut programs_of: BTreeMap<String, usize> = BTreeMap::new();
    for r in runs {
        let run = store.run(r.id)?;
        let topo: Topology = match serde_json::from_value(run.host.topology.clone()) {
            Ok(t) => t,
            Err(_) => {
                notes.push(format!(
                    "{host}: run {} is left out: its stored topology is unreadable.",
                    r.id
                ));
                continue;
            }
        };
        let data = run_data(store, r.id, run.seed)?;
        let new: Vec<String> = programs(&data)
            .into_iter()
            .filter(|p| !programs_of.contains_key(p))
            .collect();
        if new.is_empty() {
            continue;
        }
        for p in new {
            programs_of.insert(p, mine.len());
        }
        let analysis = analyze(&data.points, &topo, run.seed);
        mine.push(Analysed {
            run,
            data,
            analysis,
        });
    }
    Ok((mine, programs_of))
}

/// A host's row of the fleet (its runs, and its latest run's facts), with
/// a note for each of its runs that shared the host with other tasks.
fn fleet_host(host: &str, mine: &[Analysed], notes: &mut Vec<String>) -> FleetHost {
    let latest = &mine[0].run.host;
    let row = FleetHost {
        host: host.to_string(),
        runs: mine.iter().map(|a| a.run.id).collect(),
        facts: COMPARED
            .iter()
            .map(|f| f.to_string())
            .zip(compared_values(latest))
            .collect(),
        shared: mine.iter().any(|a| a.run.host.shared_host.is_some()),
    };
    for a in mine.iter().filter(|a| a.run.host.shared_host.is_some()) {
        let s = a.run.host.shared_host.as_ref().expect("filtered");
        notes.push(format!(
            "{host}: run {} shared its host with other tasks of a {} job ({} on the host, \
             --shared-host): its measurements may have disturbed each other.",
            a.run.id, s.launcher, s.tasks
        ));
    }
    row
}

/// The hosts with a result, side by side with their analysed runs and,
/// per program, which of those runs measured it last.
struct HostRuns<'a> {
    hosts: &'a [FleetHost],
    used: &'a [Vec<Analysed>],
    per_program: &'a [BTreeMap<String, usize>],
}

impl HostRuns<'_> {
    /// One workload across the hosts: each host's recommendations and
    /// chart line from its latest run of `program`, the chart's metric
    /// being the first host's (a host that measured another metric keeps
    /// its recommendations but not its line, with a note). `None` when no
    /// metric can be found, not even a planned one.
    fn workload(&self, program: String, notes: &mut Vec<String>) -> Option<FleetWorkload> {
        let mut on_hosts: Vec<WorkloadOnHost> = Vec::new();
        // The chart's metric and the host whose line set it.
        let mut metric: Option<(Metric, String)> = None;
        for (h, host) in self.hosts.iter().enumerate() {
            let Some(&i) = self.per_program[h].get(&program) else {
                continue;
            };
            let a = &self.used[h][i];
            let recs: Vec<&Recommendation> = a
                .analysis
                .recommendations
                .iter()
                .filter(|r| r.program == program)
                .collect();
            let mut line = recs.first().and_then(|r| line_of(a, r));
            match (&metric, &line) {
                (None, Some(l)) => metric = Some((l.metric.clone(), host.host.clone())),
                (Some((m, first)), Some(l)) if *m != l.metric => {
                    notes.push(format!(
                        "{program}: {} measured {} and {first} {}: its line is left out of the \
                         chart (its recommendation is in the table).",
                        host.host, l.metric.name, m.name
                    ));
                    line = None;
                }
                _ => {}
            }
            if recs.is_empty() {
                notes.push(format!(
                    "{}: no point of run {} on {} has a result, so it has no line and no \
                     recommendation.",
                    program, a.run.id, host.host
                ));
            }
            on_hosts.push(WorkloadOnHost {
                host: host.host.clone(),
                run_id: a.run.id,
                recommendations: recs.iter().map(|r| host_recommendation(r)).collect(),
                line,
            });
        }
        let metric = metric
            .map(|(m, _)| m)
            .or_else(|| self.planned_metric(&program))?;
        Some(FleetWorkload {
            program,
            metric,
            hosts: on_hosts,
        })
    }

    /// The metric `program`'s points planned, on the first host that ran
    /// it: the chart's metric when no host has a result.
    fn planned_metric(&self, program: &str) -> Option<Metric> {
        let (h, &i) = self
            .per_program
            .iter()
            .enumerate()
            .find_map(|(h, m)| Some((h, m.get(program)?)))?;
        self.used[h][i]
            .data
            .points
            .iter()
            .find(|p| p.summary.point.program.label() == program)
            .map(|p| p.summary.point.metric.clone())
    }
}

/// A recommendation as a host's row of a workload shows it.
fn host_recommendation(r: &Recommendation) -> HostRecommendation {
    HostRecommendation {
        short: short_recommendation(r),
        sentence: r.sentence.clone(),
        alloc: r.alloc.clone(),
        median: r.median,
        metric: r.metric.clone(),
        smt: r.smt.clone(),
    }
}

/// The series a recommendation chose (its model, placement and
/// allocator), as a chart line.
fn line_of(a: &Analysed, r: &Recommendation) -> Option<FleetLine> {
    let key = SeriesKey {
        program: r.program.clone(),
        alloc: r.alloc.clone(),
        model: r.model.clone(),
        placement: r.placement.clone(),
    };
    let s = a.analysis.series.iter().find(|s| s.key == key)?;
    let alloc = if r.alloc == "glibc" {
        String::new()
    } else {
        format!(" / {}", r.alloc)
    };
    Some(FleetLine {
        series: format!("{} / {}{alloc}", r.model, r.placement),
        metric: s.metric.clone(),
        points: s
            .points
            .iter()
            .map(|p| LinePoint {
                workers: p.workers,
                median: p.median,
                ci95: p.ci95,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_types::RunStatus;

    fn summary(id: i64, host: Option<&str>, started: f64, samples: u64, failed: u64) -> RunSummary {
        RunSummary {
            id,
            started_at: started,
            finished_at: None,
            status: RunStatus::Complete,
            points: 1,
            samples,
            failed_samples: failed,
            command_line: Vec::new(),
            hostname: host.map(String::from),
        }
    }

    #[test]
    fn the_latest_run_with_a_result_of_each_host() {
        let runs = [
            summary(1, Some("beta"), 10.0, 5, 0),
            summary(2, Some("alpha"), 20.0, 5, 0),
            // Merged from another store: a lower id, started later.
            summary(3, Some("beta"), 30.0, 5, 0),
            summary(4, Some("alpha"), 5.0, 5, 0),
            // Nothing but failures: says nothing about alpha.
            summary(5, Some("alpha"), 40.0, 3, 3),
            summary(6, None, 1.0, 1, 0),
        ];
        assert_eq!(
            latest_per_host(&runs),
            [
                ("alpha".to_string(), 2),
                ("beta".to_string(), 3),
                (UNKNOWN_HOST.to_string(), 6)
            ]
        );
    }

    fn rec(model: &str, workers: usize, alloc: &str, smt: SmtAdvice) -> Recommendation {
        Recommendation {
            program: "jbb".into(),
            alloc: alloc.into(),
            model: model.into(),
            placement: "compact".into(),
            workers,
            median: 1.0,
            metric: Metric {
                name: "throughput".into(),
                unit: "ops/s".into(),
                higher_is_better: true,
            },
            smt,
            sentence: String::new(),
        }
    }

    #[test]
    fn recommendations_in_a_few_words() {
        let r = rec(
            "process",
            2,
            "glibc",
            SmtAdvice::Unknown {
                reason: NO_SMT_REASON.into(),
            },
        );
        assert_eq!(short_recommendation(&r), "2 processes, compact; no SMT");
        let r = rec(
            "thread",
            4,
            "jemalloc",
            SmtAdvice::Pays {
                gain: 0.18,
                ci95: (0.15, 0.21),
            },
        );
        assert_eq!(
            short_recommendation(&r),
            "4 threads, compact, jemalloc; SMT pays +18%"
        );
        let r = rec(
            "hybrid:2x2",
            4,
            "glibc",
            SmtAdvice::DoesNotPay {
                gain: 0.02,
                ci95: (0.01, 0.03),
            },
        );
        assert_eq!(
            short_recommendation(&r),
            "4 workers as hybrid:2x2, compact; SMT does not pay (+2%)"
        );
        let r = rec(
            "thread",
            2,
            "glibc",
            SmtAdvice::CannotTell {
                gain: 0.06,
                ci95: Some((0.03, 0.09)),
                samples: 10,
            },
        );
        assert_eq!(
            short_recommendation(&r),
            "2 threads, compact; SMT undecided (+6%)"
        );
        let r = rec(
            "thread",
            1,
            "glibc",
            SmtAdvice::Unknown {
                reason: NO_STUDY_REASON.into(),
            },
        );
        assert_eq!(
            short_recommendation(&r),
            "1 thread, compact; SMT not studied"
        );
    }
}
