//! The pairs study's charts: the distribution of random schedules' speedup
//! as a CDF with the exact best and worst marked (like Ruan et al.'s
//! Figure 1), and the band a re-randomizing scheduler narrows to over 1 to
//! 64 periods; and the heatmap of the matrix (an HTML table, coloured by
//! WS). Uses `charts` and `draw`.

use smtlab_analyse::pairs::PairsAnalysis;

use crate::charts::ChartSpec;
use crate::draw::{Line, LinePlot, Plot, Scale, Xy};

const GROUP: &str = "pairings";

fn xy(x: f64, y: f64) -> Xy {
    Xy { x, y, err: None }
}

/// The two charts of a pairs analysis.
pub(crate) fn specs(a: &PairsAnalysis) -> Vec<ChartSpec> {
    let pct = |v: f64| v * 100.0;
    let cdf = Line {
        label: format!("random pairings ({})", a.random.trials),
        points: a.cdf.iter().map(|&[x, y]| xy(pct(x), y)).collect(),
    };
    let mark = |label: String, at: f64| Line {
        label,
        points: vec![xy(pct(at), 0.0), xy(pct(at), 1.0)],
    };
    let figure1 = ChartSpec {
        name: "pairings-cdf".into(),
        program: GROUP.into(),
        title: "Speedup of random pairings, with the best and worst".into(),
        caption: format!(
            "Fraction of {} uniformly random pairings with at most this speedup (mean WS - 1); \
             vertical lines: the exact best ({:.1}%) and worst ({:.1}%) schedules; median \
             {:.1}%.",
            a.random.trials,
            pct(a.best.speedup),
            pct(a.worst.speedup),
            pct(a.random.p50)
        ),
        plot: Plot::Lines(LinePlot {
            title: "Random pairings: CDF of the speedup".into(),
            x_desc: "speedup over running one after the other (%)".into(),
            y_desc: "fraction of pairings".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::LinearFromZero,
            x_ticks_at_data: false,
            lines: vec![
                cdf,
                mark(format!("best {:.1}%", pct(a.best.speedup)), a.best.speedup),
                mark(
                    format!("worst {:.1}%", pct(a.worst.speedup)),
                    a.worst.speedup,
                ),
            ],
            ideal: None,
        }),
    };
    let band =
        |label: &str, f: fn(&smtlab_analyse::pairs::analysis::RerandomizedJson) -> f64| Line {
            label: label.into(),
            points: a
                .rerandomization
                .iter()
                .map(|r| xy(f64::from(r.periods), pct(f(r))))
                .collect(),
        };
    let rerand = ChartSpec {
        name: "pairings-rerandomized".into(),
        program: GROUP.into(),
        title: "Re-pairing at random every period".into(),
        caption: "A scheduler that re-pairs the programs at random every period: its speedup \
                  over k periods (mean, and the 5-95% band over simulated schedulers). The \
                  mean stays; the band narrows toward it."
            .into(),
        plot: Plot::Lines(LinePlot {
            title: "Re-randomized pairings".into(),
            x_desc: "periods".into(),
            y_desc: "speedup (%)".into(),
            x_scale: Scale::Log,
            y_scale: Scale::Linear,
            x_ticks_at_data: true,
            lines: vec![
                band("95th percentile", |r| r.p95),
                band("mean", |r| r.mean),
                band("5th percentile", |r| r.p05),
            ],
            ideal: None,
        }),
    };
    vec![figure1, rerand]
}

/// One cell of the heatmap: its text and background colour.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct HeatCell {
    pub text: String,
    pub color: String,
}

/// The heatmap of the matrix: rows of (program, cells), white at the
/// lowest WS to blue at the highest.
pub(crate) fn heatmap(a: &PairsAnalysis) -> Vec<(String, Vec<HeatCell>)> {
    let all: Vec<f64> = a.matrix.iter().flatten().copied().collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = (hi - lo).max(1e-12);
    a.programs
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let cells = a.matrix[i]
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    let t = (v - lo) / span;
                    // White to a mid blue; text stays readable on both.
                    let (r, g, b) = ((255.0 - t * 170.0) as u8, (255.0 - t * 110.0) as u8, 255u8);
                    let ci =
                        a.ci.as_ref()
                            .and_then(|c| c[i][j])
                            .map(|[l, h]| format!(" [{l:.2}–{h:.2}]"))
                            .unwrap_or_default();
                    HeatCell {
                        text: format!("{v:.2}{ci}"),
                        color: format!("#{r:02x}{g:02x}{b:02x}"),
                    }
                })
                .collect();
            (name.clone(), cells)
        })
        .collect()
}
