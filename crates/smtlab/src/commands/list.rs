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
    // The DSM applications run as ranks with a mechanism (`--comm`), not
    // as workers of a model: listed apart, with the DSM's own parameters.
    let dsm: Vec<serde_json::Value> = smtlab_dsm_apps::APPS
        .iter()
        .filter_map(|name| name.parse::<smtlab_dsm_apps::App>().ok())
        .map(|app| {
            let params: Vec<serde_json::Value> = app
                .params()
                .iter()
                .map(|p| {
                    serde_json::json!({"name": p.name, "default": p.default, "min": p.min,
                        "max": p.max, "help": p.what})
                })
                .collect();
            serde_json::json!({"name": app.name(), "params": params})
        })
        .collect();
    if a.json {
        let doc = serde_json::json!({ "schema": "smtlab.workloads/1", "workloads": infos,
            "dsm_applications": dsm });
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
    writeln!(
        s,
        "DSM applications (-w NAME --comm sigio,thr1,thr2,thr3,poll -n RANKS): run by N ranks \
         over smtlab's software DSM, metric wall time of the parallel section in s, verified by \
         rank 0 against a sequential run of the same input"
    )?;
    for app in &dsm {
        writeln!(s, "{}:", app["name"].as_str().unwrap_or(""))?;
        for p in app["params"].as_array().into_iter().flatten() {
            writeln!(
                s,
                "  --param {}={}  {} ({} to {})",
                p["name"].as_str().unwrap_or(""),
                p["default"],
                p["help"].as_str().unwrap_or(""),
                p["min"],
                p["max"]
            )?;
        }
    }
    writeln!(
        s,
        "  and for every one: --param loss=0  fraction of datagrams dropped on send (0 to {}); \
         --param per_node=1  ranks sharing a node's CPUs (1 or 2)",
        smtlab_dsm::MAX_LOSS
    )?;
    output::print(&s).map(|_| 0)
}
