//! `smtlab report --fleet`: the report of a fleet (the merged stores of
//! many hosts) in one directory: `report.html` (self-contained, the same
//! policy as a run's report: nothing fetched, every value escaped),
//! `summary.md`, `fleet.json` (what `--json` prints) and `charts/`, one
//! chart per workload with a line per host. The page shows the hosts and
//! the facts of their machines that differ, each host's recommendation per
//! workload, the charts and the notes. Uses `chart_files`, `error`,
//! `fleet_charts`, `format`, `report_html`, `summary_md` and `writer`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use smtlab_analyse::fleet::Fleet;
use smtlab_analyse::units::table_value;
use smtlab_types::Table;

use crate::chart_files;
use crate::error::ReportError;
use crate::fleet_charts;
use crate::report_html::inline_svg;
use crate::summary_md::{md_list, md_table, md_text};
use crate::writer::{write_file, DrawnChart};

/// The `schema` of `fleet.json` and of `report --fleet --json`.
pub const FLEET_SCHEMA: &str = "smtlab.fleet/1";

/// Where a fleet's report goes unless `-o` says otherwise.
pub fn default_fleet_dir() -> PathBuf {
    PathBuf::from("smtlab-reports").join("fleet")
}

/// What [`write_fleet_report`] wrote.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetFiles {
    pub dir: PathBuf,
    pub html: PathBuf,
    pub markdown: PathBuf,
    pub json: PathBuf,
    /// `charts/NAME.svg` and `charts/NAME.png` of every chart.
    pub charts: Vec<PathBuf>,
}

/// The JSON document of a fleet.
pub fn fleet_json(fleet: &Fleet) -> serde_json::Value {
    #[derive(Serialize)]
    struct Doc<'a> {
        schema: &'static str,
        #[serde(flatten)]
        fleet: &'a Fleet,
    }
    serde_json::to_value(Doc {
        schema: FLEET_SCHEMA,
        fleet,
    })
    .unwrap_or(serde_json::Value::Null)
}

/// The page around the sections: nothing may be fetched, so it reads the
/// same offline, years later.
const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src \
'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width, \
initial-scale=1\">\n<meta name=\"generator\" content=\"smtlab\">\n<title>smtlab fleet</title>\n\
<style>body{font:15px/1.5 system-ui,-apple-system,\"Segoe UI\",\"DejaVu Sans\",sans-serif;\
color:#1b1b1b;max-width:1120px;margin:0 auto;padding:1.5rem 1.25rem 4rem}h2{border-bottom:1px \
solid #d9d9d9}table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid \
#d9d9d9;padding:.2rem .45rem;text-align:left;vertical-align:top}td.num{text-align:right;\
font-variant-numeric:tabular-nums;white-space:nowrap}figure svg{width:100%;height:auto;\
max-width:900px;display:block}figcaption{font-size:.88rem;color:#5c5c5c;max-width:900px}\
.scroll{overflow-x:auto}</style>\n</head>\n<body>\n";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The tables of a fleet's report, which `report --fleet` also prints.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetTables {
    /// Each host, the runs used and its machine's facts.
    pub hosts: Table,
    /// The facts that differ, a column per host; `None` when none does.
    pub differences: Option<Table>,
    /// Each host's recommendation per workload.
    pub recommendations: Table,
}

fn strings(cols: &[&str]) -> Vec<String> {
    cols.iter().map(|c| c.to_string()).collect()
}

/// Run ids as `3, 1`.
fn run_list(runs: &[i64]) -> String {
    runs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tables of `fleet`.
pub fn fleet_tables(fleet: &Fleet) -> FleetTables {
    let mut host_cols = strings(&["host", "runs"]);
    let fact_names = fleet
        .hosts
        .first()
        .map(|h| &h.facts)
        .or_else(|| fleet.without_result.first().map(|w| &w.facts));
    if let Some(facts) = fact_names {
        host_cols.extend(facts.iter().map(|(k, _)| k.clone()));
    }
    // Every host by name, those without a result said so (why is in the
    // notes).
    let mut named: Vec<(&str, Vec<String>)> = fleet
        .hosts
        .iter()
        .map(|h| {
            let mut row = vec![
                if h.shared {
                    format!("{} (shared host)", h.host)
                } else {
                    h.host.clone()
                },
                run_list(&h.runs),
            ];
            row.extend(h.facts.iter().map(|(_, v)| v.clone()));
            (h.host.as_str(), row)
        })
        .chain(fleet.without_result.iter().map(|w| {
            let mut row = vec![
                format!("{} (no run with a result)", w.host),
                run_list(&w.runs),
            ];
            row.extend(w.facts.iter().map(|(_, v)| v.clone()));
            (w.host.as_str(), row)
        }))
        .collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    let host_rows = named.into_iter().map(|(_, row)| row).collect();
    let differences = (!fleet.facts.differences.is_empty()).then(|| {
        let mut columns = strings(&["fact"]);
        columns.extend(fleet.facts.hosts.iter().cloned());
        let rows = fleet
            .facts
            .differences
            .iter()
            .map(|d| {
                let mut row = vec![d.fact.clone()];
                row.extend(d.values.iter().cloned());
                row
            })
            .collect();
        Table {
            title: "Facts of the machines that differ".into(),
            columns,
            rows,
            note: None,
        }
    });
    let mut rec_rows = Vec::new();
    for w in &fleet.workloads {
        for h in &w.hosts {
            if h.recommendations.is_empty() {
                rec_rows.push(vec![
                    w.program.clone(),
                    h.host.clone(),
                    h.run_id.to_string(),
                    "no result".into(),
                    "—".into(),
                ]);
            }
            for r in &h.recommendations {
                rec_rows.push(vec![
                    w.program.clone(),
                    h.host.clone(),
                    h.run_id.to_string(),
                    r.short.clone(),
                    table_value(r.median, &r.metric.unit),
                ]);
            }
        }
    }
    FleetTables {
        hosts: Table {
            title: "Hosts (the facts of each host's latest run used)".into(),
            columns: host_cols,
            rows: host_rows,
            note: None,
        },
        differences,
        recommendations: Table {
            title: "Recommendations, per workload and host".into(),
            columns: strings(&["workload", "host", "run", "recommendation", "median"]),
            rows: rec_rows,
            note: Some(RECOMMENDATIONS_NOTE.into()),
        },
    }
}

fn html_table(h: &mut String, t: &Table) {
    let (columns, rows) = (&t.columns, &t.rows);
    h.push_str("<div class=\"scroll\"><table><thead><tr>");
    for c in columns {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr></thead><tbody>\n");
    for r in rows {
        h.push_str("<tr>");
        for c in r {
            let _ = write!(h, "<td>{}</td>", esc(c));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table></div>\n");
}

fn title(fleet: &Fleet) -> String {
    let hosts = fleet.hosts.len() + fleet.without_result.len();
    let without = match fleet.without_result.len() {
        0 => String::new(),
        n => format!(" ({n} without a result)"),
    };
    format!(
        "smtlab fleet: {hosts} host{}{without}, {} workload{}",
        if hosts == 1 { "" } else { "s" },
        fleet.workloads.len(),
        if fleet.workloads.len() == 1 { "" } else { "s" }
    )
}

/// How to read the recommendations, under their table.
const RECOMMENDATIONS_NOTE: &str = "Each host's recommendation comes from the analysis of its \
own latest run of the workload (the best measured point, fewer workers when more are not \
significantly faster) with what that host says about SMT.";

fn html(fleet: &Fleet, t: &FleetTables, charts: &[DrawnChart], notes: &[String]) -> String {
    let mut h = String::from(HEAD);
    let _ = writeln!(h, "<h1>{}</h1>", esc(&title(fleet)));
    h.push_str("<h2>Hosts</h2>\n");
    html_table(&mut h, &t.hosts);
    h.push_str("<h2>Machines</h2>\n");
    let _ = writeln!(h, "<p>{}</p>", esc(&fleet.facts.sentence));
    if let Some(d) = &t.differences {
        html_table(&mut h, d);
    }
    h.push_str("<h2>Recommendations</h2>\n");
    html_table(&mut h, &t.recommendations);
    let _ = writeln!(h, "<p>{}</p>", esc(RECOMMENDATIONS_NOTE));
    for w in &fleet.workloads {
        let mine: Vec<&DrawnChart> = charts
            .iter()
            .filter(|c| c.spec.program == w.program)
            .collect();
        let recs: Vec<String> = w
            .hosts
            .iter()
            .flat_map(|hw| {
                hw.recommendations
                    .iter()
                    .map(move |r| format!("{}: {}", hw.host, r.sentence))
            })
            .collect();
        if mine.is_empty() && recs.is_empty() {
            continue;
        }
        let _ = writeln!(h, "<h2>{}</h2>", esc(&w.program));
        for c in mine {
            let _ = writeln!(
                h,
                "<figure class=\"chart\" id=\"fig-{name}\">{svg}<figcaption><b>{title}</b>. {caption} \
                 (<a href=\"charts/{name}.svg\">SVG</a>, <a href=\"charts/{name}.png\">PNG</a>)\
                 </figcaption></figure>",
                name = esc(&c.spec.name),
                svg = inline_svg(&c.svg),
                title = esc(&c.spec.title),
                caption = esc(&c.spec.caption)
            );
        }
        if !recs.is_empty() {
            h.push_str("<ul>\n");
            for r in recs {
                let _ = writeln!(h, "<li>{}</li>", esc(&r));
            }
            h.push_str("</ul>\n");
        }
    }
    if !notes.is_empty() {
        h.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in notes {
            let _ = writeln!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul>\n");
    }
    h.push_str(&crate::render_check::html(charts.len()));
    h.push_str("</body>\n</html>\n");
    h
}

fn markdown(fleet: &Fleet, t: &FleetTables, charts: &[DrawnChart], notes: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", md_text(&title(fleet)));
    out.push_str("## Hosts\n\n");
    md_table(&mut out, &t.hosts.columns, &t.hosts.rows);
    out.push_str("## Machines\n\n");
    let _ = writeln!(out, "{}\n", md_text(&fleet.facts.sentence));
    if let Some(d) = &t.differences {
        md_table(&mut out, &d.columns, &d.rows);
    }
    out.push_str("## Recommendations\n\n");
    md_table(
        &mut out,
        &t.recommendations.columns,
        &t.recommendations.rows,
    );
    let _ = writeln!(out, "{RECOMMENDATIONS_NOTE}\n");
    if !charts.is_empty() {
        out.push_str("## Charts\n\n");
        for c in charts {
            let _ = writeln!(
                out,
                "- {}: `charts/{}.png` (`.svg`)",
                md_text(&c.spec.title),
                c.spec.name
            );
        }
        out.push('\n');
    }
    md_list(&mut out, "Notes", notes);
    out.push_str("The full report: `report.html`; the data: `fleet.json`.\n");
    out
}

/// Write the report of `fleet` into `dir` (created if missing; files of an
/// earlier report there are replaced).
pub fn write_fleet_report(fleet: &Fleet, dir: &Path) -> Result<FleetFiles, ReportError> {
    let chart_dir = dir.join("charts");
    std::fs::create_dir_all(&chart_dir).map_err(|source| ReportError::CreateDir {
        path: chart_dir.clone(),
        source,
    })?;
    let (specs, chart_notes) = fleet_charts::specs(fleet);
    let (drawn, chart_files) = chart_files::draw_all(specs, &chart_dir)?;
    let mut notes = fleet.notes.clone();
    notes.extend(chart_notes);
    let t = fleet_tables(fleet);

    let json = dir.join("fleet.json");
    let text =
        serde_json::to_string_pretty(&fleet_json(fleet)).map_err(|source| ReportError::Json {
            path: json.clone(),
            source,
        })?;
    write_file(&json, (text + "\n").as_bytes())?;
    let markdown_file = dir.join("summary.md");
    write_file(
        &markdown_file,
        markdown(fleet, &t, &drawn, &notes).as_bytes(),
    )?;
    let html_file = dir.join("report.html");
    write_file(&html_file, html(fleet, &t, &drawn, &notes).as_bytes())?;
    Ok(FleetFiles {
        dir: dir.to_path_buf(),
        html: html_file,
        markdown: markdown_file,
        json,
        charts: chart_files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_analyse::analysis::SmtAdvice;
    use smtlab_analyse::fleet::{
        FleetHost, FleetLine, FleetWorkload, HostRecommendation, HostWithoutResult, LinePoint,
        WorkloadOnHost,
    };
    use smtlab_analyse::host_facts::{FactComparison, FactDifference};
    use smtlab_types::Metric;

    fn ops() -> Metric {
        Metric {
            name: "throughput".into(),
            unit: "ops/s".into(),
            higher_is_better: true,
        }
    }

    fn on(host: &str, run_id: i64, short: &str, points: &[(usize, f64)]) -> WorkloadOnHost {
        WorkloadOnHost {
            host: host.into(),
            run_id,
            recommendations: vec![HostRecommendation {
                short: short.into(),
                sentence: format!("For <w>: {short}."),
                alloc: "glibc".into(),
                median: points.last().unwrap().1,
                metric: ops(),
                smt: SmtAdvice::Pays {
                    gain: 0.18,
                    ci95: (0.15, 0.21),
                },
            }],
            line: Some(FleetLine {
                series: "thread / compact".into(),
                metric: ops(),
                points: points
                    .iter()
                    .map(|&(workers, median)| LinePoint {
                        workers,
                        median,
                        ci95: Some((median * 0.98, median * 1.02)),
                    })
                    .collect(),
            }),
        }
    }

    fn fleet() -> Fleet {
        let host = |name: &str, run: i64, smt: &str| FleetHost {
            host: name.into(),
            runs: vec![run],
            facts: vec![("SMT".into(), smt.into())],
            shared: name == "b",
        };
        Fleet {
            hosts: vec![host("a", 1, "off"), host("b", 2, "on")],
            without_result: Vec::new(),
            workloads: vec![
                FleetWorkload {
                    program: "<w>".into(),
                    metric: ops(),
                    hosts: vec![
                        on(
                            "a",
                            1,
                            "2 processes, compact; no SMT",
                            &[(1, 10.0), (2, 19.0)],
                        ),
                        on(
                            "b",
                            2,
                            "4 threads, scatter; SMT pays +18%",
                            &[(1, 9.0), (4, 30.0)],
                        ),
                    ],
                },
                FleetWorkload {
                    program: "jbb".into(),
                    metric: ops(),
                    hosts: vec![WorkloadOnHost {
                        host: "a".into(),
                        run_id: 1,
                        recommendations: Vec::new(),
                        line: None,
                    }],
                },
            ],
            facts: FactComparison {
                hosts: vec!["a".into(), "b".into()],
                differences: vec![FactDifference {
                    fact: "SMT".into(),
                    values: vec!["off".into(), "on".into()],
                }],
                sentence: "a and b differ in SMT (a off, b on).".into(),
            },
            notes: vec!["A note.".into()],
        }
    }

    #[test]
    fn a_chart_per_workload_a_line_per_host_and_every_recommendation() {
        let dir = tempfile::tempdir().unwrap();
        let f = fleet();
        let files = write_fleet_report(&f, dir.path()).unwrap();
        let charts: Vec<String> = files
            .charts
            .iter()
            .map(|c| c.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        // jbb has no result on any host: no chart, and a note says so.
        assert_eq!(charts, ["charts/fleet-w.svg", "charts/fleet-w.png"]);
        let svg = std::fs::read_to_string(&files.charts[0]).unwrap();
        assert!(svg.contains("a (thread / compact)") && svg.contains("b (thread / compact)"));

        let html = std::fs::read_to_string(&files.html).unwrap();
        assert!(
            html.contains("<h1>smtlab fleet: 2 hosts, 2 workloads</h1>"),
            "{html}"
        );
        assert!(html.contains("<td>4 threads, scatter; SMT pays +18%</td>"));
        assert!(html.contains("<td>b (shared host)</td>"));
        assert!(html.contains("a and b differ in SMT (a off, b on)."));
        assert!(html.contains("<h2>&lt;w&gt;</h2>"), "escaped");
        assert!(!html.contains("<w>"), "nothing from data unescaped");
        assert!(html.contains("No chart for jbb: no host has a result for it."));
        assert_eq!(html.matches("<svg").count(), 1);
        // One script, smtlab's own browser hook; nothing fetched.
        assert_eq!(html.matches("<script").count(), 1);
        assert!(html.contains(r#"<p id="render-check" class="muted" data-expected="1">"#));
        assert!(!html.contains("http://"));

        let md = std::fs::read_to_string(&files.markdown).unwrap();
        assert!(
            md.contains("| &lt;w&gt; | a | 1 | 2 processes, compact; no SMT | 19.00 ops/s |"),
            "{md}"
        );
        assert!(md.contains("| jbb | a | 1 | no result | — |"), "{md}");
        assert!(md.contains("| SMT | off | on |"), "{md}");

        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&files.json).unwrap()).unwrap();
        assert_eq!(json["schema"], FLEET_SCHEMA);
        assert_eq!(json["workloads"][0]["hosts"][1]["host"], "b");
        assert_eq!(json["facts"]["differences"][0]["fact"], "SMT");
    }

    #[test]
    fn a_host_without_a_result_is_a_row_of_its_own_and_counted() {
        let mut f = fleet();
        f.without_result.push(HostWithoutResult {
            host: "ab".into(),
            runs: vec![7, 3],
            why: "run 7 (complete): its 2 samples failed: 2 crashed (signal 11)".into(),
            facts: vec![("SMT".into(), "on".into())],
            host_facts: Default::default(),
        });
        let t = fleet_tables(&f);
        let hosts: Vec<&str> = t.hosts.rows.iter().map(|r| r[0].as_str()).collect();
        assert_eq!(hosts, ["a", "ab (no run with a result)", "b (shared host)"]);
        assert_eq!(t.hosts.rows[1][1], "7, 3");
        assert_eq!(
            title(&f),
            "smtlab fleet: 3 hosts (1 without a result), 2 workloads"
        );
        // Alone, it still has its columns.
        f.hosts.clear();
        let t = fleet_tables(&f);
        assert_eq!(t.hosts.columns, ["host", "runs", "SMT"]);
        assert_eq!(
            title(&f),
            "smtlab fleet: 1 host (1 without a result), 2 workloads"
        );
        let json = fleet_json(&f);
        assert_eq!(json["without_result"][0]["host"], "ab");
        assert!(json["without_result"][0].get("host_facts").is_none());
    }
}
