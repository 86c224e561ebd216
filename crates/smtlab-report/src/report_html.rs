//! `report.html`: one self-contained page (inline CSS and SVG charts,
//! nothing fetched: a Content-Security-Policy forbids it), so it can be
//! mailed or archived as one file and still read in ten years. Rendered
//! with minijinja from `template.html`, every value HTML-escaped.

use std::path::Path;

use serde::Serialize;

use smtlab_analyse::analysis::smt::{gain_ci_text, gain_counts_text};
use smtlab_analyse::analysis::usl::USL_MIN_R_SQUARED;
use smtlab_analyse::analysis::{SmtYield, UslFit};
use smtlab_types::Table;

use crate::error::ReportError;
use crate::format::{ci_text, machine_facts, num, point_rows, provenance, smt_text, PointRow};
use crate::input::ReportInput;
use crate::writer::{write_file, DrawnChart, Rendered, Writer};

/// The HTML template, embedded so the binary needs no data files.
const TEMPLATE: &str = include_str!("template.html");

/// The `report.html` writer.
pub(crate) struct HtmlPage;

impl Writer for HtmlPage {
    fn file(&self) -> &'static str {
        "report.html"
    }

    fn write(&self, r: &Rendered, path: &Path) -> Result<(), ReportError> {
        let html = html(r.input, &r.charts, &r.notes).map_err(|source| ReportError::Template {
            path: path.to_path_buf(),
            source,
        })?;
        write_file(path, html.as_bytes())
    }
}

#[derive(Serialize)]
struct Kv {
    key: String,
    value: String,
}

fn kvs(v: Vec<(String, String)>) -> Vec<Kv> {
    v.into_iter()
        .map(|(key, value)| Kv { key, value })
        .collect()
}

#[derive(Serialize)]
struct ChartView {
    id: String,
    title: String,
    caption: String,
    svg: String,
    svg_file: String,
    png_file: String,
}

#[derive(Serialize)]
struct ChartGroup {
    program: String,
    charts: Vec<ChartView>,
}

#[derive(Serialize)]
struct RecView {
    sentence: String,
    best: String,
    smt: String,
}

#[derive(Serialize)]
struct VerdictView {
    subject: String,
    a: String,
    b: String,
    ratio: String,
    ci: String,
    significant: bool,
    sentence: String,
}

/// One row of the SMT table: what the k-th sibling of a series' core did,
/// each number with its 95% interval or why it has none.
#[derive(Debug, Serialize)]
struct SmtView {
    series: String,
    core: usize,
    /// k, the threads on the core.
    threads: usize,
    /// Throughput with k threads relative to one: `1.2× (95% CI
    /// 1.15–1.25×)`.
    relative: String,
    /// What the k-th sibling added, of one thread's throughput: `+20.0%
    /// (95% CI 15.0–25.0%)`.
    gain: String,
    /// The sample counts the intervals rest on: `n = 5 with 1 thread, 5
    /// with 2`.
    samples: String,
}

/// One row of the USL table. A fit that does not describe its data shows
/// `verdict` (and R²) in place of its parameters and peak.
#[derive(Debug, Serialize)]
struct UslView {
    series: String,
    describes: bool,
    verdict: String,
    lambda: String,
    sigma: String,
    kappa: String,
    peak: String,
    r_squared: String,
    points: usize,
}

/// What a table cell says in place of a 95% interval: too few samples (3
/// are needed at every point involved), else an unbounded one.
fn no_interval(fewest: usize) -> String {
    if fewest < 3 {
        format!("too few samples for a 95% interval: n = {fewest}")
    } else {
        "no bounded 95% interval".to_string()
    }
}

/// `+20.0%`, `−2.0%` (a true minus sign), as the analysis' sentences sign
/// a gain.
fn signed_pct(fraction: f64) -> String {
    let r = (fraction * 1000.0).round() / 10.0;
    if r < 0.0 {
        format!("\u{2212}{:.1}%", -r)
    } else {
        format!("+{:.1}%", r.abs())
    }
}

/// The SMT table's rows for one yield: every sibling after the first (the
/// first is the reference, 1× by definition).
fn smt_rows(y: &SmtYield) -> Vec<SmtView> {
    let samples_at = |k: usize| {
        y.siblings
            .iter()
            .find(|s| s.siblings == k)
            .map_or(0, |s| s.samples)
    };
    y.siblings
        .iter()
        .filter(|s| s.siblings > 1)
        .map(|s| {
            let k = s.siblings;
            let relative = match s.relative_ci95 {
                Some((lo, hi)) => format!("{}× (95% CI {}–{}×)", num(s.relative), num(lo), num(hi)),
                None => format!(
                    "{}× ({})",
                    num(s.relative),
                    no_interval(samples_at(1).min(samples_at(k)))
                ),
            };
            let gain = match s.gain_ci95 {
                Some(ci) => format!("{} ({})", signed_pct(s.gain), gain_ci_text(ci)),
                None => format!(
                    "{} ({})",
                    signed_pct(s.gain),
                    no_interval(samples_at(1).min(samples_at(k - 1)).min(samples_at(k)))
                ),
            };
            SmtView {
                series: series_name(&y.key),
                core: y.core,
                threads: k,
                relative,
                gain,
                samples: gain_counts_text(&y.siblings, k),
            }
        })
        .collect()
}

/// A USL fit as the table shows it: its parameters with their 95%
/// intervals and the predicted peak; or, when the law does not describe
/// the data, that (with R², and σ when it is no fraction), and no
/// parameters or prediction at all.
fn usl_view(series: String, u: &UslFit) -> UslView {
    let mut v = UslView {
        series,
        describes: u.describes_data,
        verdict: String::new(),
        lambda: String::new(),
        sigma: String::new(),
        kappa: String::new(),
        peak: String::new(),
        r_squared: num(u.r_squared),
        points: u.points,
    };
    if !u.describes_data {
        let sigma = if (0.0..=1.0).contains(&u.sigma) {
            String::new()
        } else {
            format!(
                ", and its contention σ = {} lies outside [0, 1]",
                num(u.sigma)
            )
        };
        v.verdict = format!(
            "the USL does not describe these data (R² = {}{sigma}): no prediction",
            num(u.r_squared)
        );
        return v;
    }
    let why = if u.min_samples < 3 {
        format!(
            "too few samples for a 95% interval: n = {} at the fewest N",
            u.min_samples
        )
    } else {
        "no 95% interval: a refit of the resampled data failed".to_string()
    };
    let with_ci = |x: f64, ci: Option<(f64, f64)>| match ci {
        Some((lo, hi)) => format!("{} (95% CI {}–{})", num(x), num(lo), num(hi)),
        None => format!("{} ({why})", num(x)),
    };
    v.lambda = with_ci(u.lambda, u.lambda_ci95);
    v.sigma = with_ci(u.sigma, u.sigma_ci95);
    v.kappa = with_ci(u.kappa, u.kappa_ci95);
    v.peak = match u.peak_n {
        None => "none: throughput levels off (κ = 0)".to_string(),
        Some(p) if p < 1.0 => {
            "below N = 1: throughput falls from one worker on (predicted)".to_string()
        }
        Some(p) => {
            let range = match u.peak_n_ci95 {
                Some((lo, hi)) => format!("95% CI {}–{}", num(lo), num(hi)),
                None if u.kappa_ci95.is_some() => {
                    "95% interval unbounded above: some resamples level off".to_string()
                }
                None => why.clone(),
            };
            format!("N ≈ {} (predicted; {range})", num(p))
        }
    };
    v
}

#[derive(Serialize)]
struct HtmlContext<'a> {
    title: &'a str,
    machine: Vec<Kv>,
    verdicts: &'a [String],
    recommendations: Vec<RecView>,
    limits: &'a [String],
    tables: Vec<&'a Table>,
    chart_groups: Vec<ChartGroup>,
    /// The browser hook (`render_check`), already rendered: markup, not data.
    render_check: String,
    model_verdicts: Vec<VerdictView>,
    smt: Vec<SmtView>,
    usl: Vec<UslView>,
    /// The least R² of a fit that describes its data, as the page says it.
    usl_min_r_squared: String,
    points: Vec<PointRow>,
    notes: &'a [String],
    made: Vec<Kv>,
    config_json: String,
    /// The pairs study's matrix as a heatmap: (program, cells) rows.
    heatmap: Vec<(String, Vec<crate::pairs_charts::HeatCell>)>,
    heatmap_names: Vec<String>,
    /// What the heatmap's cells hold of intervals (`; 95% interval in
    /// brackets`, and where a cell has none), as the text output says it.
    heatmap_ci_note: &'static str,
}

fn series_name(k: &smtlab_analyse::analysis::SeriesKey) -> String {
    format!(
        "{} / {} / {} / {}",
        k.program, k.alloc, k.model, k.placement
    )
}

/// The SVG as inlined: without the XML namespace attribute, which HTML does
/// not need, so the page holds no URL at all.
pub(crate) fn inline_svg(svg: &str) -> String {
    svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
}

fn html(
    input: &ReportInput,
    drawn: &[DrawnChart],
    notes: &[String],
) -> Result<String, minijinja::Error> {
    let mut groups: Vec<ChartGroup> = Vec::new();
    for c in drawn {
        let view = ChartView {
            id: format!("fig-{}", c.spec.name),
            title: c.spec.title.clone(),
            caption: c.spec.caption.clone(),
            svg: inline_svg(&c.svg),
            svg_file: format!("charts/{}.svg", c.spec.name),
            png_file: format!("charts/{}.png", c.spec.name),
        };
        match groups.iter_mut().find(|g| g.program == c.spec.program) {
            Some(g) => g.charts.push(view),
            None => groups.push(ChartGroup {
                program: c.spec.program.clone(),
                charts: vec![view],
            }),
        }
    }
    let a = input.analysis;
    let ctx = HtmlContext {
        title: &input.title,
        machine: kvs(machine_facts(input.run)),
        verdicts: input.verdicts,
        recommendations: a
            .recommendations
            .iter()
            .map(|r| RecView {
                sentence: r.sentence.clone(),
                best: format!(
                    "{} ({}): {} / {} at N = {}, median {} {}",
                    r.program,
                    r.alloc,
                    r.model,
                    r.placement,
                    r.workers,
                    num(r.median),
                    r.metric.unit
                ),
                smt: smt_text(&r.smt),
            })
            .collect(),
        limits: input.limits,
        // The heatmap is the pair matrix: its table is not shown twice
        // (summary.md, which has no heatmap, keeps it).
        tables: input
            .tables
            .iter()
            .filter(|t| input.pairs.is_none() || !t.title.starts_with("Pair matrix"))
            .collect(),
        render_check: crate::render_check::html(drawn.len()),
        chart_groups: groups,
        model_verdicts: a
            .model_verdicts
            .iter()
            .map(|v| VerdictView {
                subject: v.subject.clone(),
                a: v.a.clone(),
                b: v.b.clone(),
                ratio: format!("{}×", num(v.speed_ratio)),
                ci: ci_text(v.ci95),
                significant: v.significant,
                sentence: v.sentence.clone(),
            })
            .collect(),
        smt: a.smt_yields.iter().flat_map(smt_rows).collect(),
        usl: a
            .series
            .iter()
            .filter_map(|s| s.usl.as_ref().map(|u| usl_view(series_name(&s.key), u)))
            .collect(),
        usl_min_r_squared: num(USL_MIN_R_SQUARED),
        points: point_rows(input.points),
        notes,
        made: kvs(provenance(input.run)),
        config_json: serde_json::to_string_pretty(&input.run.config_json).unwrap_or_default(),
        heatmap: input
            .pairs
            .map(crate::pairs_charts::heatmap)
            .unwrap_or_default(),
        heatmap_names: input.pairs.map(|a| a.programs.clone()).unwrap_or_default(),
        heatmap_ci_note: input
            .pairs
            .map(smtlab_analyse::pairs::intervals_note)
            .unwrap_or_default(),
    };
    let mut env = minijinja::Environment::new();
    // Explicit, not left to the template name: every value is data.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("report.html", TEMPLATE)?;
    env.get_template("report.html")?.render(&ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_analyse::analysis::SiblingYield;

    fn sibling(k: usize, relative: f64, gain: f64, ci: bool, samples: usize) -> SiblingYield {
        SiblingYield {
            siblings: k,
            relative,
            gain,
            relative_ci95: ci.then_some((relative - 0.05, relative + 0.05)),
            gain_ci95: ci.then_some((gain - 0.05, gain + 0.05)),
            samples,
        }
    }

    fn page(f: &crate::tests::Fixture) -> String {
        html(&f.input(), &[], &[]).unwrap()
    }

    #[test]
    fn each_sibling_states_its_intervals_or_that_there_were_too_few_samples() {
        let mut f = crate::tests::fixture();
        let y = &mut f.analysis.smt_yields[0];
        let rows = smt_rows(y);
        assert_eq!(rows.len(), 1, "the first sibling is the reference");
        let r = &rows[0];
        assert_eq!((r.threads, r.core), (2, 0));
        assert_eq!(r.relative, "1.2× (95% CI 1.15–1.25×)");
        assert_eq!(r.gain, "+20.0% (95% CI 15.0–25.0%)");
        assert_eq!(r.samples, "n = 5 with 1 thread, 5 with 2");
        // A third sibling measured twice: no interval for it, and why.
        y.siblings.push(sibling(3, 1.25, -0.02, false, 2));
        let rows = smt_rows(y);
        assert_eq!(
            rows[1].relative,
            "1.25× (too few samples for a 95% interval: n = 2)"
        );
        assert_eq!(
            rows[1].gain,
            "\u{2212}2.0% (too few samples for a 95% interval: n = 2)"
        );
        assert_eq!(rows[1].samples, "n = 5 with 1 thread, 5 with 2, 2 with 3");
        let html = page(&f);
        assert!(
            html.contains("<td>+20.0% (95% CI 15.0–25.0%)</td>"),
            "{html}"
        );
        assert!(html.contains("<td>\u{2212}2.0% (too few samples for a 95% interval: n = 2)</td>"));
        assert!(!html.contains("(+20%)"), "the interval-less form is gone");
        // Enough samples but no interval: an unbounded one.
        f.analysis.smt_yields[0].siblings[1].gain_ci95 = None;
        let rows = smt_rows(&f.analysis.smt_yields[0]);
        assert_eq!(rows[0].gain, "+20.0% (no bounded 95% interval)");
    }

    #[test]
    fn a_fit_that_does_not_describe_its_data_predicts_nothing() {
        let mut f = crate::tests::fixture();
        let u = f.analysis.series[0].usl.as_mut().unwrap();
        u.describes_data = false;
        u.r_squared = 0.3123;
        let v = usl_view("jbb".into(), u);
        assert!(!v.describes);
        assert_eq!(
            v.verdict,
            "the USL does not describe these data (R² = 0.3123): no prediction"
        );
        assert_eq!((v.lambda.as_str(), v.peak.as_str()), ("", ""));
        u.sigma = 1.7;
        assert_eq!(
            usl_view("jbb".into(), u).verdict,
            "the USL does not describe these data (R² = 0.3123, and its contention σ = 1.7 lies \
             outside [0, 1]): no prediction"
        );
        let html = page(&f);
        assert!(
            html.contains(
                "<td colspan=\"4\">the USL does not describe these data (R² = 0.3123, and its \
                 contention σ = 1.7 lies outside [0, 1]): no prediction</td>"
            ),
            "{html}"
        );
        // Three other series fit: each with its intervals and predicted peak.
        assert_eq!(html.matches("N ≈ 31 (predicted; 95% CI 25–40)").count(), 3);
        assert!(html.contains("<td>0.02 (95% CI 0.01–0.03)</td>"), "{html}");
        assert!(html.contains("R² below 0.5, or σ outside [0, 1]"));
    }

    #[test]
    fn the_heatmap_says_which_cells_have_no_interval() {
        use smtlab_analyse::pairs::{analyse_with, Matrix};
        let f = crate::tests::fixture();
        let mut m = Matrix::from_csv(",a,b\na,1,1.5\nb,1.5,1\n").unwrap();
        m.ci = Some(vec![
            vec![Some((0.9, 1.1)), Some((1.4, 1.6))],
            vec![Some((1.4, 1.6)), None],
        ]);
        let pairs = analyse_with(&m, 100, 10, 1);
        let mut input = f.input();
        input.pairs = Some(&pairs);
        let html = html(&input, &[], &[]).unwrap();
        assert!(
            html.contains(
                "(1.00 = no gain over running them one after the other; 95% interval in \
                 brackets, none where a cell had fewer than 3 samples), white at the lowest"
            ),
            "{html}"
        );
        assert!(html.contains(">1.50 [1.40–1.60]</td>"), "{html}");
    }

    #[test]
    fn a_good_fit_without_intervals_says_why() {
        let mut f = crate::tests::fixture();
        let u = f.analysis.series[0].usl.as_mut().unwrap();
        let fit = u.clone();
        assert_eq!(
            usl_view(String::new(), &fit).lambda,
            "1000 (95% CI 990–1010)"
        );
        u.min_samples = 2;
        u.lambda_ci95 = None;
        u.sigma_ci95 = None;
        u.kappa_ci95 = None;
        u.peak_n_ci95 = None;
        let v = usl_view(String::new(), u);
        assert_eq!(
            v.sigma,
            "0.02 (too few samples for a 95% interval: n = 2 at the fewest N)"
        );
        assert_eq!(
            v.peak,
            "N ≈ 31 (predicted; too few samples for a 95% interval: n = 2 at the fewest N)"
        );
        // Intervals of the parameters, but resamples without a peak.
        let mut open = fit.clone();
        open.peak_n_ci95 = None;
        assert_eq!(
            usl_view(String::new(), &open).peak,
            "N ≈ 31 (predicted; 95% interval unbounded above: some resamples level off)"
        );
        open.peak_n = None;
        assert_eq!(
            usl_view(String::new(), &open).peak,
            "none: throughput levels off (κ = 0)"
        );
    }
}
