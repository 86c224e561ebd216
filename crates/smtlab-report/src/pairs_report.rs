//! `smtlab pairs MATRIX.csv -o DIR`: the report of a pair matrix given as a
//! file: `report.html` (one self-contained page: [`pairs_html`] with a
//! head, nothing fetched), the charts as SVG and PNG under `charts/`,
//! `pairs.json` (what `--json` prints) and `matrix.csv` (the matrix read
//! back). Uses `error`, `pairs_charts` and `writer`.

use std::path::{Path, PathBuf};

use smtlab_analyse::pairs::{Matrix, PairsAnalysis};

use crate::error::ReportError;
use crate::pairs_charts::{pairs_html, write_pairs_charts};
use crate::writer::write_file;

/// The page around the section: the same policy as the run report (nothing
/// may be fetched, so it reads the same offline, years later).
const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src \
'unsafe-inline'; img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width, \
initial-scale=1\">\n<meta name=\"generator\" content=\"smtlab\">\n<title>smtlab pairs</title>\n\
<style>body{font:15px/1.5 system-ui,-apple-system,\"Segoe UI\",\"DejaVu Sans\",sans-serif;\
color:#1b1b1b;max-width:1120px;margin:0 auto;padding:1.5rem 1.25rem 4rem}h2{border-bottom:1px \
solid #d9d9d9}figcaption{font-size:.88rem;color:#5c5c5c;max-width:900px}\
p.verdict{font-size:1.05rem}</style>\n</head>\n<body>\n<h1>smtlab pairs</h1>\n";

/// Write the report of `a` (the analysis of `m`) into `dir`; the files
/// written.
pub fn write_pairs_report(
    m: &Matrix,
    a: &PairsAnalysis,
    dir: &Path,
) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let charts = write_pairs_charts(a, &dir.join("charts"))?;
    let html = dir.join("report.html");
    let page = format!("{HEAD}{}</body>\n</html>\n", pairs_html(a, &charts));
    write_file(&html, page.as_bytes())?;
    let json = dir.join("pairs.json");
    let text = serde_json::to_string_pretty(a).map_err(|source| ReportError::Json {
        path: json.clone(),
        source,
    })?;
    write_file(&json, (text + "\n").as_bytes())?;
    let csv = dir.join("matrix.csv");
    write_file(&csv, m.to_csv().as_bytes())?;
    let mut files = vec![html, json, csv];
    files.extend(charts.files);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_analyse::pairs::analyse_with;

    fn analysis(m: &Matrix) -> PairsAnalysis {
        analyse_with(m, 20_000, 200, 1)
    }

    #[test]
    fn the_report_holds_the_verdict_the_tables_and_every_chart() {
        let m = Matrix::from_csv(
            ",a,b,c,<d>\na,1,1.5,1.2,1.1\nb,1.5,1,1.1,1.3\nc,1.2,1.1,1,1.4\n<d>,1.1,1.3,1.4,1\n",
        )
        .unwrap();
        let a = analysis(&m);
        let dir = tempfile::tempdir().unwrap();
        let files = write_pairs_report(&m, &a, dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "report.html",
                "pairs.json",
                "matrix.csv",
                "charts/pairings-cdf.svg",
                "charts/pairings-cdf.png",
                "charts/pairings-rerandomized.svg",
                "charts/pairings-rerandomized.png",
                "charts/pairings-heatmap.svg",
                "charts/pairings-heatmap.png",
            ]
        );
        for f in &files {
            assert!(std::fs::metadata(f).unwrap().len() > 0, "{f:?}");
        }
        let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
        assert!(html.contains("An ideal scheduler gains 20.0 percentage points"));
        assert!(
            html.contains("Best: speedup 45.0%: a+b, c+&lt;d&gt;"),
            "escaped"
        );
        assert!(html.contains("<table class=\"heatmap\">"));
        assert!(html.contains("<th>&lt;d&gt;</th>"));
        // The three charts inline, the heatmap first.
        assert_eq!(html.matches("<svg").count(), 3);
        assert!(html.find("Pair matrix</b>").unwrap() < html.find("Random pairings").unwrap());
        assert!(!html.contains("<script"), "nothing runs");
        let svg = std::fs::read_to_string(dir.path().join("charts/pairings-heatmap.svg")).unwrap();
        assert!(
            svg.contains("1.45") || svg.contains("1.50"),
            "values in the cells"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("matrix.csv")).unwrap(),
            m.to_csv()
        );
        let back: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("pairs.json")).unwrap())
                .unwrap();
        assert_eq!(back, serde_json::to_value(&a).unwrap());
    }

    #[test]
    fn a_large_matrix_is_drawn_but_not_tabled_and_a_huge_one_neither() {
        for (n, heatmap) in [(60, true), (101, false)] {
            let m = Matrix::new(
                (0..n).map(|i| format!("program-{i}")).collect(),
                (0..n)
                    .map(|i| (0..n).map(|j| 1.0 + ((i * j) % 7) as f64 / 10.0).collect())
                    .collect(),
            )
            .unwrap();
            let a = analyse_with(&m, 2_000, 20, 1);
            let dir = tempfile::tempdir().unwrap();
            write_pairs_report(&m, &a, dir.path()).unwrap();
            let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(!html.contains("class=\"heatmap\""), "{n}: no table");
            assert!(html.contains("too large for a table"), "{n}");
            assert_eq!(
                dir.path().join("charts/pairings-heatmap.png").exists(),
                heatmap,
                "{n}"
            );
        }
    }
}
