//! The charts of a pairs analysis: the distribution of random schedules'
//! speedup as a CDF with the exact best and worst marked (like Ruan et
//! al.'s Figure 1), the band a re-randomizing scheduler narrows to over 1
//! to 64 periods, and a heatmap of the matrix (drawn here, with its
//! continuous colour scale: `draw`'s grid of cells, the placement map's,
//! shows counts); and the HTML section that shows
//! them with the verdict, the schedules and the tables ([`pairs_html`]).
//!
//! The study's report (`write_report`) takes the two line charts
//! ([`specs`]) and the heatmap as an HTML table ([`heatmap`]); `smtlab
//! pairs -o DIR` takes everything ([`write_pairs_charts`], [`pairs_html`]).
//! Uses `chart_files`, `charts`, `draw`, `error`, `text` and `writer`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;
use smtlab_analyse::pairs::analysis::{PairsAnalysis, RerandomizedJson};
use smtlab_analyse::pairs::pair_names;

use crate::chart_files;
use crate::charts::ChartSpec;
use crate::draw::{png_of, svg_of};
use crate::error::{DrawError, ReportError};
use crate::font::{ensure_font, measure};
use crate::plot::{Line, LinePlot, Plot, Scale, Xy};
use crate::style::{backend_error, DrawResult};
use crate::writer::write_file;

/// The heading the charts come under in a report.
const GROUP: &str = "pairings";

/// File stem of the heatmap chart (`pairings-heatmap.svg`, `.png`).
const HEATMAP: &str = "pairings-heatmap";

/// Past this many programs a heatmap has more cells than a page can show
/// (10 000 squares; the SVG alone would pass a megabyte): the matrix is in
/// `matrix.csv` and the JSON instead.
const HEATMAP_MAX: usize = 100;

/// Past this many programs the matrix is not written into the page as a
/// table either (the heatmap chart still shows it).
const TABLE_MAX: usize = 40;

fn xy(x: f64, y: f64) -> Xy {
    Xy { x, y, err: None }
}

fn pct(v: f64) -> f64 {
    v * 100.0
}

/// The CDF of random schedules with the best and worst marked, and the
/// re-randomization band.
pub(crate) fn specs(a: &PairsAnalysis) -> Vec<ChartSpec> {
    let cdf = Line {
        label: format!("random pairings ({})", a.random.trials),
        // Every 4th of the 201 points, ends included: a marker is drawn
        // at each, and 51 still trace the curve.
        points: a
            .cdf
            .iter()
            .enumerate()
            .filter(|(k, _)| k % 4 == 0 || *k + 1 == a.cdf.len())
            .map(|(_, &[x, y])| xy(pct(x), y))
            .collect(),
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
            "Fraction of {} uniformly random pairings with at most this speedup (mean WS - 1), \
             like Ruan et al.'s Figure 1; vertical lines: the exact best ({:.1}%) and worst \
             ({:.1}%) schedules. Median {:.1}%, mean {:.1}%.",
            a.random.trials,
            pct(a.best.speedup),
            pct(a.worst.speedup),
            pct(a.random.p50),
            pct(a.random.mean)
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
    let band = |label: &str, f: fn(&RerandomizedJson) -> f64| Line {
        label: label.into(),
        points: a
            .rerandomization
            .iter()
            .map(|r| xy(f64::from(r.periods), pct(f(r))))
            .collect(),
    };
    let schedulers = a.rerandomization.first().map_or(0, |r| r.schedulers);
    let rerand = ChartSpec {
        name: "pairings-rerandomized".into(),
        program: GROUP.into(),
        title: "Re-pairing at random every period".into(),
        caption: format!(
            "A scheduler that re-pairs the programs at random every period: its speedup over k \
             periods, the mean and the 5-95% band over {schedulers} simulated schedulers. The \
             mean stays; the band narrows toward it."
        ),
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

/// One cell of the heatmap table: its text and background colour.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct HeatCell {
    pub text: String,
    pub color: String,
}

/// The colour of a cell at `t` in 0..=1 of the matrix's range: white at
/// the lowest WS to a mid blue at the highest, dark text readable on both.
fn heat_rgb(t: f64) -> (u8, u8, u8) {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    (
        (255.0 - t * 170.0).round() as u8,
        (255.0 - t * 110.0).round() as u8,
        255,
    )
}

/// The lowest and highest WS of the matrix.
fn range(a: &PairsAnalysis) -> (f64, f64) {
    let all = a.matrix.iter().flatten().copied();
    let lo = all.clone().fold(f64::INFINITY, f64::min);
    let hi = all.fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// Where `v` lies in `[lo, hi]`, 0 when the range is one value.
fn position(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo {
        (v - lo) / (hi - lo)
    } else {
        0.0
    }
}

/// The heatmap as table rows: (program, cells), each cell its value (with
/// its interval when measured) and colour.
pub(crate) fn heatmap(a: &PairsAnalysis) -> Vec<(String, Vec<HeatCell>)> {
    let (lo, hi) = range(a);
    a.programs
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let cells = a.matrix[i]
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    let (r, g, b) = heat_rgb(position(v, lo, hi));
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

/// A name cut to 18 characters: labels must not push the grid off the
/// chart.
fn short(name: &str) -> String {
    if name.chars().count() > 18 {
        name.chars().take(17).collect::<String>() + "…"
    } else {
        name.to_string()
    }
}

/// The heatmap's geometry in SVG pixels.
struct Layout {
    cell: f64,
    left: f64,
    top: f64,
    label_size: f64,
    /// Names beside the rows and above the columns (not when cells are too
    /// small to label).
    names: bool,
    /// Values written in the cells (when they fit).
    values: bool,
    width: u32,
    height: u32,
}

fn layout(a: &PairsAnalysis) -> Layout {
    let n = a.programs.len().max(1) as f64;
    // The grid is about 640 pixels across, whatever the count.
    let cell = (640.0 / n).clamp(4.0, 56.0);
    let names = cell >= 10.0;
    let label_size = (cell * 0.8).min(12.5);
    let mut label_w: f64 = 0.0;
    if names {
        for p in &a.programs {
            label_w = label_w.max(measure(&short(p), label_size));
        }
    }
    let left = 16.0 + if names { label_w + 8.0 } else { 0.0 };
    let top = 44.0 + if names { label_w + 8.0 } else { 0.0 };
    let grid = n * cell;
    // Right of the grid: the colour scale and its labels.
    let width = (left + grid + 24.0 + 18.0 + 56.0).ceil() as u32;
    let height = (top + grid + 20.0).ceil() as u32;
    Layout {
        cell,
        left,
        top,
        label_size,
        names,
        values: cell >= 30.0,
        width,
        height,
    }
}

/// The heatmap: one square per pair, coloured by WS, its value written in
/// it when it fits, the names along the top and the left, and the colour
/// scale on the right.
fn draw_heatmap<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    a: &PairsAnalysis,
    l: &Layout,
    s: f64,
) -> DrawResult<DB> {
    let px = |v: f64| (v * s).round() as i32;
    let font = |size: f64| crate::font::font(size * s);
    root.fill(&WHITE)?;
    root.draw(&Text::new(
        "Pair matrix: weighted speedup WS(i,j)",
        (px(16.0), px(14.0)),
        font(17.0),
    ))?;
    let (lo, hi) = range(a);
    let n = a.programs.len();
    let at = |k: usize| k as f64 * l.cell;
    for i in 0..n {
        for j in 0..n {
            let v = a.matrix[i][j];
            let (r, g, b) = heat_rgb(position(v, lo, hi));
            let (x0, y0) = (l.left + at(j), l.top + at(i));
            root.draw(&Rectangle::new(
                [(px(x0), px(y0)), (px(x0 + l.cell), px(y0 + l.cell))],
                RGBColor(r, g, b).filled(),
            ))?;
            if l.values {
                root.draw(&Text::new(
                    format!("{v:.2}"),
                    (px(x0 + l.cell / 2.0), px(y0 + l.cell / 2.0)),
                    font((l.cell * 0.3).min(12.5)).pos(Pos::new(HPos::Center, VPos::Center)),
                ))?;
            }
        }
    }
    let grid = at(n);
    root.draw(&Rectangle::new(
        [
            (px(l.left), px(l.top)),
            (px(l.left + grid), px(l.top + grid)),
        ],
        RGBColor(150, 150, 150).stroke_width(1),
    ))?;
    if l.names {
        for (k, p) in a.programs.iter().enumerate() {
            let mid = at(k) + l.cell / 2.0;
            root.draw(&Text::new(
                short(p),
                (px(l.left - 6.0), px(l.top + mid)),
                font(l.label_size).pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
            // Column names read upwards, ending just above the grid.
            root.draw(&Text::new(
                short(p),
                (px(l.left + mid), px(l.top - 6.0)),
                font(l.label_size)
                    .pos(Pos::new(HPos::Left, VPos::Center))
                    .transform(FontTransform::Rotate270),
            ))?;
        }
    }
    // The colour scale: the highest WS at the top.
    let x0 = l.left + grid + 24.0;
    let steps = 64;
    for k in 0..steps {
        let t = 1.0 - k as f64 / steps as f64;
        let (r, g, b) = heat_rgb(t);
        let y = l.top + grid * k as f64 / steps as f64;
        root.draw(&Rectangle::new(
            [
                (px(x0), px(y)),
                (px(x0 + 18.0), px(y + grid / steps as f64 + 1.0)),
            ],
            RGBColor(r, g, b).filled(),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(px(x0), px(l.top)), (px(x0 + 18.0), px(l.top + grid))],
        RGBColor(150, 150, 150).stroke_width(1),
    ))?;
    for (v, y) in [(hi, l.top), (lo, l.top + grid)] {
        root.draw(&Text::new(
            format!("{v:.2}"),
            (px(x0 + 24.0), px(y)),
            font(12.0).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// The heatmap as SVG text.
fn heatmap_svg(a: &PairsAnalysis) -> Result<String, DrawError> {
    ensure_font()?;
    let l = layout(a);
    svg_of((l.width, l.height), |root, s| {
        draw_heatmap(root, a, &l, s).map_err(backend_error)
    })
}

/// The heatmap as a PNG file (text drawn by `text`'s `CrispText`, as in
/// every other PNG chart).
fn heatmap_png(a: &PairsAnalysis, path: &Path) -> Result<(), DrawError> {
    ensure_font()?;
    let l = layout(a);
    png_of((l.width, l.height), path, |root, s| {
        draw_heatmap(root, a, &l, s).map_err(backend_error)
    })
}

/// A chart drawn for the page: its title, caption and SVG text.
#[derive(Debug, Clone)]
struct Figure {
    title: String,
    caption: String,
    svg: String,
}

/// The charts of a pairs analysis, drawn and written by
/// [`write_pairs_charts`]: the files, and the SVG text [`pairs_html`]
/// inlines (so nothing is drawn twice).
#[derive(Debug, Clone)]
pub struct PairsCharts {
    /// Every file written, SVG then PNG of each chart.
    pub files: Vec<PathBuf>,
    figures: Vec<Figure>,
}

fn heatmap_caption(a: &PairsAnalysis) -> String {
    let (lo, hi) = range(a);
    format!(
        "WS(i,j) of each pair co-running (1.00 = no gain over running them one after the other; \
         the diagonal: a program with a copy of itself), white at the lowest ({lo:.2}) to blue at \
         the highest ({hi:.2})."
    )
}

/// Draw the charts of `a` into `dir` (created if missing):
/// `pairings-heatmap` (up to 100 programs), `pairings-cdf` and
/// `pairings-rerandomized`, each as SVG and PNG.
pub fn write_pairs_charts(a: &PairsAnalysis, dir: &Path) -> Result<PairsCharts, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let (drawn, mut files) = chart_files::draw_all(specs(a), dir)?;
    let mut figures: Vec<Figure> = drawn
        .into_iter()
        .map(|c| Figure {
            title: c.spec.title,
            caption: c.spec.caption,
            svg: c.svg,
        })
        .collect();
    if (1..=HEATMAP_MAX).contains(&a.programs.len()) {
        let svg_path = dir.join(format!("{HEATMAP}.svg"));
        let png_path = dir.join(format!("{HEATMAP}.png"));
        let chart_error = |path: &Path| {
            let path = path.to_path_buf();
            move |error| ReportError::Chart { path, error }
        };
        let svg = heatmap_svg(a).map_err(chart_error(&svg_path))?;
        write_file(&svg_path, svg.as_bytes())?;
        heatmap_png(a, &png_path).map_err(chart_error(&png_path))?;
        files.extend([svg_path, png_path]);
        figures.insert(
            0,
            Figure {
                title: "Pair matrix".into(),
                caption: heatmap_caption(a),
                svg,
            },
        );
    }
    Ok(PairsCharts { files, figures })
}

/// Escape text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `a` as one self-contained HTML `<section id="pairs">` (no script, no
/// outside resource, the charts as inline SVG; its own small `<style>`):
/// the verdict, the best and worst schedules, the random distribution, the
/// matrix as a coloured table, the re-randomization table, and `charts`
/// (drawn by [`write_pairs_charts`]).
pub fn pairs_html(a: &PairsAnalysis, charts: &PairsCharts) -> String {
    let mut h = String::new();
    // Writing into a String cannot fail.
    let _ = writeln!(h, "<section id=\"pairs\">");
    h.push_str(
        "<style>#pairs table{border-collapse:collapse;margin:.5rem 0 1rem}#pairs th,#pairs \
         td{border:1px solid #d9d9d9;padding:.2rem .45rem}#pairs td.num{text-align:right;\
         font-variant-numeric:tabular-nums;white-space:nowrap}#pairs figure svg{width:100%;\
         height:auto;max-width:900px;display:block}#pairs .scroll{overflow-x:auto}</style>\n",
    );
    let _ = writeln!(
        h,
        "<h2>Pairings of {} programs</h2>\n<p class=\"verdict\">{}</p>",
        a.programs.len(),
        esc(&a.verdict)
    );
    h.push_str("<h3>Schedules</h3>\n<ul>\n");
    for (label, s) in [("Best", &a.best), ("Worst", &a.worst)] {
        let _ = writeln!(
            h,
            "<li>{label}: speedup {:.1}%: {}</li>",
            pct(s.speedup),
            esc(&pair_names(&a.programs, &s.pairs).join(", "))
        );
    }
    let r = &a.random;
    let _ = writeln!(
        h,
        "<li>Random ({} uniformly random pairings): mean {:.1}%, min {:.1}%, 5% {:.1}%, median \
         {:.1}%, 95% {:.1}%, max {:.1}%</li>\n</ul>",
        r.trials,
        pct(r.mean),
        pct(r.min),
        pct(r.p05),
        pct(r.p50),
        pct(r.p95),
        pct(r.max)
    );
    h.push_str("<h3>Pair matrix</h3>\n");
    if a.programs.len() <= TABLE_MAX {
        let _ = writeln!(
            h,
            "<p>Weighted speedup WS(i,j) of each pair co-running (1.00 = no gain over running \
             them one after the other{}), white at the lowest, blue at the highest.</p>",
            if a.ci.is_some() {
                "; 95% interval in brackets"
            } else {
                ""
            }
        );
        h.push_str("<div class=\"scroll\"><table class=\"heatmap\"><thead><tr><th></th>");
        for n in &a.programs {
            let _ = write!(h, "<th>{}</th>", esc(n));
        }
        h.push_str("</tr></thead><tbody>\n");
        for (name, cells) in heatmap(a) {
            let _ = write!(h, "<tr><th>{}</th>", esc(&name));
            for c in cells {
                let _ = write!(
                    h,
                    "<td class=\"num\" style=\"background:{}\">{}</td>",
                    c.color,
                    esc(&c.text)
                );
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table></div>\n");
    } else {
        let _ = writeln!(
            h,
            "<p>{} programs: the matrix is too large for a table here; it is in matrix.csv and \
             the JSON{}.</p>",
            a.programs.len(),
            if a.programs.len() <= HEATMAP_MAX {
                ", and drawn below"
            } else {
                ""
            }
        );
    }
    h.push_str(
        "<h3>Re-pairing at random every period</h3>\n<table><thead><tr><th>periods</th>\
         <th>mean</th><th>5%</th><th>50%</th><th>95%</th></tr></thead><tbody>\n",
    );
    for x in &a.rerandomization {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%\
             </td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%</td></tr>",
            x.periods,
            pct(x.mean),
            pct(x.p05),
            pct(x.p50),
            pct(x.p95)
        );
    }
    h.push_str("</tbody></table>\n");
    for f in &charts.figures {
        let _ = writeln!(
            h,
            "<figure class=\"chart\">{}<figcaption><b>{}</b>: {}</figcaption></figure>",
            // Inline SVG in HTML takes its namespace from the page.
            f.svg
                .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1),
            esc(&f.title),
            esc(&f.caption)
        );
    }
    h.push_str("</section>\n");
    h
}
