//! `report.html`: one self-contained page (inline CSS and SVG charts,
//! nothing fetched: a Content-Security-Policy forbids it), so it can be
//! mailed or archived as one file and still read in ten years. Rendered
//! with minijinja from `template.html`, every value HTML-escaped.

use std::path::Path;

use serde::Serialize;

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

#[derive(Serialize)]
struct SmtView {
    series: String,
    core: usize,
    siblings: String,
}

#[derive(Serialize)]
struct UslView {
    series: String,
    lambda: String,
    sigma: String,
    kappa: String,
    peak: String,
    r_squared: String,
    points: usize,
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
    chart_count: usize,
    model_verdicts: Vec<VerdictView>,
    smt: Vec<SmtView>,
    usl: Vec<UslView>,
    points: Vec<PointRow>,
    notes: &'a [String],
    made: Vec<Kv>,
    config_json: String,
    /// The pairs study's matrix as a heatmap: (program, cells) rows.
    heatmap: Vec<(String, Vec<crate::pairs_charts::HeatCell>)>,
    heatmap_names: Vec<String>,
    heatmap_ci: bool,
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
        chart_count: drawn.len(),
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
        smt: a
            .smt_yields
            .iter()
            .map(|y| SmtView {
                series: series_name(&y.key),
                core: y.core,
                siblings: y
                    .siblings
                    .iter()
                    .map(|s| {
                        format!(
                            "{} on the core: {}× (+{:.0}%)",
                            s.siblings,
                            num(s.relative),
                            s.gain * 100.0
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            })
            .collect(),
        usl: a
            .series
            .iter()
            .filter_map(|s| s.usl.as_ref().map(|u| (s, u)))
            .map(|(s, u)| UslView {
                series: series_name(&s.key),
                lambda: num(u.lambda),
                sigma: num(u.sigma),
                kappa: num(u.kappa),
                peak: u
                    .peak_n
                    .map(|p| format!("N ≈ {} (predicted)", num(p)))
                    .unwrap_or_else(|| "none (levels off)".into()),
                r_squared: num(u.r_squared),
                points: u.points,
            })
            .collect(),
        points: point_rows(input.points),
        notes,
        made: kvs(provenance(input.run)),
        config_json: serde_json::to_string_pretty(&input.run.config_json).unwrap_or_default(),
        heatmap: input
            .pairs
            .map(crate::pairs_charts::heatmap)
            .unwrap_or_default(),
        heatmap_names: input.pairs.map(|a| a.programs.clone()).unwrap_or_default(),
        heatmap_ci: input.pairs.is_some_and(|a| a.ci.is_some()),
    };
    let mut env = minijinja::Environment::new();
    // Explicit, not left to the template name: every value is data.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("report.html", TEMPLATE)?;
    env.get_template("report.html")?.render(&ctx)
}
