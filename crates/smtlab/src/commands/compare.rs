//! `smtlab compare RUN_A RUN_B`: matching points of two runs side by side,
//! with the speed ratio A/B and its 95% CI (baselines, regressions).

use std::path::PathBuf;

use clap::Args;
use smtlab_analyse::compare::compare_runs;
use smtlab_analyse::summary::run_data;
use smtlab_store::Store;
use smtlab_types::Table;

use super::report::render_table;
use super::results::table_value;
use super::show::resolve_run;
use crate::exit::usage;
use crate::flags::{self, RunRef};
use crate::output;

#[derive(Args, Debug)]
#[command(
    after_help = "A ratio above 1 means RUN_A was faster (higher throughput or lower time).
Points match when program and parameters, model, placement, N, allocator and metric agree."
)]
pub struct CompareArgs {
    /// The run to judge (e.g. after a change), or `latest`
    #[arg(value_name = "RUN_A", value_parser = flags::run_ref("RUN_A"))]
    pub a: RunRef,
    /// The baseline run
    #[arg(value_name = "RUN_B", value_parser = flags::run_ref("RUN_B"))]
    pub b: RunRef,
    /// SQLite store
    #[arg(long, value_name = "PATH", default_value = "smtlab.db")]
    pub db: PathBuf,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: CompareArgs) -> anyhow::Result<i32> {
    let store = Store::open_read_only(&a.db).map_err(usage)?;
    let ida = resolve_run(&store, a.a, &a.db, "RUN_A")?;
    let idb = resolve_run(&store, a.b, &a.db, "RUN_B")?;
    let seed = store.run(ida)?.seed;
    let da = run_data(&store, ida, seed)?;
    let db = run_data(&store, idb, seed)?;
    let cmp = compare_runs(
        &da.points,
        &db.points,
        &format!("run {ida}"),
        &format!("run {idb}"),
        seed,
    );
    if a.json {
        let doc = serde_json::json!({ "schema": "smtlab.compare/1", "run_a": ida, "run_b": idb, "comparison": cmp });
        output::print(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
        return Ok(0);
    }
    let mut rows = Vec::new();
    let mut sentences = Vec::new();
    for p in &cmp.points {
        match &p.verdict {
            Some(v) => {
                rows.push(vec![
                    p.key.clone(),
                    table_value(v.median_a, &v.metric.unit),
                    table_value(v.median_b, &v.metric.unit),
                    format!("{:.3}", v.speed_ratio),
                    v.ci95
                        .map(|(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
                        .unwrap_or_else(|| "too few samples".into()),
                    match (v.significant, v.speed_ratio >= 1.0) {
                        (false, _) => "no significant difference".into(),
                        (true, true) => format!("A {:.1}% faster", (v.speed_ratio - 1.0) * 100.0),
                        (true, false) => format!("A {:.1}% slower", (1.0 - v.speed_ratio) * 100.0),
                    },
                ]);
                sentences.push(v.sentence.clone());
            }
            None => rows.push(vec![
                p.key.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "no successful samples on one side".into(),
            ]),
        }
    }
    let table = Table {
        title: format!("run {ida} (A) against run {idb} (B)"),
        columns: [
            "point",
            "median A",
            "median B",
            "A/B speed",
            "95% CI",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        note: Some("A/B speed > 1: A faster (throughput A / B, or time B / A)".into()),
    };
    let mut s = render_table(&table);
    if cmp.points.is_empty() {
        s.push_str("no matching points: the runs measured different configurations\n");
    }
    for k in &cmp.only_in_a {
        s.push_str(&format!("only in run {ida}: {k}\n"));
    }
    for k in &cmp.only_in_b {
        s.push_str(&format!("only in run {idb}: {k}\n"));
    }
    for v in sentences {
        s.push_str(&format!("  * {v}\n"));
    }
    output::print(&s)?;
    Ok(0)
}
