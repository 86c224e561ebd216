//! The SMT yield chart of a program (`smt-P`): throughput relative to one
//! thread (y) against the threads on one core (x = 1..k), one line per SMT
//! series (per model, with the placement and allocator where a program has
//! several series of one model), whiskers at the bootstrap 95% CI of each
//! ratio, and the ideal y = x (every thread as fast as one alone: what
//! separate cores would give).
//!
//! Drawn only for a program with SMT yields (a series pinned on one core's
//! siblings, measured at 1 and 2 threads at least): a machine without SMT,
//! or a run without such a series, gets no chart and no note, because the
//! analysis' notes and the study's limits already say why there is no yield.
//! A ratio whose interval could not be computed (fewer than 3 samples) is
//! drawn without a whisker; the SMT verdicts say why in words.
//!
//! Uses `draw`'s plot types only; `charts` calls [`smt_chart`] in its list
//! of a program's charts.

use std::collections::HashSet;

use crate::input::ReportInput;
use crate::plot::{Line, LinePlot, Plot, Scale, Xy};
use smtlab_analyse::analysis::SmtYield;

/// The kind of the chart: its name is `smt-<program slug>`.
pub(crate) const KIND: &str = "smt";

/// Adds the SMT yield chart of `program` through `add` (the chart list's
/// `(kind, title, caption, plot, note when empty)`), when the program has
/// SMT yields; does nothing otherwise.
pub(crate) fn smt_chart(
    input: &ReportInput,
    program: &str,
    add: &mut impl FnMut(&str, String, String, Plot, String),
) {
    let yields: Vec<&SmtYield> = input
        .analysis
        .smt_yields
        .iter()
        .filter(|y| y.key.program == program)
        .collect();
    if yields.is_empty() {
        return;
    }
    let title = format!("{program}: SMT yield on one core");
    let plot = Plot::Lines(LinePlot {
        title: title.clone(),
        x_desc: "threads on one core (its SMT siblings)".into(),
        y_desc: "throughput relative to one thread (×)".into(),
        x_scale: Scale::LinearFromZero,
        y_scale: Scale::LinearFromZero,
        x_ticks_at_data: true,
        lines: lines(&yields),
        ideal: Some("ideal: y = threads (as on separate cores)".into()),
    });
    add(
        KIND,
        title,
        "Throughput with k threads on one core's SMT siblings over throughput with one \
         thread on it (1 / time for time metrics), with bootstrap 95% CIs where every point \
         had 3 samples or more; the dashed line is what k separate cores would give. The \
         rise from one thread to the next is what that sibling added."
            .into(),
        plot,
        format!("No SMT yield chart for {program}: no yield has a value to draw."),
    );
}

/// One line per yield, labelled by its model, with the placement, the
/// allocator and the core added where they tell two lines apart.
fn lines(yields: &[&SmtYield]) -> Vec<Line> {
    let distinct = |f: &dyn Fn(&SmtYield) -> String| {
        yields.iter().map(|y| f(y)).collect::<HashSet<_>>().len() > 1
    };
    let models: Vec<&str> = yields.iter().map(|y| y.key.model.as_str()).collect();
    let one_per_model = models.iter().collect::<HashSet<_>>().len() == models.len();
    let placements = !one_per_model && distinct(&|y| y.key.placement.clone());
    let allocs = distinct(&|y| y.key.alloc.clone());
    let cores = !one_per_model && distinct(&|y| y.core.to_string());
    yields
        .iter()
        .map(|y| {
            let mut label = y.key.model.clone();
            if placements {
                label.push_str(&format!(" / {}", y.key.placement));
            }
            if allocs {
                label.push_str(&format!(" / {}", y.key.alloc));
            }
            if cores {
                label.push_str(&format!(" / core {}", y.core));
            }
            Line {
                label,
                points: y
                    .siblings
                    .iter()
                    .map(|s| Xy {
                        x: s.siblings as f64,
                        y: s.relative,
                        err: s.relative_ci95,
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::fixture;
    use smtlab_analyse::analysis::{SeriesKey, SiblingYield};

    fn sibling(k: usize, relative: f64, ci: Option<(f64, f64)>) -> SiblingYield {
        SiblingYield {
            siblings: k,
            relative,
            gain: 0.0,
            relative_ci95: ci,
            gain_ci95: None,
            samples: if ci.is_some() { 10 } else { 1 },
        }
    }

    fn smt_yield(model: &str, siblings: Vec<SiblingYield>) -> SmtYield {
        SmtYield {
            key: SeriesKey {
                program: "jbb".into(),
                alloc: "glibc".into(),
                model: model.into(),
                placement: "smt:0".into(),
            },
            core: 0,
            siblings,
        }
    }

    /// The charts `smt_chart` adds for `program`, and the notes.
    fn added(input: &ReportInput, program: &str) -> (Vec<(String, String, Plot)>, Vec<String>) {
        let mut charts = Vec::new();
        let mut notes = Vec::new();
        smt_chart(
            input,
            program,
            &mut |kind, title, _caption, plot, missing| {
                let plot = plot.cleaned();
                if plot.is_empty() {
                    notes.push(missing);
                } else {
                    charts.push((kind.to_string(), title, plot));
                }
            },
        );
        (charts, notes)
    }

    #[test]
    fn an_smt_series_has_its_chart_with_intervals_and_the_ideal() {
        let mut f = fixture();
        f.analysis.smt_yields = vec![
            smt_yield(
                "thread",
                vec![
                    sibling(1, 1.0, Some((1.0, 1.0))),
                    sibling(2, 1.2, Some((1.15, 1.25))),
                ],
            ),
            // One sample a point: drawn, without whiskers.
            smt_yield(
                "process",
                vec![sibling(1, 1.0, None), sibling(2, 1.1, None)],
            ),
        ];
        let (charts, notes) = added(&f.input(), "jbb");
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(charts.len(), 1);
        let (kind, title, plot) = &charts[0];
        assert_eq!(
            (kind.as_str(), title.as_str()),
            ("smt", "jbb: SMT yield on one core")
        );
        let Plot::Lines(p) = plot else {
            panic!("{plot:?}")
        };
        assert!(p.ideal.is_some(), "the ideal y = x is drawn");
        let labels: Vec<&str> = p.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["thread", "process"]);
        assert_eq!(
            p.lines[0].points[1],
            Xy {
                x: 2.0,
                y: 1.2,
                err: Some((1.15, 1.25))
            }
        );
        assert!(p.lines[1].points.iter().all(|pt| pt.err.is_none()));
        // Another program has none.
        assert_eq!(added(&f.input(), "stream").0.len(), 0);
    }

    #[test]
    fn a_report_of_an_smt_series_has_the_figure_and_one_without_yields_has_none() {
        let dir = tempfile::tempdir().unwrap();
        // The fixture's analysis has a yield for jbb.
        let f = fixture();
        assert!(!f.analysis.smt_yields.is_empty());
        let files = crate::write_report(&f.input(), &dir.path().join("smt")).unwrap();
        let names: Vec<String> = files
            .charts
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"smt-jbb.svg".to_string()), "{names:?}");
        assert!(names.contains(&"smt-jbb.png".to_string()), "{names:?}");
        let html = std::fs::read_to_string(&files.html).unwrap();
        assert!(html.contains("id=\"fig-smt-jbb\""), "no SMT figure");

        // A machine without SMT has no yields: no chart, and no note
        // about a chart that could never have been drawn.
        let mut f = fixture();
        f.analysis.smt_yields.clear();
        let files = crate::write_report(&f.input(), &dir.path().join("no-smt")).unwrap();
        assert!(
            !files.charts.iter().any(|p| p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("smt-")),
            "{:?}",
            files.charts
        );
        let html = std::fs::read_to_string(&files.html).unwrap();
        assert!(!html.contains("fig-smt-"));
        assert!(!html.contains("No SMT yield chart"));
    }

    #[test]
    fn lines_tell_two_series_of_one_model_apart() {
        let mut a = smt_yield("thread", vec![sibling(1, 1.0, None), sibling(2, 1.3, None)]);
        let mut b = a.clone();
        b.key.placement = "compact".into();
        b.core = 1;
        let labels: Vec<String> = lines(&[&a, &b]).into_iter().map(|l| l.label).collect();
        assert_eq!(
            labels,
            ["thread / smt:0 / core 0", "thread / compact / core 1"]
        );
        a.key.alloc = "jemalloc".into();
        let labels: Vec<String> = lines(&[&a]).into_iter().map(|l| l.label).collect();
        assert_eq!(labels, ["thread"]);
    }
}
