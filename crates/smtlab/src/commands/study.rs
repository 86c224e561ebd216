//! `smtlab study [NAME]`: a predefined sweep, measured, analysed and
//! reported: verdicts on the terminal, the full report in a directory.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use smtlab_study::{self as study, Overrides, StudyKind};
use smtlab_types::RunStatus;
use smtlab_types::{Model, Point};

use super::program_args::ProgramArgs;
use super::report::{self, Built};
use super::results;
use super::run::{self, RunArgs};
use super::topology_source::TopologySource;
use crate::exit::usage;
use crate::output;

#[derive(Args, Debug)]
#[command(after_help = "Studies:
  (no name)  a tour over the default workloads: about a minute on 2 cores
  models     thread vs process model at every N, compact and scatter
  smt        1..k threads on the k PUs of one core, both models
  cores      one PU per core, 1..cores, both models
  pinning    N threads on one core's PUs vs on the first PU of N cores (N = PUs per core)
  oversub    software threads 1, 2, 4, ... up to 4x the PUs (default workload parfib)
  alloc      allocators (glibc, jemalloc, mimalloc, tcmalloc, jemalloc-percpu, smtalloc:
             those installed) x thread/process model on jbb and the allocation benchmarks

Examples:
  smtlab study
  smtlab study models -w jbb
  smtlab study oversub -w parfib
  smtlab study pinning --synthetic 'core:8 pu:8' --dry-run
  smtlab study smt --fsroot DUMP --dry-run   (DUMP: an extracted hwloc sysfs dump)")]
pub struct StudyArgs {
    /// models, smt, cores, pinning or oversub; none for the tour
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Models instead of the study's own (thread, process, hybrid:PxT)
    #[arg(long, value_name = "MODELS")]
    pub model: Option<String>,
    /// Worker counts instead of the study's own (1,2,4 or 1-4)
    #[arg(short = 'n', long, value_name = "LIST")]
    pub threads: Option<String>,
    /// Allocators, comma-separated [default: glibc; the alloc study: every
    /// one installed]
    #[arg(long, value_name = "LIST")]
    pub alloc: Option<String>,
    /// Fixed-time mode for every workload (e.g. 500ms)
    #[arg(long, value_name = "TIME", conflicts_with = "work")]
    pub duration: Option<String>,
    /// Fixed-work mode: this much work per sample
    #[arg(long, value_name = "OPS")]
    pub work: Option<u64>,
    /// Warm-up samples per point
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: usize,
    /// Measured samples per point, at least
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub min_samples: usize,
    /// Measured samples per point, at most [default: 10; the tour 7]
    #[arg(long, value_name = "N")]
    pub max_samples: Option<usize>,
    /// Target 95% CI half-width of each median [default: 2%; the tour 3%]
    #[arg(long, value_name = "FRACTION")]
    pub precision: Option<String>,
    /// Most time per point [default: 15s; the tour 6s]
    #[arg(long, value_name = "TIME")]
    pub max_time: Option<String>,
    /// Kill a sample's workers past this time
    #[arg(long, value_name = "TIME")]
    pub timeout: Option<String>,
    /// Seed of the measurement order and the bootstrap
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Do not open perf counters
    #[arg(long)]
    pub no_counters: bool,
    /// SQLite store
    #[arg(long, value_name = "PATH", default_value = "smtlab.db")]
    pub db: PathBuf,
    /// Report directory [default: smtlab-reports/run-RUN]
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the plan (points and the CPUs of each) and the limits; run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object instead of text (no progress bar)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: TopologySource,
}

pub fn run(a: StudyArgs) -> anyhow::Result<i32> {
    let kind = match &a.name {
        None => StudyKind::Tour,
        Some(n) => n.parse::<StudyKind>().map_err(usage)?,
    };
    if !a.dry_run && !a.source.is_live() {
        return Err(usage(
            "--fsroot/--synthetic plan for another machine: add --dry-run (only this machine can be measured)",
        ));
    }
    let topo = a.source.load()?;
    let tour = kind == StudyKind::Tour;
    let run_args = RunArgs {
        program: a.program.clone(),
        model: "thread".into(),
        placement: vec!["compact".into()],
        threads: "1".into(),
        alloc: a.alloc.clone().unwrap_or_else(|| "glibc".into()),
        spawn: "exec".into(),
        duration: a.duration.clone(),
        work: a.work,
        warmup: a.warmup,
        min_samples: a.min_samples,
        max_samples: a
            .max_samples
            .unwrap_or(if tour { 7 } else { 10 })
            .max(a.min_samples),
        precision: a
            .precision
            .clone()
            .unwrap_or_else(|| if tour { "3%" } else { "2%" }.into()),
        max_time: a
            .max_time
            .clone()
            .unwrap_or_else(|| if tour { "6s" } else { "15s" }.into()),
        timeout: a.timeout.clone(),
        seed: a.seed,
        no_counters: a.no_counters,
        db: a.db.clone(),
        dry_run: a.dry_run,
        resume: None,
        json: a.json,
        source: a.source.clone(),
    };
    if a.max_samples.is_some_and(|m| m < a.min_samples) {
        return Err(usage(format!(
            "--max-samples {} is below --min-samples {}",
            a.max_samples.unwrap_or(0),
            a.min_samples
        )));
    }
    let base = run::build_spec_from(&run_args, true)?;
    let over = Overrides {
        models: a
            .model
            .as_deref()
            .map(|m| {
                m.split(',')
                    .map(|x| x.trim().parse::<Model>().map_err(usage))
                    .collect::<anyhow::Result<Vec<_>>>()
            })
            .transpose()?,
        threads: a.threads.as_deref().map(run::parse_threads).transpose()?,
        allocs: a
            .alloc
            .as_deref()
            .map(|l| l.split(',').map(|x| x.trim().to_string()).collect()),
    };
    let (spec, points) = study::plan(kind, &topo, base, &over).map_err(usage)?;
    let meta = spec.study.clone().expect("study::plan sets the study");
    if a.dry_run {
        return print_plan(kind, &spec, &points, a.json);
    }

    let quiet = a.json || !std::io::stderr().is_terminal();
    if !quiet {
        eprintln!("smtlab study {kind}: {}", kind.question());
        for l in meta.limits.iter().chain(&meta.notes) {
            eprintln!("  {l}");
        }
    }
    let (store, run_id, stored) = run::create_run(&a.db, &spec, &topo, &points)?;
    let status = run::measure(&store, run_id, &spec, &stored, &a.db, quiet)?;
    if status == RunStatus::Interrupted {
        eprintln!(
            "smtlab: study run {run_id} interrupted; every measured sample is stored. Finish it with: smtlab run --resume {run_id} --db {}, then write its report with: smtlab report {run_id} --db {}",
            a.db.display(),
            a.db.display()
        );
        return Ok(130);
    }
    let dir = a.out.clone().unwrap_or_else(|| report::default_dir(run_id));
    let built = report::build(&store, run_id, &dir)?;
    let text = if a.json {
        serde_json::to_string_pretty(&report::json(run_id, status, &built))? + "\n"
    } else {
        render(kind, run_id, status, &built)
    };
    output::print(&text)?;
    Ok(0)
}

/// The terminal text of a finished study: results, study tables, verdicts,
/// recommendations, limits, and where the report is.
fn render(kind: StudyKind, run_id: i64, status: RunStatus, b: &Built) -> String {
    let mut s = String::new();
    s.push_str(&format!("smtlab study {kind}: {}\n\n", kind.question()));
    let reports: Vec<_> = b.data.points.iter().map(|p| p.report.clone()).collect();
    s.push_str(&results::render_table(run_id, status, &reports));
    s.push_str(&report::render_findings(b));
    s
}

fn print_plan(
    kind: StudyKind,
    spec: &smtlab_types::RunSpec,
    points: &[Point],
    json: bool,
) -> anyhow::Result<i32> {
    let meta = spec.study.as_ref();
    let text = if json {
        serde_json::to_string_pretty(&serde_json::json!({
            "schema": "smtlab.plan/1",
            "study": kind.name(),
            "seed": spec.seed,
            "limits": meta.map(|m| &m.limits),
            "notes": meta.map(|m| &m.notes),
            "points": points,
        }))? + "\n"
    } else {
        let mut s = format!("smtlab study {kind}: {}\n", kind.question());
        s.push_str(&results::render_plan(points));
        if let Some(m) = meta {
            for l in &m.limits {
                s.push_str(&format!("limit: {l}\n"));
            }
            for n in &m.notes {
                s.push_str(&format!("note: {n}\n"));
            }
        }
        s
    };
    output::print(&text)?;
    Ok(0)
}
