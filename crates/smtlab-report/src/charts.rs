//! Which charts a report has, and their data: the measured points and the
//! analysis turned into [`Plot`] descriptions, one set per program.
//!
//! Per program, in this order:
//! * `runtime-P`: the primary metric against N, log-log, a line per
//!   (model, placement[, allocator]), whiskers at the CI of the median;
//! * `speedup-P`: speedup against N with the ideal y = N;
//! * `models-P`: thread/process speed ratios with CI whiskers, against 1.0;
//! * `cpi-P`, `mpki-P`, `cswitch-P`: counters, where measured.
//!
//! A chart with nothing to draw is left out and a note says why, so a
//! reader never wonders whether a missing chart is a bug.

use std::collections::{BTreeMap, HashSet};

use crate::input::ReportInput;
use crate::plot::{Bar, BarPlot, Line, LinePlot, Plot, Scale, Xy};
use smtlab_analyse::analysis::PointData;
use smtlab_analyse::derived::MISS_EVENTS;
use smtlab_stats as stats;
use smtlab_types::{Metric, Point};
use smtlab_types::{Sample, SampleStatus};

/// A chart to draw: its file stem, what it shows, and its data.
#[derive(Debug, Clone)]
pub(crate) struct ChartSpec {
    /// File stem under `charts/`, e.g. `runtime-jbb`.
    pub name: String,
    /// The program it belongs to (a heading in the report).
    pub program: String,
    pub title: String,
    pub caption: String,
    pub plot: Plot,
}

/// The MPKI counter charted, in order of preference: last-level misses
/// matter most for placement (they go to memory), then the rest.
const MPKI_PREFERENCE: [&str; 7] = [
    "LLC-load-misses",
    "cache-misses",
    "L1-dcache-load-misses",
    "dTLB-load-misses",
    "branch-misses",
    "L1-icache-load-misses",
    "iTLB-load-misses",
];

/// `jbb` → `jbb`, `./my bench` → `my-bench`: a file-name-safe stem.
pub(crate) fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "program".into()
    } else {
        out
    }
}

/// Programs in plan order, each with a unique slug.
fn programs(input: &ReportInput) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    let mut used = HashSet::new();
    let mut out = Vec::new();
    let labels = input
        .points
        .iter()
        .map(|p| p.summary.point.program.label())
        .chain(input.analysis.series.iter().map(|s| s.key.program.clone()));
    for label in labels {
        if !seen.insert(label.clone()) {
            continue;
        }
        let base = slug(&label);
        let mut s = base.clone();
        let mut k = 2;
        while !used.insert(s.clone()) {
            s = format!("{base}-{k}");
            k += 1;
        }
        out.push((label, s));
    }
    out
}

/// A line's legend label: `thread / compact`, with the allocator when the
/// program was measured with more than one.
fn line_label(model: &str, placement: &str, alloc: &str, many_allocs: bool) -> String {
    if many_allocs {
        format!("{model} / {placement} / {alloc}")
    } else {
        format!("{model} / {placement}")
    }
}

/// The program's points with its main metric (the first point's), grouped
/// into lines by (allocator, model, placement) in plan order.
struct Groups<'a> {
    metric: Metric,
    lines: Vec<(String, Vec<&'a PointData>)>,
    /// Points left out because they measured another metric.
    other_metric: usize,
}

fn groups<'a>(input: &'a ReportInput, program: &str) -> Option<Groups<'a>> {
    let mine: Vec<&PointData> = input
        .points
        .iter()
        .filter(|p| p.summary.point.program.label() == program)
        .collect();
    let metric = mine.first()?.summary.point.metric.clone();
    let allocs: HashSet<&str> = mine
        .iter()
        .map(|p| p.summary.point.alloc.as_str())
        .collect();
    let many_allocs = allocs.len() > 1;
    let mut order: Vec<(String, String, String)> = Vec::new();
    let mut by_key: BTreeMap<(String, String, String), Vec<&PointData>> = BTreeMap::new();
    let mut other_metric = 0;
    for p in mine {
        let pt = &p.summary.point;
        if pt.metric != metric {
            other_metric += 1;
            continue;
        }
        let key = (pt.alloc.clone(), pt.model.to_string(), pt.placement.clone());
        if !by_key.contains_key(&key) {
            order.push(key.clone());
        }
        by_key.entry(key).or_default().push(p);
    }
    let lines = order
        .into_iter()
        .map(|k| {
            let label = line_label(&k.1, &k.2, &k.0, many_allocs);
            (label, by_key.remove(&k).unwrap_or_default())
        })
        .collect();
    Some(Groups {
        metric,
        lines,
        other_metric,
    })
}

/// Lines of `value(point)` against N for each group.
fn lines_of(
    g: &Groups,
    value: impl Fn(&PointData) -> Option<(f64, Option<(f64, f64)>)>,
) -> Vec<Line> {
    g.lines
        .iter()
        .map(|(label, pts)| Line {
            label: label.clone(),
            points: pts
                .iter()
                .filter_map(|p| {
                    value(p).map(|(y, err)| Xy {
                        x: p.summary.point.workers as f64,
                        y,
                        err,
                    })
                })
                .collect(),
        })
        .collect()
}

fn workers_desc() -> String {
    "workers N (threads × processes)".into()
}

/// Every chart of the report, and a note for each chart left out.
pub(crate) fn build(input: &ReportInput) -> (Vec<ChartSpec>, Vec<String>) {
    let mut charts = Vec::new();
    let mut notes = Vec::new();
    let progs = programs(input);
    let labels: Vec<String> = progs.iter().map(|(l, _)| l.clone()).collect();
    let verdict_groups = verdicts_by_program(input, &labels);
    for (program, slug) in &progs {
        // Notes pushed while `add` (which also writes `notes`) is alive.
        let mut more_notes = Vec::new();
        let mut add = |kind: &str, title: String, caption: String, plot: Plot, missing: String| {
            let plot = plot.cleaned();
            if plot.is_empty() {
                notes.push(missing);
            } else {
                charts.push(ChartSpec {
                    name: format!("{kind}-{slug}"),
                    program: program.clone(),
                    title,
                    caption,
                    plot,
                });
            }
        };
        let g = groups(input, program);
        if let Some(g) = &g {
            runtime_chart(program, g, &mut add, &mut more_notes);
        }
        speedup_chart(input, program, &mut add);
        crate::smt_charts::smt_chart(input, program, &mut add);
        models_chart(
            program,
            verdict_groups.get(program).map(Vec::as_slice),
            g.as_ref(),
            &mut add,
            &mut more_notes,
        );

        if let Some(g) = &g {
            counter_charts(input, program, g, &mut add);
        }
        notes.extend(more_notes);
    }
    if let Some(rest) = verdict_groups.get("") {
        let (title, plot) = models_plot("all programs", rest);
        let plot = plot.cleaned();
        if !plot.is_empty() {
            charts.push(ChartSpec {
                name: "models-other".into(),
                program: "other comparisons".into(),
                title,
                caption: models_caption(),
                plot,
            });
        }
    }
    (charts, notes)
}

/// A program's `runtime-P` chart: its metric against N, log-log, a line
/// per group with whiskers at the CI of the median; a note when some of
/// its points measured another metric.
fn runtime_chart(
    program: &str,
    g: &Groups,
    add: &mut impl FnMut(&str, String, String, Plot, String),
    notes: &mut Vec<String>,
) {
    if g.other_metric > 0 {
        notes.push(format!(
            "{program}: {} point(s) measured another metric than {} and are not charted \
             (they are in the per-point table).",
            g.other_metric, g.metric.name
        ));
    }
    let (title, y_desc, caption) = runtime_text(program, &g.metric);
    let plot = Plot::Lines(LinePlot {
        title: title.clone(),
        x_desc: workers_desc(),
        y_desc,
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        x_ticks_at_data: true,
        lines: lines_of(g, |p| {
            p.summary.summary.as_ref().map(|s| (s.median, s.ci95))
        }),
        ideal: None,
    });
    add(
        "runtime",
        title,
        caption,
        plot,
        format!("No runtime chart for {program}: no point has a successful measured sample."),
    );
}

/// A program's `speedup-P` chart, from the analysis' series, with the
/// ideal y = N; none when the analysis has no series of the program.
fn speedup_chart(
    input: &ReportInput,
    program: &str,
    add: &mut impl FnMut(&str, String, String, Plot, String),
) {
    let series: Vec<_> = input
        .analysis
        .series
        .iter()
        .filter(|s| s.key.program == program)
        .collect();
    if !series.is_empty() {
        let many_allocs = series
            .iter()
            .map(|s| s.key.alloc.as_str())
            .collect::<HashSet<_>>()
            .len()
            > 1;
        let lines = series
            .iter()
            .map(|s| Line {
                label: line_label(&s.key.model, &s.key.placement, &s.key.alloc, many_allocs),
                points: s
                    .points
                    .iter()
                    .filter_map(|p| {
                        p.speedup.map(|y| Xy {
                            x: p.workers as f64,
                            y,
                            err: p.speedup_ci95,
                        })
                    })
                    .collect(),
            })
            .collect();
        let plot = Plot::Lines(LinePlot {
            title: format!("{program}: speedup against N"),
            x_desc: workers_desc(),
            y_desc: "speedup over N = 1 (×)".into(),
            x_scale: Scale::LinearFromZero,
            y_scale: Scale::LinearFromZero,
            x_ticks_at_data: true,
            lines,
            ideal: Some("ideal: speedup = N".into()),
        });
        add(
            "speedup",
            format!("{program}: speedup against N"),
            "Speed relative to the same model and placement at N = 1 (throughput ratio, or \
             time at N = 1 over time at N), with bootstrap 95% CIs; the dashed line is \
             perfect scaling."
                .into(),
            plot,
            format!(
                "No speedup chart for {program}: no series has an N = 1 point with results \
                 to compare with."
            ),
        );
    }
}

/// A program's `models-P` chart: thread against process model, from the
/// verdicts' `bars`; without bars, a note when both models were measured
/// but never at the same placement and N.
fn models_chart(
    program: &str,
    bars: Option<&[Bar]>,
    g: Option<&Groups>,
    add: &mut impl FnMut(&str, String, String, Plot, String),
    notes: &mut Vec<String>,
) {
    if let Some(bars) = bars {
        let (title, plot) = models_plot(program, bars);
        add(
            "models",
            title,
            models_caption(),
            plot,
            format!("No thread/process chart for {program}: no comparison has a value."),
        );
    } else if let Some(g) = g {
        let models: HashSet<&str> = g
            .lines
            .iter()
            .flat_map(|(_, pts)| pts.iter().map(|p| model_kind(&p.summary.point)))
            .collect();
        if models.contains("thread") && models.contains("process") {
            notes.push(format!(
                "No thread/process chart for {program}: no placement and N was measured \
                 with both models."
            ));
        }
    }
}

fn model_kind(p: &Point) -> &'static str {
    match p.model {
        smtlab_types::Model::Thread => "thread",
        smtlab_types::Model::Process => "process",
        smtlab_types::Model::Hybrid { .. } => "hybrid",
        smtlab_types::Model::Event => "event",
        smtlab_types::Model::Staged => "staged",
        smtlab_types::Model::Thread2 => "thread2",
    }
}

fn runtime_text(program: &str, m: &Metric) -> (String, String, String) {
    let unit = if m.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", m.unit)
    };
    let (title, y_desc, slope) = if m.higher_is_better {
        (
            format!("{program}: throughput against N"),
            format!("{}{unit}, higher is better", m.name),
            "ideal scaling is a straight line of slope +1",
        )
    } else {
        (
            format!("{program}: run time against N"),
            format!("{}{unit}, lower is better", m.name),
            "for a fixed total amount of work, ideal scaling is a straight line of slope −1",
        )
    };
    let caption = format!(
        "Median {}{unit} against the number of workers, log-log axes; one line per model and \
         placement, whiskers at the bootstrap 95% CI of the median; {slope}.",
        m.name
    );
    (title, y_desc, caption)
}

fn models_caption() -> String {
    "How many times faster the multi-thread model was than the multi-process model at each \
     placement and N (throughput ratio, or inverse time ratio). Right of the red line: threads \
     faster. Whiskers: bootstrap 95% CI of the ratio; pale bars: the CI includes 1 (no \
     difference shown)."
        .into()
}

/// Model verdicts grouped by the program their subject names (a subject
/// starts with the program label: `jbb at 2 threads (compact)`); those
/// naming no known program go under `""`.
fn verdicts_by_program(input: &ReportInput, programs: &[String]) -> BTreeMap<String, Vec<Bar>> {
    let mut sorted: Vec<&String> = programs.iter().collect();
    sorted.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut out: BTreeMap<String, Vec<Bar>> = BTreeMap::new();
    for v in &input.analysis.model_verdicts {
        let found = sorted.iter().find(|p| {
            v.subject == ***p
                || v.subject
                    .strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with([' ', ',', ':']))
        });
        let (key, label) = match found {
            Some(p) => {
                let rest = v.subject[p.len()..]
                    .trim_start_matches([' ', ',', ':'])
                    .trim();
                let label = if rest.is_empty() {
                    v.subject.clone()
                } else {
                    rest.to_string()
                };
                ((*p).clone(), label)
            }
            None => (String::new(), v.subject.clone()),
        };
        out.entry(key).or_default().push(Bar {
            label,
            value: v.speed_ratio,
            ci: v.ci95,
            strong: v.significant,
        });
    }
    out
}

fn models_plot(program: &str, bars: &[Bar]) -> (String, Plot) {
    let title = format!("{program}: thread model against process model");
    let plot = Plot::Bars(BarPlot {
        title: title.clone(),
        x_desc: "speed ratio, threads / processes (> 1: threads faster)".into(),
        reference: 1.0,
        reference_label: "equal speed (1.0)".into(),
        strong_label: "CI excludes 1".into(),
        weak_label: "CI includes 1".into(),
        bars: bars.to_vec(),
    });
    (title, plot)
}

/// CPI, MPKI and context-switch charts of one program.
fn counter_charts(
    input: &ReportInput,
    program: &str,
    g: &Groups,
    add: &mut impl FnMut(&str, String, String, Plot, String),
) {
    let line_plot = |title: String, y_desc: String, lines: Vec<Line>| {
        Plot::Lines(LinePlot {
            title,
            x_desc: workers_desc(),
            y_desc,
            x_scale: Scale::Log,
            y_scale: Scale::LinearFromZero,
            x_ticks_at_data: true,
            lines,
            ideal: None,
        })
    };
    let cpi = lines_of(g, |p| p.summary.derived.cpi.map(|v| (v, None)));
    add(
        "cpi",
        format!("{program}: cycles per instruction"),
        "Cycles per instruction from the median cycle and instruction counts of each point: \
         rising CPI with N means workers stall on something shared (caches, memory, a sibling)."
            .into(),
        line_plot(
            format!("{program}: cycles per instruction"),
            "CPI (cycles / instruction)".into(),
            cpi,
        ),
        format!(
            "No CPI chart for {program}: cycles and instructions were not counted (no PMU on \
             this machine, perf_event_paranoid, or counters off)."
        ),
    );

    let counter = MPKI_PREFERENCE.iter().chain(MISS_EVENTS.iter()).find(|c| {
        g.lines
            .iter()
            .flat_map(|(_, pts)| pts.iter())
            .any(|p| p.summary.derived.mpki_of(c).is_some_and(f64::is_finite))
    });
    match counter {
        Some(c) => {
            let lines = lines_of(g, |p| p.summary.derived.mpki_of(c).map(|v| (v, None)));
            add(
                "mpki",
                format!("{program}: {c} per 1000 instructions"),
                format!(
                    "{c} per 1000 instructions (MPKI) from the median counts of each point; the \
                     other miss counters are in results.json and samples.csv."
                ),
                line_plot(
                    format!("{program}: {c} per 1000 instructions"),
                    format!("{c} per 1000 instructions"),
                    lines,
                ),
                format!("No MPKI chart for {program}: no miss counter has a value."),
            );
        }
        None => add(
            "mpki",
            String::new(),
            String::new(),
            line_plot(String::new(), String::new(), Vec::new()),
            format!(
                "No MPKI chart for {program}: no cache, TLB or branch miss counter was counted \
                 together with instructions."
            ),
        ),
    }

    // Context switches per operation (per second where a program reports no
    // operations): how often workers block or are preempted.
    let per_op = g
        .lines
        .iter()
        .flat_map(|(_, pts)| pts.iter())
        .all(|p| ok_samples(input, &p.summary.point).all(|s| s.ops.is_some_and(|o| o > 0)));
    let lines = lines_of(g, |p| {
        let v: Vec<f64> = ok_samples(input, &p.summary.point)
            .filter_map(|s| {
                let (v, i) = (s.usage.voluntary_cs, s.usage.involuntary_cs);
                if v.is_none() && i.is_none() {
                    return None;
                }
                let cs = (v.unwrap_or(0) + i.unwrap_or(0)) as f64;
                let per = if per_op {
                    s.ops.map(|o| o as f64)
                } else {
                    Some(s.wall_s)
                };
                per.filter(|d| *d > 0.0 && d.is_finite()).map(|d| cs / d)
            })
            .collect();
        (!v.is_empty()).then(|| (stats::median(&v), None))
    });
    let unit = if per_op { "operation" } else { "second" };
    add(
        "cswitch",
        format!("{program}: context switches per {unit}"),
        format!(
            "Voluntary plus involuntary context switches of all workers per {unit} (median over \
             samples): voluntary ones are waits (locks, I/O), involuntary ones preemption \
             (more runnable workers than CPUs)."
        ),
        line_plot(
            format!("{program}: context switches per {unit}"),
            format!("context switches per {unit}"),
            lines,
        ),
        format!("No context-switch chart for {program}: context switches were not measured."),
    );
}

/// The successful measured samples of a point.
fn ok_samples<'a>(input: &'a ReportInput, point: &Point) -> impl Iterator<Item = &'a Sample> {
    let index = point.index;
    input
        .samples
        .iter()
        .filter(move |(p, _)| p.index == index)
        .flat_map(|(_, s)| s.iter())
        .filter(|s| !s.warmup && s.status == SampleStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_safe() {
        assert_eq!(slug("jbb"), "jbb");
        assert_eq!(slug("./My Bench"), "my-bench");
        assert_eq!(slug("<script>"), "script");
        assert_eq!(slug("???"), "program");
    }
}
