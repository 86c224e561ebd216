//! Rendering of plans and run results, shared by `run` and `show`: the
//! terminal tables and the stable JSON document.

use std::fmt::Write;

use serde::Serialize;
use smtlab_analyse::summary::{CounterSummary, PointSummary};
use smtlab_types::extras::{self, chat, dsm, server, web};
use smtlab_types::RunStatus;
use smtlab_types::{CounterScope, CounterStatus};
use smtlab_types::{Point, Program};

pub use smtlab_analyse::units::table_value;

fn cpus_cell(p: &Point) -> String {
    match &p.cpus {
        None => "-".into(),
        Some(c) => {
            let mut seen = Vec::new();
            for x in c {
                if !seen.contains(x) {
                    seen.push(*x);
                }
            }
            let s: Vec<String> = seen.iter().map(|x| x.to_string()).collect();
            let mut t = s.join(",");
            if t.len() > 24 {
                t.truncate(21);
                t.push_str("...");
            }
            t
        }
    }
}

/// `--dry-run`: every point and its CPUs.
pub fn render_plan(points: &[Point]) -> String {
    let mut s = String::new();
    // The program column as wide as its longest label (`chat
    // connections=10000`), at least 12.
    let wp = points
        .iter()
        .map(|p| p.program.label().chars().count())
        .max()
        .unwrap_or(0)
        .max(12);
    writeln!(
        s,
        "{} point{}:",
        points.len(),
        crate::output::plural(points.len() as u64)
    )
    .unwrap();
    writeln!(
        s,
        "{:>4}  {:<wp$} {:<14} {:<10} {:>4}  {:<9} {:<7}  cpus",
        "#", "program", "model", "placement", "N", "alloc", "oversub"
    )
    .unwrap();
    for p in points {
        writeln!(
            s,
            "{:>4}  {:<wp$} {:<14} {:<10} {:>4}  {:<9} {:<7.2}  {}",
            p.index,
            p.program.label(),
            p.model.to_string(),
            p.placement,
            p.workers,
            p.alloc,
            p.oversubscription,
            p.cpus.as_ref().map_or("not pinned".to_string(), |c| {
                c.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
        )
        .unwrap();
    }
    s
}

/// The results table of a run, then counters and failures.
pub fn render_table(run_id: i64, status: RunStatus, reports: &[PointSummary]) -> String {
    let mut s = String::new();
    let samples: usize = reports.iter().map(|r| r.samples).sum();
    let failed: usize = reports.iter().map(|r| r.failed).sum();
    writeln!(
        s,
        "run {run_id} ({}): {} points, {samples} measured samples, {failed} failed",
        status.as_str(),
        reports.len()
    )
    .unwrap();
    // Columns as wide as their longest entry, so that long workload names
    // (cache_scratch) and placements keep the table aligned.
    let width = |f: &dyn Fn(&Point) -> String, title: &str| {
        reports
            .iter()
            .map(|r| f(&r.point).chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let wp = width(&|p| p.program.label(), "program");
    let wm = width(&|p| p.model.to_string(), "model");
    let wl = width(&|p| p.placement.clone(), "placement");
    // The allocator is part of a point's identity: shown as soon as a run
    // uses one other than the system's (otherwise points would look alike).
    let show_alloc = reports.iter().any(|r| r.point.alloc != "glibc");
    let wa = width(&|p| p.alloc.clone(), "alloc");
    let alloc_col = |a: &str| {
        if show_alloc {
            format!(" {a:<wa$}")
        } else {
            String::new()
        }
    };
    writeln!(
        s,
        "{:>3}  {:<wp$} {:<wm$} {:<wl$} {:>3}{} {:<12} {:>4}  {:>12}  {:<25} {:>6} {:>4}",
        "#",
        "program",
        "model",
        "placement",
        "N",
        alloc_col("alloc"),
        "cpus",
        "n",
        "median",
        "95% CI",
        "±",
        "out"
    )
    .unwrap();
    for r in reports {
        let p = &r.point;
        let unit = &p.metric.unit;
        let (median, ci, pm) = match &r.summary {
            Some(sm) => (
                table_value(sm.median, unit),
                sm.ci95.map_or("-".to_string(), |(lo, hi)| {
                    format!("[{}, {}]", table_value(lo, unit), table_value(hi, unit))
                }),
                sm.ci_half_width_rel
                    .map_or("-".to_string(), |h| format!("{:.1}%", h * 100.0)),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        writeln!(
            s,
            "{:>3}  {:<wp$} {:<wm$} {:<wl$} {:>3}{} {:<12} {:>4}  {:>12}  {:<25} {:>6} {:>4}",
            p.index,
            p.program.label(),
            p.model.to_string(),
            p.placement,
            p.workers,
            alloc_col(&p.alloc),
            cpus_cell(p),
            r.samples,
            median,
            ci,
            pm,
            r.outliers.len()
        )
        .unwrap();
    }
    if let Some(first) = reports.first() {
        let m = &first.point.metric;
        writeln!(
            s,
            "metric: {} ({}, {} is better); n = successful measured samples, ± = 95% CI half-width of the median",
            m.name,
            if m.unit.is_empty() { "-" } else { &m.unit },
            if m.higher_is_better { "higher" } else { "lower" }
        )
        .unwrap();
    }
    s.push_str(&render_counters(reports));
    s.push_str(&render_extras(reports));
    for r in reports {
        if let Some(short) = &r.shortfall {
            writeln!(s, "point {}: {short}", r.point.index).unwrap();
        }
    }
    for r in reports.iter().filter(|r| !r.failures.is_empty()) {
        writeln!(s, "point {}: {} sample(s) not ok:", r.point.index, r.failed).unwrap();
        for f in r.failures.iter().take(3) {
            writeln!(s, "  {f}").unwrap();
        }
        if r.failures.len() > 3 {
            writeln!(
                s,
                "  ... and {} more (smtlab show --json)",
                r.failures.len() - 3
            )
            .unwrap();
        }
    }
    s
}

/// One line per point with the workload's extra observations (medians
/// over samples), when it made any: `show --json` has them too.
fn render_extras(reports: &[PointSummary]) -> String {
    let mut s = String::new();
    for r in reports.iter().filter(|r| !r.extras.is_empty()) {
        if let Some(line) = server_line(r) {
            s.push_str(&line);
            continue;
        }
        let items: Vec<String> = r
            .extras
            .iter()
            // A DSM point's per-rank split (`rank.3.wait_s`) is for `show
            // --json` and `study comm`'s tables; the line keeps the totals.
            .filter(|(k, _)| !dsm::is_rank_key(k))
            .map(|(k, v)| {
                if extras::is_share(k) {
                    format!("{k} {:.1}%", v * 100.0)
                } else if v.fract() == 0.0 || v.abs() >= 1000.0 {
                    // Counts (a median of two may end in .5).
                    format!("{k} {v:.0}")
                } else if v.abs() >= 0.001 {
                    // Rates (a co-run part's operations per second).
                    format!("{k} {}", table_value(*v, ""))
                } else {
                    format!("{k} {v:.3e}")
                }
            })
            .collect();
        writeln!(s, "point {} extras: {}", r.point.index, items.join(", ")).unwrap();
    }
    s
}

/// A server point's costs per request (the paper's Table 3 without the
/// counters, which come with the counter lines), and, when the load
/// generator was the bottleneck, a line saying so.
fn server_line(r: &PointSummary) -> Option<String> {
    let x = &r.extras;
    let get = |k: &str| x.get(k).copied().unwrap_or(f64::NAN);
    let mut s = if let Some(user) = x.get(chat::SERVER_USER_US_PER_MSG) {
        // A chat point: per delivered message, over the message phase.
        format!(
            "point {} per message delivered: server CPU {user:.2} µs user + {:.2} µs sys, \
             context switches {:.4} voluntary + {:.4} involuntary; {:.0} connections, {:.0} \
             server threads, {:.1} KiB of server PSS per connection; latency p50 {:.0} µs, p99 \
             {:.0} µs; client CPUs {:.0}% busy\n",
            r.point.index,
            get(chat::SERVER_SYS_US_PER_MSG),
            get(chat::VOLUNTARY_CS_PER_MSG),
            get(chat::INVOLUNTARY_CS_PER_MSG),
            get(chat::CONNECTIONS),
            get(chat::SERVER_THREADS),
            get(chat::SERVER_PSS_KB_PER_CONNECTION),
            get(server::LATENCY_P50_US),
            get(server::LATENCY_P99_US),
            get(server::CLIENT_CPU_SHARE) * 100.0,
        )
    } else {
        server_request_line(r)?
    };
    let errors: Vec<String> = x
        .iter()
        .filter_map(|(k, v)| Some((server::parse_errors_key(k)?, v)))
        .map(|(k, v)| format!("{k} {v:.0}"))
        .collect();
    if !errors.is_empty() {
        s.push_str(&format!(
            "point {} errors per sample (median): {}\n",
            r.point.index,
            errors.join(", ")
        ));
    }
    if get(server::CLIENT_BOUND) >= 0.5 {
        s.push_str(&format!(
            "point {}: the load generator, not the server, was the bottleneck (its CPUs {:.0}% \
             busy): the server may serve more than shown; give it more client CPUs \
             (--client-cpus)\n",
            r.point.index,
            get(server::CLIENT_CPU_SHARE) * 100.0
        ));
    }
    if get(server::CLIENT_PINNED) < 0.5 {
        s.push_str(&format!(
            "point {}: the load generator shared the server's CPUs (none was left for it)\n",
            r.point.index
        ));
    }
    Some(s)
}

/// A web point's costs per request (the paper's Table 3 without the
/// counters, which come with the counter lines).
fn server_request_line(r: &PointSummary) -> Option<String> {
    let x = &r.extras;
    let user = x.get(web::SERVER_USER_US_PER_REQ)?;
    let sys = x
        .get(web::SERVER_SYS_US_PER_REQ)
        .copied()
        .unwrap_or(f64::NAN);
    let get = |k: &str| x.get(k).copied().unwrap_or(f64::NAN);
    Some(format!(
        "point {} per request: server CPU {user:.1} µs user + {sys:.1} µs sys, context switches \
         {:.3} voluntary + {:.3} involuntary; latency p50 {:.0} µs, p99 {:.0} µs; client CPUs \
         {:.0}% busy\n",
        r.point.index,
        get(web::VOLUNTARY_CS_PER_REQ),
        get(web::INVOLUNTARY_CS_PER_REQ),
        get(server::LATENCY_P50_US),
        get(server::LATENCY_P99_US),
        get(server::CLIENT_CPU_SHARE) * 100.0,
    ))
}

/// The counters people read first, per point (medians per sample, summed
/// over threads, user + kernel where both were counted), then the ones this
/// machine cannot count, with why. Every counter is in `show --json`.
fn render_counters(reports: &[PointSummary]) -> String {
    const SHOWN: [(&str, &str); 7] = [
        ("cycles", "cycles"),
        ("instructions", "instr"),
        ("cache-misses", "cache-miss"),
        ("dTLB-load-misses", "dTLB-miss"),
        ("context-switches", "ctx-sw"),
        ("cpu-migrations", "migr"),
        ("page-faults", "faults"),
    ];
    let mut s = String::new();
    let mut unsupported: Vec<(String, String)> = Vec::new();
    let mut any = false;
    for r in reports {
        let mut parts = Vec::new();
        let mut min_fraction = 1.0f64;
        for (name, short) in SHOWN {
            if let Some(v) = total(&r.counters, name) {
                parts.push(format!("{short} {}", table_value(v, "")));
            }
        }
        if let (Some(i), Some(c)) = (
            total(&r.counters, "instructions"),
            total(&r.counters, "cycles"),
        ) {
            if c > 0.0 {
                parts.insert(0, format!("IPC {:.2}", i / c));
            }
        }
        for c in &r.counters {
            if let Some(f) = c.min_fraction_running {
                min_fraction = min_fraction.min(f);
            }
            if c.status != CounterStatus::Ok || c.median.is_none() {
                let name = format!("{}{}", c.name, scope_suffix(c.scope));
                if !unsupported.iter().any(|(n, _)| *n == name) {
                    unsupported.push((name, reason(c)));
                }
            }
        }
        if !parts.is_empty() {
            if !any {
                writeln!(s, "counters (median per sample, all threads, user+kernel; all of them: show --json):").unwrap();
                any = true;
            }
            let mux = if min_fraction < 0.999 {
                format!(
                    " (multiplexed, scaled: counted {:.0}% of the time at least)",
                    min_fraction * 100.0
                )
            } else {
                String::new()
            };
            writeln!(s, "  #{}: {}{mux}", r.point.index, parts.join(", ")).unwrap();
        }
    }
    if !unsupported.is_empty() {
        // Group by reason: usually one reason covers every hardware event.
        let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
        for (n, why) in unsupported {
            match by_reason.iter_mut().find(|(w, _)| *w == why) {
                Some((_, names)) => names.push(n),
                None => by_reason.push((why, vec![n])),
            }
        }
        for (why, names) in by_reason {
            writeln!(s, "not measured here: {} ({why})", names.join(", ")).unwrap();
        }
    }
    s
}

/// A counter's median, adding the user and kernel scopes when both have
/// values; `None` when it has no value at all.
fn total(counters: &[CounterSummary], name: &str) -> Option<f64> {
    let get = |scope: CounterScope| {
        counters
            .iter()
            .find(|c| c.name == name && c.scope == scope && c.status == CounterStatus::Ok)
            .and_then(|c| c.median)
    };
    match (
        get(CounterScope::All),
        get(CounterScope::User),
        get(CounterScope::Kernel),
    ) {
        (Some(a), _, _) => Some(a),
        (None, Some(u), Some(k)) => Some(u + k),
        (None, Some(u), None) => Some(u),
        _ => None,
    }
}

fn scope_suffix(scope: CounterScope) -> &'static str {
    match scope {
        CounterScope::All => "",
        CounterScope::User => ":u",
        CounterScope::Kernel => ":k",
    }
}

fn reason(c: &CounterSummary) -> String {
    let status = match c.status {
        CounterStatus::Ok => "ok",
        CounterStatus::Unsupported => "unsupported",
        CounterStatus::NotPermitted => "not permitted",
        CounterStatus::Error => "error",
    };
    match &c.reason {
        Some(r) => format!("{status}: {r}"),
        None => status.to_string(),
    }
}

#[derive(Serialize)]
struct PointJson<'a> {
    index: usize,
    program: &'a Program,
    workload: String,
    model: String,
    processes: usize,
    threads_per_process: usize,
    placement: &'a str,
    threads: usize,
    cpus: &'a Option<Vec<u32>>,
    oversubscription: f64,
    alloc: &'a str,
    samples: usize,
    warmups: usize,
    failed: usize,
    metric: &'a str,
    unit: &'a str,
    higher_is_better: bool,
    median: Option<f64>,
    mean: Option<f64>,
    stddev: Option<f64>,
    ci95: Option<[f64; 2]>,
    outliers: &'a [usize],
    failures: &'a [String],
    /// Why the point has fewer samples than --min-samples, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    shortfall: Option<&'a str>,
    counters: &'a [CounterSummary],
    derived: &'a smtlab_analyse::derived::Derived,
    user_s: Option<f64>,
    sys_s: Option<f64>,
    voluntary_cs: Option<f64>,
    involuntary_cs: Option<f64>,
    minor_faults: Option<f64>,
    migrations: Option<f64>,
    peak_rss_kb: Option<f64>,
    pss_kb: Option<f64>,
    worker_ops: &'a [f64],
    /// The workload's extra observations (medians), with derived ratios
    /// such as `foreign_share`; `{}` for most workloads.
    extras: &'a std::collections::BTreeMap<String, f64>,
}

/// The stable JSON of a run's results (`schema: smtlab.run/1`).
pub fn run_json(run_id: i64, status: RunStatus, reports: &[PointSummary]) -> serde_json::Value {
    let finite = |v: f64| v.is_finite().then_some(v);
    let points: Vec<PointJson> = reports
        .iter()
        .map(|r| {
            let p = &r.point;
            let (procs, tpp) = p.model.shape(p.workers);
            PointJson {
                index: p.index,
                program: &p.program,
                workload: p.program.label(),
                model: p.model.to_string(),
                processes: procs,
                threads_per_process: tpp,
                placement: &p.placement,
                threads: p.workers,
                cpus: &p.cpus,
                oversubscription: p.oversubscription,
                alloc: &p.alloc,
                samples: r.samples,
                warmups: r.warmups,
                failed: r.failed,
                metric: &p.metric.name,
                unit: &p.metric.unit,
                higher_is_better: p.metric.higher_is_better,
                median: r.summary.as_ref().and_then(|s| finite(s.median)),
                mean: r.summary.as_ref().and_then(|s| finite(s.mean)),
                stddev: r.summary.as_ref().and_then(|s| finite(s.stddev)),
                ci95: r.summary.as_ref().and_then(|s| s.ci95).map(|(a, b)| [a, b]),
                outliers: &r.outliers,
                failures: &r.failures,
                shortfall: r.shortfall.as_deref(),
                counters: &r.counters,
                derived: &r.derived,
                user_s: r.user_s,
                sys_s: r.sys_s,
                voluntary_cs: r.voluntary_cs,
                involuntary_cs: r.involuntary_cs,
                minor_faults: r.minor_faults,
                migrations: r.migrations,
                peak_rss_kb: r.peak_rss_kb,
                pss_kb: r.pss_kb,
                worker_ops: &r.worker_ops,
                extras: &r.extras,
            }
        })
        .collect();
    serde_json::json!({
        "schema": "smtlab.run/1",
        "run_id": run_id,
        "status": status.as_str(),
        "points": points,
    })
}

#[cfg(test)]
mod tests {
    use super::{render_table, table_value};
    use smtlab_analyse::summary;
    use smtlab_types::RunStatus;
    use smtlab_types::{Metric, Mode, Model, Point, Program, Spawn};

    fn point(index: usize, workload: &str, alloc: &str) -> Point {
        Point {
            index,
            program: Program::Builtin {
                workload: workload.into(),
                params: Default::default(),
            },
            model: Model::Thread,
            spawn: Spawn::Exec,
            placement: "compact".into(),
            workers: 2,
            cpus: Some(vec![0, 1]),
            oversubscription: 1.0,
            alloc: alloc.into(),
            mode: Mode::FixedTime { seconds: 1.0 },
            metric: Metric {
                name: "throughput".into(),
                unit: "ops/s".into(),
                higher_is_better: true,
            },
        }
    }

    /// Rows of the results table, split into cells on runs of spaces.
    fn rows(points: Vec<Point>) -> Vec<Vec<String>> {
        let reports: Vec<_> = points
            .into_iter()
            .map(|p| summary::summarize_point(p.index as i64, p, &[], 1))
            .collect();
        render_table(1, RunStatus::Complete, &reports)
            .lines()
            .skip(1)
            .take(reports.len() + 1)
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect()
    }

    #[test]
    fn allocator_column_appears_when_a_run_uses_another_allocator() {
        let t = rows(vec![
            point(0, "cache_scratch", "glibc"),
            point(1, "larson", "smtalloc"),
        ]);
        assert_eq!(
            t[0][..6],
            ["#", "program", "model", "placement", "N", "alloc"]
        );
        assert_eq!(
            t[1][..6],
            ["0", "cache_scratch", "thread", "compact", "2", "glibc"]
        );
        assert_eq!(
            t[2][..6],
            ["1", "larson", "thread", "compact", "2", "smtalloc"]
        );
        // The system allocator alone: no column to tell points apart by.
        let t = rows(vec![point(0, "spin", "glibc")]);
        assert_eq!(
            t[0][..6],
            ["#", "program", "model", "placement", "N", "cpus"]
        );
    }

    #[test]
    fn long_program_names_keep_the_columns_aligned() {
        let reports: Vec<_> = [point(0, "cache_scratch", "glibc"), point(1, "jbb", "glibc")]
            .into_iter()
            .map(|p| summary::summarize_point(p.index as i64, p, &[], 1))
            .collect();
        let table = render_table(1, RunStatus::Complete, &reports);
        let lines: Vec<&str> = table.lines().skip(1).take(3).collect();
        let col = |l: &str| l.find("thread").or_else(|| l.find("model")).unwrap();
        assert_eq!(col(lines[0]), col(lines[1]), "{table}");
        assert_eq!(col(lines[1]), col(lines[2]), "{table}");
    }

    #[test]
    fn values_have_four_significant_digits() {
        assert_eq!(table_value(1_234_567.0, "ops/s"), "1.235 Mops/s");
        assert_eq!(table_value(0.01234, "s"), "12.34 ms");
        assert_eq!(table_value(2.5, "s"), "2.500 s");
        assert_eq!(table_value(12.0, ""), "12.00");
        assert_eq!(table_value(f64::NAN, "s"), "-");
    }
}
