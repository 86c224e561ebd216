//! The charts of a run of DSM ranks (`study comm`, or `run -w sor --comm
//! ...`): per application and layout, the wall time of each communication
//! mechanism against the rank count; and per application, rank count and
//! layout, where a rank's time went under each mechanism — the paper's
//! time split drawn. The generic charts plot a series per program label
//! against N, which would split one application into ten series.

use smtlab_analyse::analysis::PointData;
use smtlab_types::extras::dsm;
use smtlab_types::{Comm, Program};

use crate::charts::{slug, ChartSpec};
use crate::plot::{Bar, BarPlot, Line, LinePlot, Plot, Scale, Xy};

/// The application, mechanism and ranks per node of a DSM point.
fn ranks_of(p: &PointData) -> Option<(&str, Comm, usize)> {
    match &p.summary.point.program {
        Program::Ranks { app, comm, params } => {
            let per_node = params
                .get("per_node")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            Some((app.as_str(), *comm, per_node))
        }
        _ => None,
    }
}

/// Whether the run holds DSM points.
pub(crate) fn applies(points: &[PointData]) -> bool {
    points.iter().any(|p| ranks_of(p).is_some())
}

fn layout(per_node: usize) -> &'static str {
    if per_node == 2 {
        "two ranks per node"
    } else {
        "one rank per CPU"
    }
}

/// The parts of the time split drawn, with the extra each is read from.
/// Waiting is counted inside SEGV and sync too, so the parts are bars side
/// by side, not a stack that would count it twice.
const PARTS: [(&str, &str); 5] = [
    ("compute", dsm::COMPUTE_S),
    ("SEGV", dsm::FAULT_S),
    ("sync", dsm::SYNC_S),
    ("serve", dsm::SERVE_S),
    ("wait", dsm::WAIT_S),
];

/// The comm charts of `points`, per application in the order first seen.
pub(crate) fn specs(points: &[PointData]) -> Vec<ChartSpec> {
    let mut apps: Vec<&str> = Vec::new();
    for p in points {
        if let Some((app, _, _)) = ranks_of(p) {
            if !apps.contains(&app) {
                apps.push(app);
            }
        }
    }
    let mut out = Vec::new();
    for app in apps {
        let mine: Vec<&PointData> = points
            .iter()
            .filter(|p| ranks_of(p).is_some_and(|(a, _, _)| a == app))
            .collect();
        let mut layouts: Vec<usize> = mine
            .iter()
            .filter_map(|p| ranks_of(p))
            .map(|r| r.2)
            .collect();
        layouts.sort_unstable();
        layouts.dedup();
        for &k in &layouts {
            out.push(wall_chart(app, k, &mine));
        }
        let mut at: Vec<(usize, usize)> = mine
            .iter()
            .filter_map(|p| Some((p.summary.point.workers, ranks_of(p)?.2)))
            .collect();
        at.sort_unstable();
        at.dedup();
        for (n, k) in at {
            out.push(split_chart(app, n, k, &mine));
        }
    }
    out
}

/// Wall time against ranks, a line per mechanism, at one layout.
fn wall_chart(app: &str, k: usize, mine: &[&PointData]) -> ChartSpec {
    let mut lines: Vec<Line> = Vec::new();
    for c in Comm::ALL {
        let points: Vec<Xy> = mine
            .iter()
            .filter(|p| ranks_of(p).is_some_and(|(_, comm, pn)| comm == c && pn == k))
            .filter_map(|p| {
                let s = p.summary.summary.as_ref()?;
                Some(Xy {
                    x: p.summary.point.workers as f64,
                    y: s.median,
                    err: s.ci95,
                })
            })
            .collect();
        if !points.is_empty() {
            lines.push(Line {
                label: c.to_string(),
                points,
            });
        }
    }
    let title = format!(
        "{}: wall time by mechanism, {}",
        app.to_uppercase(),
        layout(k)
    );
    ChartSpec {
        name: format!(
            "comm-{}-{}",
            slug(app),
            if k == 2 { "per-node" } else { "per-cpu" }
        ),
        program: app.to_uppercase(),
        title: title.clone(),
        caption: format!(
            "The parallel section's wall time (lower is better), median over the samples with \
             whiskers at its 95% interval, a line per communication mechanism, {}.",
            if k == 2 {
                "ranks 2k and 2k+1 sharing node k's two CPUs"
            } else {
                "each rank pinned to a CPU of its own (ranks share CPUs beyond the machine's)"
            }
        ),
        plot: Plot::Lines(LinePlot {
            title,
            x_desc: "ranks".into(),
            y_desc: "wall time (s)".into(),
            x_scale: Scale::Log,
            y_scale: Scale::LinearFromZero,
            x_ticks_at_data: true,
            lines,
            ideal: None,
        }),
    }
}

/// Seconds per rank of each part of the split, a group of bars per
/// mechanism, at one rank count and layout.
fn split_chart(app: &str, n: usize, k: usize, mine: &[&PointData]) -> ChartSpec {
    let mut bars = Vec::new();
    let mut strong = Vec::new();
    let mut weak = Vec::new();
    let mut present = 0;
    for c in Comm::ALL {
        let Some(p) = mine.iter().find(|p| {
            p.summary.point.workers == n
                && ranks_of(p).is_some_and(|(_, comm, pn)| comm == c && pn == k)
        }) else {
            continue;
        };
        if p.summary.summary.is_none() {
            continue;
        }
        // Alternate mechanisms in full and light colour, so each group of
        // five bars reads as one.
        let full = present % 2 == 0;
        present += 1;
        if full {
            strong.push(c.to_string());
        } else {
            weak.push(c.to_string());
        }
        for (name, key) in PARTS {
            let Some(v) = p.summary.extras.get(key) else {
                continue;
            };
            bars.push(Bar {
                label: format!("{c}: {name}"),
                value: v / n.max(1) as f64,
                ci: None,
                strong: full,
            });
        }
    }
    let title = format!(
        "{} at {n} ranks, {}: where a rank's time went",
        app.to_uppercase(),
        layout(k)
    );
    ChartSpec {
        name: format!(
            "comm-split-{}-{n}-{}",
            slug(app),
            if k == 2 { "per-node" } else { "per-cpu" }
        ),
        program: app.to_uppercase(),
        title: title.clone(),
        caption: "Seconds per rank on average, medians over the samples: compute (the \
                  application's own work), SEGV (in the page-fault handler), sync (locks and \
                  barriers), serve (others' requests served on the computing thread) and wait \
                  (blocked for a reply, counted inside SEGV and sync too, so the bars of a \
                  mechanism do not add up to its wall time)."
            .into(),
        plot: Plot::Bars(BarPlot {
            title,
            x_desc: "seconds per rank".into(),
            reference: 0.0,
            reference_label: "0 s".into(),
            strong_label: strong.join(", "),
            weak_label: weak.join(", "),
            bars,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_analyse::summary::summarize_point;
    use smtlab_types::{Metric, Mode, Model, Point, ResourceUsage, Sample, SampleStatus, Spawn};

    fn data(comm: Comm, n: usize, per_node: usize, wall: f64) -> PointData {
        let point = Point {
            index: 0,
            program: Program::Ranks {
                app: "sor".into(),
                comm,
                params: [("per_node".to_string(), per_node.to_string())].into(),
            },
            model: Model::Process,
            spawn: Spawn::Exec,
            placement: "scatter".into(),
            workers: n,
            cpus: None,
            oversubscription: 1.0,
            alloc: "glibc".into(),
            mode: Mode::FixedWork { work: 1 },
            metric: Metric {
                name: "wall_time".into(),
                unit: "s".into(),
                higher_is_better: false,
            },
        };
        let samples: Vec<Sample> = (0..3)
            .map(|i| Sample {
                seq: i,
                warmup: false,
                status: SampleStatus::Ok,
                reason: None,
                started_at: 0.0,
                wall_s: wall,
                ops: None,
                metric: Some(wall + i as f64 * 0.001),
                usage: ResourceUsage::default(),
                counters: Vec::new(),
                workers: Vec::new(),
                extras: [("compute_s", 0.8), ("wait_s", 0.2), ("fault_s", 0.3)]
                    .map(|(k, v)| (k.to_string(), v))
                    .into(),
            })
            .collect();
        PointData {
            summary: summarize_point(1, point, &samples, 7),
            values: samples.iter().filter_map(|s| s.metric).collect(),
        }
    }

    #[test]
    fn a_wall_chart_per_layout_and_a_split_per_rank_count() {
        let points = vec![
            data(Comm::Sigio, 2, 1, 0.5),
            data(Comm::Thr2, 2, 1, 0.45),
            data(Comm::Sigio, 4, 1, 0.4),
            data(Comm::Sigio, 2, 2, 0.5),
        ];
        assert!(applies(&points));
        let specs = specs(&points);
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "comm-sor-per-cpu",
                "comm-sor-per-node",
                "comm-split-sor-2-per-cpu",
                "comm-split-sor-2-per-node",
                "comm-split-sor-4-per-cpu",
            ]
        );
        let Plot::Lines(l) = &specs[0].plot else {
            panic!("lines")
        };
        let labels: Vec<&str> = l.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["sigio", "thr2"]);
        assert_eq!(l.lines[0].points.len(), 2);
        let Plot::Bars(b) = &specs[2].plot else {
            panic!("bars")
        };
        // Three parts measured per mechanism, per rank.
        assert_eq!(b.bars.len(), 6);
        assert_eq!(b.bars[0].label, "sigio: compute");
        assert!((b.bars[0].value - 0.4).abs() < 1e-12);
        assert!(b.bars[0].strong && !b.bars[3].strong);
        assert_eq!(
            (b.strong_label.as_str(), b.weak_label.as_str()),
            ("sigio", "thr2")
        );
    }
}
