//! How the report writes things for people, shared by the HTML page and
//! the Markdown summary: numbers and intervals, times, the command line,
//! the machine's facts, how the run was made, and one row per point.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use serde::Serialize;

use smtlab_analyse::analysis::smt::gain_ci_text;
use smtlab_analyse::analysis::{PointData, SmtAdvice};
use smtlab_analyse::summary::PointSummary;
use smtlab_types::{Point, Program, RunRecord};

/// A number for a table: at most 4 significant digits, scientific outside
/// 0.001..1e6, `n/a` when not finite.
pub(crate) fn num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    // 0.9700 → 0.97: trailing zeros suggest a precision no one measured.
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub(crate) fn ci_text(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!("{} – {}", num(lo), num(hi)),
        None => "—".into(),
    }
}

pub(crate) fn unix_time(t: f64) -> String {
    if !(0.0..1e11).contains(&t) {
        return "unknown".into();
    }
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs_f64(t)).to_string()
}

/// The command line as a shell would take it back.
pub(crate) fn shell_line(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let safe = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if safe {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `name k=v k=v...`, the parameters in their order.
fn with_params(name: &str, params: &std::collections::BTreeMap<String, String>) -> String {
    let mut s = name.to_string();
    for (k, v) in params {
        write!(s, " {k}={v}").ok();
    }
    s
}

pub(crate) fn program_spec(p: &Program) -> String {
    match p {
        Program::Builtin { workload, params } => with_params(workload, params),
        // As stored: `client_cpus` among the parameters.
        Program::Server { server, .. } => {
            with_params(server.as_str(), &p.stored_params().unwrap_or_default())
        }
        Program::Command { template } => template.clone(),
        Program::CoRun { .. } => p.label(),
        Program::Ranks { app, comm, params } => {
            let mut s = format!("{app} {comm}");
            for (k, v) in params {
                write!(s, " {k}={v}").ok();
            }
            s
        }
    }
}

pub(crate) fn cpus_spaced(p: &Point) -> String {
    match &p.cpus {
        Some(c) => c
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        None => String::new(),
    }
}

pub(crate) fn metric_text(p: &Point) -> String {
    if p.metric.unit.is_empty() {
        p.metric.name.clone()
    } else {
        format!("{} ({})", p.metric.name, p.metric.unit)
    }
}

/// Facts about the machine, as (name, value) pairs; absent facts omitted.
pub(crate) fn machine_facts(run: &RunRecord) -> Vec<(String, String)> {
    let h = &run.host;
    let mut out = Vec::new();
    let mut add = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            out.push((k.to_string(), v));
        }
    };
    add("host", h.hostname.clone());
    add("CPU", h.cpu_model.clone());
    let topo = serde_json::from_value::<smtlab_topology::Topology>(h.topology.clone())
        .ok()
        .map(|t| smtlab_topology::summary_line(&t));
    add("topology", topo);
    add(
        "SMT active",
        Some(if h.smt_active { "yes" } else { "no" }.into()),
    );
    add("kernel", h.kernel.clone());
    add("frequency governor", h.governor.clone());
    add("transparent huge pages", h.thp.clone());
    add(
        "perf_event_paranoid",
        h.perf_event_paranoid.map(|v| v.to_string()),
    );
    add(
        "load average before the run",
        h.load_avg
            .map(|l| format!("{:.2} {:.2} {:.2} (1, 5, 15 min)", l[0], l[1], l[2])),
    );
    add(
        "shared host",
        h.shared_host.as_ref().map(|s| {
            format!(
                "{} ran {} tasks of the job on this host (--shared-host): they may have \
                 disturbed each other's measurements",
                s.launcher, s.tasks
            )
        }),
    );
    out
}

pub(crate) fn provenance(run: &RunRecord) -> Vec<(String, String)> {
    vec![
        ("run".into(), run.id.to_string()),
        ("status".into(), run.status.to_string()),
        ("command line".into(), shell_line(&run.command_line)),
        ("smtlab version".into(), run.version.clone()),
        (
            "git commit".into(),
            run.git_commit.clone().unwrap_or_else(|| "unknown".into()),
        ),
        ("seed".into(), run.seed.to_string()),
        ("started".into(), unix_time(run.started_at)),
        (
            "finished".into(),
            run.finished_at
                .map(unix_time)
                .unwrap_or_else(|| "not finished".into()),
        ),
    ]
}

/// One row of the per-point table.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PointRow {
    pub(crate) index: usize,
    pub(crate) program: String,
    pub(crate) alloc: String,
    pub(crate) model: String,
    pub(crate) placement: String,
    pub(crate) workers: usize,
    pub(crate) cpus: String,
    pub(crate) metric: String,
    pub(crate) median: String,
    pub(crate) ci: String,
    pub(crate) rel: String,
    pub(crate) samples: usize,
    pub(crate) warmups: usize,
    pub(crate) failed: usize,
    pub(crate) failures: String,
    pub(crate) cpi: String,
}

pub(crate) fn point_rows(points: &[PointData]) -> Vec<PointRow> {
    points
        .iter()
        .map(|p| {
            let r: &PointSummary = &p.summary;
            let pt = &r.point;
            PointRow {
                index: pt.index,
                program: pt.program.label(),
                alloc: pt.alloc.clone(),
                model: pt.model.to_string(),
                placement: pt.placement.clone(),
                workers: pt.workers,
                cpus: match &pt.cpus {
                    Some(_) => cpus_spaced(pt),
                    None => "unpinned".into(),
                },
                metric: metric_text(pt),
                median: r
                    .summary
                    .as_ref()
                    .map(|s| num(s.median))
                    .unwrap_or_else(|| "—".into()),
                ci: ci_text(r.summary.as_ref().and_then(|s| s.ci95)),
                rel: r
                    .summary
                    .as_ref()
                    .and_then(|s| s.ci_half_width_rel)
                    .filter(|v| v.is_finite())
                    .map(|v| format!("±{:.1}%", v * 100.0))
                    .unwrap_or_else(|| "—".into()),
                samples: r.samples,
                warmups: r.warmups,
                failed: r.failed,
                failures: r.failures.join("; "),
                cpi: r.derived.cpi.map(num).unwrap_or_default(),
            }
        })
        .collect()
}

pub(crate) fn smt_text(a: &SmtAdvice) -> String {
    match a {
        SmtAdvice::Pays { gain, ci95 } => format!(
            "SMT pays: the second sibling added {:.0}% of a lone thread, {}",
            gain * 100.0,
            gain_ci_text(*ci95)
        ),
        SmtAdvice::DoesNotPay { gain, ci95 } => format!(
            "SMT does not pay: the second sibling added {:.0}% of a lone thread, {}",
            gain * 100.0,
            gain_ci_text(*ci95)
        ),
        SmtAdvice::CannotTell {
            gain,
            ci95: Some(ci95),
            ..
        } => format!(
            "SMT: cannot tell (the second sibling added {:.0}% of a lone thread, {})",
            gain * 100.0,
            gain_ci_text(*ci95)
        ),
        SmtAdvice::CannotTell { gain, samples, .. } if *samples < 3 => format!(
            "SMT: cannot tell (the second sibling added {:.0}% of a lone thread by the \
             medians; n = {samples}, too few samples for a 95% interval)",
            gain * 100.0
        ),
        SmtAdvice::CannotTell { gain, .. } => format!(
            "SMT: cannot tell (the second sibling added {:.0}% of a lone thread by the \
             medians; no bounded 95% interval)",
            gain * 100.0
        ),
        SmtAdvice::Unknown { reason } => format!("SMT: not known ({reason})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_compactly() {
        assert_eq!(num(1234.5678), "1235");
        assert_eq!(num(1.23456), "1.235");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(0.97), "0.97");
        assert_eq!(num(1000.0), "1000");
        assert_eq!(num(f64::NAN), "n/a");
        assert_eq!(num(2.5e7), "2.500e7");
        assert_eq!(
            shell_line(&["a".into(), "b c".into(), "it's".into()]),
            r"a 'b c' 'it'\''s'"
        );
    }
}
