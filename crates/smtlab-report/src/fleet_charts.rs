//! The charts of a fleet: one per workload, a line per host, each the
//! median of the configuration that host's analysis recommends against N
//! (log-log, whiskers at the 95% CI), so machines are seen side by side at
//! their best. Uses `charts` (the chart description, file stems) and
//! `draw`.

use std::collections::HashSet;

use smtlab_analyse::fleet::{Fleet, FleetWorkload};

use crate::charts::{slug, ChartSpec};
use crate::plot::{Line, LinePlot, Plot, Scale, Xy};

/// One chart per workload with a line; the workloads without one are
/// named in the returned notes.
pub(crate) fn specs(fleet: &Fleet) -> (Vec<ChartSpec>, Vec<String>) {
    let mut used = HashSet::new();
    let mut charts = Vec::new();
    let mut notes = Vec::new();
    for w in &fleet.workloads {
        let base = format!("fleet-{}", slug(&w.program));
        let mut name = base.clone();
        let mut k = 2;
        while !used.insert(name.clone()) {
            name = format!("{base}-{k}");
            k += 1;
        }
        let plot = Plot::Lines(plot(w)).cleaned();
        if plot.is_empty() {
            notes.push(format!(
                "No chart for {}: no host has a result for it.",
                w.program
            ));
            continue;
        }
        let unit = if w.metric.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", w.metric.unit)
        };
        charts.push(ChartSpec {
            name,
            program: w.program.clone(),
            title: title(w),
            caption: format!(
                "Median {}{unit} against the number of workers on each host, from that host's \
                 latest run of {}; each line is the configuration (model / placement) the \
                 host's own analysis recommends; whiskers at the bootstrap 95% CI of the \
                 median; log-log axes; {} is better.",
                w.metric.name,
                w.program,
                if w.metric.higher_is_better {
                    "higher"
                } else {
                    "lower"
                }
            ),
            plot,
        });
    }
    (charts, notes)
}

fn title(w: &FleetWorkload) -> String {
    if w.metric.higher_is_better {
        format!("{}: throughput against N, per host", w.program)
    } else {
        format!("{}: run time against N, per host", w.program)
    }
}

fn plot(w: &FleetWorkload) -> LinePlot {
    let unit = if w.metric.unit.is_empty() {
        String::new()
    } else {
        format!(" ({})", w.metric.unit)
    };
    LinePlot {
        title: title(w),
        x_desc: "workers N (threads × processes)".into(),
        y_desc: format!(
            "{}{unit}, {} is better",
            w.metric.name,
            if w.metric.higher_is_better {
                "higher"
            } else {
                "lower"
            }
        ),
        x_scale: Scale::Log,
        y_scale: Scale::Log,
        x_ticks_at_data: true,
        lines: w
            .hosts
            .iter()
            .filter_map(|h| {
                let l = h.line.as_ref()?;
                Some(Line {
                    label: format!("{} ({})", h.host, l.series),
                    points: l
                        .points
                        .iter()
                        .map(|p| Xy {
                            x: p.workers as f64,
                            y: p.median,
                            err: p.ci95,
                        })
                        .collect(),
                })
            })
            .collect(),
        ideal: None,
    }
}
