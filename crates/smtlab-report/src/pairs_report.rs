//! `smtlab pairs MATRIX.csv -o DIR`: the report of a pair matrix given as a
//! file: `report.html` (the verdict, the heatmap, the random distribution
//! and re-randomization, both charts inline), the charts as SVG and PNG,
//! `pairs.json` and `matrix.csv`. Uses `chart_files`, `pairs_charts` and
//! `writer`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use smtlab_analyse::pairs::analysis::pair_names;
use smtlab_analyse::pairs::{Matrix, PairsAnalysis};

use crate::error::ReportError;
use crate::writer::write_file;
use crate::{chart_files, pairs_charts};

/// Escape text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Write the report of `a` (made from `m`) into `dir`; the files written.
pub fn write_pairs_report(
    m: &Matrix,
    a: &PairsAnalysis,
    dir: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    let charts = dir.join("charts");
    std::fs::create_dir_all(&charts).map_err(|source| ReportError::CreateDir {
        path: charts.clone(),
        source,
    })?;
    let (drawn, mut files) = chart_files::draw_all(pairs_charts::specs(a), &charts)?;
    let mut h = String::new();
    h.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>smtlab pairs</title>\n");
    h.push_str("<style>body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}td.num{text-align:right}svg{max-width:100%;height:auto}</style></head><body>\n");
    let _ = writeln!(h, "<h1>smtlab pairs: {} programs</h1>", a.programs.len());
    let _ = writeln!(h, "<p id=\"verdict\">{}</p>", esc(&a.verdict));
    h.push_str("<h2>Pair matrix</h2>\n<p>Weighted speedup WS(i,j) (1.00 = no gain over running them one after the other), white at the lowest, blue at the highest.</p>\n<table class=\"heatmap\"><thead><tr><th></th>");
    for n in &a.programs {
        let _ = write!(h, "<th>{}</th>", esc(n));
    }
    h.push_str("</tr></thead><tbody>\n");
    for (name, cells) in pairs_charts::heatmap(a) {
        let _ = write!(h, "<tr><th>{}</th>", esc(&name));
        for c in cells {
            let _ = write!(
                h,
                "<td class=\"num\" style=\"background: {}\">{}</td>",
                c.color,
                esc(&c.text)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n<h2>Schedules</h2>\n<ul>\n");
    for (label, s) in [("Best", &a.best), ("Worst", &a.worst)] {
        let _ = writeln!(
            h,
            "<li>{label}: speedup {:.1}%: {}</li>",
            s.speedup * 100.0,
            esc(&pair_names(&a.programs, &s.pairs).join(", "))
        );
    }
    let r = &a.random;
    let _ = writeln!(
        h,
        "<li>Random ({}): mean {:.1}%, min {:.1}%, 5% {:.1}%, median {:.1}%, 95% {:.1}%, max {:.1}%</li>\n</ul>",
        r.trials,
        r.mean * 100.0,
        r.min * 100.0,
        r.p05 * 100.0,
        r.p50 * 100.0,
        r.p95 * 100.0,
        r.max * 100.0
    );
    h.push_str("<h2>Re-pairing at random every period</h2>\n<table><thead><tr><th>periods</th><th>mean</th><th>5%</th><th>50%</th><th>95%</th></tr></thead><tbody>\n");
    for x in &a.rerandomization {
        let _ = writeln!(
            h,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%</td><td class=\"num\">{:.1}%</td></tr>",
            x.periods,
            x.mean * 100.0,
            x.p05 * 100.0,
            x.p50 * 100.0,
            x.p95 * 100.0
        );
    }
    h.push_str("</tbody></table>\n");
    for c in &drawn {
        let _ = writeln!(
            h,
            "<figure><figcaption><b>{}</b> — {}</figcaption>{}</figure>",
            esc(&c.spec.title),
            esc(&c.spec.caption),
            c.svg
                .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1)
        );
    }
    h.push_str("</body></html>\n");
    let html = dir.join("report.html");
    write_file(&html, h.as_bytes())?;
    let json = dir.join("pairs.json");
    let text = serde_json::to_string_pretty(a).map_err(|source| ReportError::Json {
        path: json.clone(),
        source,
    })?;
    write_file(&json, text.as_bytes())?;
    let csv = dir.join("matrix.csv");
    write_file(&csv, m.to_csv().as_bytes())?;
    files.extend([html, json, csv]);
    Ok(files)
}
