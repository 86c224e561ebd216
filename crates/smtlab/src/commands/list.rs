//! `smtlab list`: the built-in workloads, their parameters and defaults,
//! their metric and unit, and how each verifies its result.

use std::fmt::Write;

use clap::Args;
use smtlab_types::Mode;
use smtlab_workloads::{self as workload, TimeMetric, WorkSplit};

use crate::output;

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ListArgs) -> anyhow::Result<i32> {
    let infos: Vec<_> = workload::builtin_names()
        .into_iter()
        .filter_map(workload::builtin)
        .map(|w| w.info())
        .collect();
    if a.json {
        let doc = serde_json::json!({ "schema": "smtlab.workloads/1", "workloads": infos });
        return output::print(&(serde_json::to_string_pretty(&doc)? + "\n")).map(|_| 0);
    }
    let mut s = String::new();
    for i in &infos {
        writeln!(s, "{}: {}", i.name, i.summary)?;
        let (metric, unit) = match i.time_metric {
            TimeMetric::Throughput { name, unit, .. } => (name, unit),
            TimeMetric::Latency { name, unit, .. } => (name, unit),
        };
        let default = match i.default_mode {
            Mode::FixedTime { seconds } => format!("fixed time, {seconds} s per sample"),
            Mode::FixedWork { work } => format!("fixed work, --work {work}"),
        };
        writeln!(s, "  default mode: {default}")?;
        if i.fixed_time {
            writeln!(
                s,
                "  metric (fixed time): {metric} in {unit}; (fixed work): wall time in s"
            )?;
        } else {
            writeln!(s, "  metric: wall time in s (fixed work only)")?;
        }
        writeln!(s, "  one operation: {}", i.operation)?;
        writeln!(
            s,
            "  fixed work is {}",
            match i.work_split {
                WorkSplit::Quota => "split evenly into per-worker quotas",
                WorkSplit::Queue => "dealt as tasks from a shared queue until it runs dry",
            }
        )?;
        writeln!(s, "  verified: {}", i.verification)?;
        for p in &i.params {
            writeln!(s, "  --param {}={}  {}", p.name, p.default, p.help)?;
        }
        s.push('\n');
    }
    output::print(&s).map(|_| 0)
}
