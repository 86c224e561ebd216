//! `smtlab run`: measure a workload or a command across models, placements,
//! thread counts and allocators; store every sample; print the results.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smtlab_analyse::summary::point_summaries;
use smtlab_execute::SampleContext;
use smtlab_measure::engine::{self, Event, EventSink, RunEnd};
use smtlab_plan as plan;
use smtlab_plan::allocator::find_allocator;
use smtlab_store::{collect_host_facts, NewRun, RunStatus, Store};
use smtlab_topology::placement::Policy;
use smtlab_types::cpuset::{CpuSet, CpuSetError, MAX_CPU};
use smtlab_types::SampleStatus;
use smtlab_types::{MetricSpec, Mode, Model, Point, Program, RunSpec, Spawn};
use smtlab_workloads as workload;

use super::program_args::ProgramArgs;
use super::results;
use super::topology_source::TopologySource;
use crate::exit::usage;
use crate::output;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  smtlab run -w spin --model thread,process --placement compact,scatter --threads 1,2
  smtlab run --cmd 'stress-ng --cpu {threads} -t 2' --model thread --threads 1,2
  smtlab run --cmd './bench -j {threads}' --metric 'rate=([0-9.]+) ops/s' --metric-unit ops/s
  smtlab run --resume 3")]
pub struct RunArgs {
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution models, comma-separated: thread, process, hybrid:PxT (P
    /// processes of T threads: its N is P x T, --threads does not apply)
    #[arg(long, value_name = "MODELS", default_value = "thread")]
    pub model: String,
    /// Placements: compact, scatter, core, smt:K, none, comma-separated; or
    /// one CPU expression per flag (repeatable, e.g. --placement 0,1)
    #[arg(long, value_name = "POLICY", default_value = "compact")]
    pub placement: Vec<String>,
    /// Worker counts: a list or ranges (1,2,4 or 1-4)
    #[arg(short = 'n', long, value_name = "LIST", default_value = "1")]
    pub threads: String,
    /// Allocators: glibc, jemalloc, mimalloc, tcmalloc or a .so path,
    /// comma-separated (LD_PRELOAD for the workers)
    #[arg(long, value_name = "LIST", default_value = "glibc")]
    pub alloc: String,
    /// How worker processes start: exec (fresh address space) or fork (prefork)
    #[arg(long, value_name = "HOW", default_value = "exec")]
    pub spawn: String,
    /// Fixed-time mode: run each sample this long, metric = the workload's
    /// throughput or latency (default: each workload's own, see `smtlab list`)
    #[arg(long, value_name = "TIME", conflicts_with = "work")]
    pub duration: Option<String>,
    /// Fixed-work mode: this much work per sample (operations, or problem
    /// instances for queue workloads), metric = wall time
    #[arg(long, value_name = "OPS")]
    pub work: Option<u64>,
    /// Warm-up samples per point (stored, flagged, excluded)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: usize,
    /// Measured samples per point, at least
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub min_samples: usize,
    /// Measured samples per point, at most
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub max_samples: usize,
    /// Stop repeating a point when the 95% CI half-width of its median is
    /// within this fraction (0.02 or 2%)
    #[arg(long, value_name = "FRACTION", default_value = "2%")]
    pub precision: String,
    /// Most time to spend on one point
    #[arg(long, value_name = "TIME", default_value = "30s")]
    pub max_time: String,
    /// Kill a sample's workers past this time and record it as a timeout
    #[arg(long, value_name = "TIME")]
    pub timeout: Option<String>,
    /// Seed of the interleaved measurement order and the bootstrap
    /// (default: from the clock, printed and stored)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Do not open perf counters
    #[arg(long)]
    pub no_counters: bool,
    /// SQLite store
    #[arg(long, value_name = "PATH", default_value = "smtlab.db")]
    pub db: PathBuf,
    /// Print every point and its CPUs, run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Finish an interrupted run without repeating committed samples
    #[arg(long, value_name = "RUN")]
    pub resume: Option<i64>,
    /// Print one JSON object instead of tables (no progress bar)
    #[arg(long)]
    pub json: bool,
    /// Plan for another machine (only with --dry-run)
    #[command(flatten)]
    pub source: TopologySource,
}

/// `--threads`: a list or ranges of worker counts, each 1 or more.
pub fn parse_threads(text: &str) -> anyhow::Result<Vec<usize>> {
    // Worker counts have the syntax of CPU lists (1,2,4 or 1-8), so the
    // CPU-list parser reads them; its errors are worded here for worker
    // counts instead of CPUs.
    let bad = |why: String| {
        usage(format!(
            "--threads {text}: {why}; expected worker counts 1..={MAX_CPU} as a list or \
             ranges, e.g. 1,2,4 or 1-8"
        ))
    };
    let set = CpuSet::parse_list(text).map_err(|e| match e {
        CpuSetError::BadToken { token } if token.is_empty() => bad("an empty item".into()),
        CpuSetError::BadToken { token } => bad(format!("`{token}` is not a number")),
        CpuSetError::Descending { token } => bad(format!("`{token}` is a descending range")),
        CpuSetError::TooLarge { cpu, .. } => bad(format!("{cpu} is out of range")),
        CpuSetError::BadMask { .. } => bad(e.to_string()),
    })?;
    if set.is_empty() {
        return Err(bad("an empty item".into()));
    }
    if set.contains(0) {
        return Err(bad("0 is out of range".into()));
    }
    Ok(set.iter().map(|n| n as usize).collect())
}

/// `2%`, `0.02`.
fn parse_fraction(flag: &str, s: &str) -> anyhow::Result<f64> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.trim().parse::<f64>(),
    };
    match v {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(usage(format!(
            "{flag} {s}: expected a fraction between 0 and 1, such as 0.02 or 2%"
        ))),
    }
}

fn parse_duration(flag: &str, s: &str) -> anyhow::Result<f64> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| usage(format!("{flag} {s}: {e}; expected e.g. 500ms, 2s, 1m")))?;
    if d.is_zero() {
        return Err(usage(format!("{flag} {s}: must be longer than zero")));
    }
    Ok(d.as_secs_f64())
}

/// Split a comma list of named placements; anything else is one CPU
/// expression (whose own commas are part of it).
fn placements(values: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::new();
    for v in values {
        let parts: Vec<&str> = v.split(',').map(str::trim).collect();
        let named = parts.iter().all(|p| {
            matches!(
                p.parse::<Policy>(),
                Ok(Policy::Compact
                    | Policy::Scatter
                    | Policy::Core
                    | Policy::None
                    | Policy::Smt(_))
            )
        });
        if named {
            out.extend(parts.iter().map(|p| p.to_string()));
        } else {
            v.parse::<Policy>()
                .map_err(|e| usage(format!("--placement: {e}")))?;
            out.push(v.trim().to_string());
        }
    }
    Ok(out)
}

fn build_spec(a: &RunArgs) -> anyhow::Result<RunSpec> {
    build_spec_from(a, false)
}

/// The run configuration of `a`; with `allow_no_program` (studies) giving
/// neither -w nor --cmd leaves `programs` empty for the study's defaults.
pub fn build_spec_from(a: &RunArgs, allow_no_program: bool) -> anyhow::Result<RunSpec> {
    let mut params = BTreeMap::new();
    for p in &a.program.params {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| usage(format!("--param {p}: expected KEY=VALUE")))?;
        params.insert(k.trim().to_string(), v.trim().to_string());
    }
    let programs: Vec<Program> = match (&a.program.workload, &a.program.cmd) {
        (Some(_), None) if a.program.metric.is_some() => {
            return Err(usage(
                "--metric applies to --cmd; a built-in workload reports its own metric \
                 (see `smtlab list`)",
            ))
        }
        (Some(ws), None) => ws
            .split(',')
            .map(|w| {
                let w = w.trim();
                let wl = workload::builtin(w).ok_or_else(|| {
                    usage(format!(
                        "--workload {w}: no such workload; built in: {}",
                        workload::builtin_names().join(", ")
                    ))
                })?;
                let resolved = workload::resolve_params(&wl.info(), &params).map_err(usage)?;
                workload::check_param_types(&wl.info(), &params).map_err(usage)?;
                // Ranges too, now: a value out of range would otherwise fail
                // every sample of the run, one by one.
                wl.check(&resolved)
                    .map_err(|e| usage(format!("{e:#} (workload `{w}`)")))?;
                Ok(Program::Builtin {
                    workload: w.to_string(),
                    params: params.clone(),
                })
            })
            .collect::<anyhow::Result<_>>()?,
        (None, Some(c)) => {
            if !a.program.params.is_empty() {
                return Err(usage(
                    "--param applies to built-in workloads; put a command's arguments in --cmd",
                ));
            }
            if c.trim().is_empty() {
                return Err(usage("--cmd: empty command"));
            }
            vec![Program::Command {
                template: c.clone(),
            }]
        }
        (None, None) if allow_no_program => {
            if let Some(p) = a.program.params.first() {
                return Err(usage(format!(
                    "--param {p}: parameters apply to the workloads named with -w; the \
                     study's own workloads run with their defaults"
                )));
            }
            Vec::new()
        }
        _ => {
            return Err(usage(
                "nothing to run: give -w WORKLOAD (see `smtlab list`) or --cmd 'COMMAND'",
            ))
        }
    };
    let models: Vec<Model> = a
        .model
        .split(',')
        .map(|m| m.trim().parse::<Model>().map_err(usage))
        .collect::<anyhow::Result<_>>()?;
    let threads = parse_threads(&a.threads)?;
    let allocs: Vec<String> = a.alloc.split(',').map(|s| s.trim().to_string()).collect();
    for al in &allocs {
        find_allocator(al).map_err(|e| usage(format!("--alloc: {e}")))?;
    }
    let spawn = match a.spawn.as_str() {
        "exec" => Spawn::Exec,
        "fork" => Spawn::Fork,
        other => return Err(usage(format!("--spawn {other}: expected exec or fork"))),
    };
    if spawn == Spawn::Fork && allocs.iter().any(|al| al != "glibc") {
        return Err(usage(
            "--alloc needs --spawn exec: a forked worker keeps the parent's allocator (LD_PRELOAD acts at exec)",
        ));
    }
    let is_cmd = a.program.cmd.is_some();
    let mode = match (&a.duration, a.work) {
        (_, Some(0)) => return Err(usage("--work 0: give a positive number of operations")),
        (None, Some(w)) if !is_cmd => Some(Mode::FixedWork { work: w }),
        (Some(d), None) if !is_cmd => Some(Mode::FixedTime {
            seconds: parse_duration("--duration", d)?,
        }),
        (None, None) => None,
        _ => {
            return Err(usage(
                "--duration and --work apply to built-in workloads; a --cmd runs to completion",
            ))
        }
    };
    let metric = match &a.program.metric {
        None => None,
        Some(m) => {
            let (name, re) = m
                .split_once('=')
                .ok_or_else(|| usage(format!("--metric {m}: expected NAME=REGEX")))?;
            regex::Regex::new(re).map_err(|e| {
                // regex's message draws a caret under the fault over
                // several lines; its last line says what is wrong.
                let what = e.to_string();
                let what = what.lines().last().unwrap_or_default().trim();
                usage(format!(
                    "--metric {m}: bad regex: {}",
                    what.strip_prefix("error: ").unwrap_or(what)
                ))
            })?;
            let higher = match a.program.metric_better.as_str() {
                "higher" => true,
                "lower" => false,
                o => {
                    return Err(usage(format!(
                        "--metric-better {o}: expected higher or lower"
                    )))
                }
            };
            Some(MetricSpec {
                name: name.trim().to_string(),
                regex: re.to_string(),
                unit: a.program.metric_unit.clone(),
                higher_is_better: higher,
            })
        }
    };
    if a.min_samples == 0 {
        return Err(usage("--min-samples 0: at least 1 sample is needed"));
    }
    if a.max_samples < a.min_samples {
        return Err(usage(format!(
            "--max-samples {} is below --min-samples {}",
            a.max_samples, a.min_samples
        )));
    }
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    Ok(RunSpec {
        programs,
        models,
        placements: placements(&a.placement)?,
        threads,
        allocs,
        spawn,
        mode,
        metric,
        warmup: a.warmup,
        min_samples: a.min_samples,
        max_samples: a.max_samples,
        precision: parse_fraction("--precision", &a.precision)?,
        max_time_s: parse_duration("--max-time", &a.max_time)?,
        timeout_s: a
            .timeout
            .as_deref()
            .map(|t| parse_duration("--timeout", t))
            .transpose()?,
        seed,
        counters: !a.no_counters,
        study: None,
    })
}

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    if !a.dry_run && !a.source.is_live() {
        return Err(usage(
            "--fsroot/--synthetic plan for another machine: add --dry-run (only this machine can be measured)",
        ));
    }
    let topo = a.source.load()?;
    let (store, run_id, spec, points) = match a.resume {
        Some(id) => {
            let store = Store::open_existing(&a.db).map_err(usage)?;
            let rec = store.run(id).map_err(usage)?;
            if rec.status == RunStatus::Complete {
                return Err(usage(format!(
                    "--resume {id}: run {id} in {} is already complete",
                    a.db.display()
                )));
            }
            let spec: RunSpec = serde_json::from_value(rec.config_json.clone())
                .with_context(|| format!("run {id}: stored configuration is unreadable"))?;
            let points = store.points(id)?;
            store.set_run_status(id, RunStatus::Running)?;
            (Some(store), id, spec, points)
        }
        None => {
            let spec = build_spec(&a)?;
            let points = plan::expand(&topo, &spec).map_err(usage)?;
            if a.dry_run {
                return print_plan(&spec, &points, a.json);
            }
            let (store, run_id, stored) = create_run(&a.db, &spec, &topo, &points)?;
            (Some(store), run_id, spec, stored)
        }
    };
    let store = store.expect("opened above");
    if a.dry_run {
        let pts: Vec<Point> = points.iter().map(|(_, p)| p.clone()).collect();
        return print_plan(&spec, &pts, a.json);
    }

    let quiet = a.json || !std::io::stderr().is_terminal();
    let status = measure(&store, run_id, &spec, &points, &a.db, quiet)?;
    let reports = point_summaries(&store, run_id, spec.seed)?;
    let text = if a.json {
        serde_json::to_string_pretty(&results::run_json(run_id, status, &reports))? + "\n"
    } else {
        results::render_table(run_id, status, &reports)
    };
    output::print(&text)?;
    if status == RunStatus::Interrupted {
        eprintln!(
            "smtlab: run {run_id} interrupted; every measured sample is stored. Finish it with: smtlab run --resume {run_id} --db {}",
            a.db.display()
        );
        return Ok(130);
    }
    Ok(0)
}

/// A new run in its store: the store, the run id, and each point with its id.
pub type NewlyStored = (Store, i64, Vec<(i64, Point)>);

/// Open (or create) the store and record a new run with its plan.
pub fn create_run(
    db: &std::path::Path,
    spec: &RunSpec,
    topo: &smtlab_topology::Topology,
    points: &[Point],
) -> anyhow::Result<NewlyStored> {
    let store = Store::open(db).map_err(usage)?;
    let topo_json = serde_json::to_value(topo)?;
    let new = NewRun {
        command_line: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: Some(crate::GIT_COMMIT.to_string()),
        seed: spec.seed,
        config_json: serde_json::to_value(spec)?,
        host: collect_host_facts(topo_json, topo.smt_active(), topo.cpu_model.clone()),
    };
    let run_id = store.create_run(&new)?;
    let mut stored = Vec::new();
    for p in points {
        stored.push((store.add_point(run_id, p)?, p.clone()));
    }
    Ok((store, run_id, stored))
}

/// Measure every point of a stored run (resuming what the store holds),
/// with a progress bar unless `quiet`, and record how the run ended.
pub fn measure(
    store: &Store,
    run_id: i64,
    spec: &RunSpec,
    points: &[(i64, Point)],
    db: &std::path::Path,
    quiet: bool,
) -> anyhow::Result<RunStatus> {
    let stop = smtlab_sys::interrupt_flag().context("installing the Ctrl-C handler")?;
    // Counters take about 20 descriptors per worker thread.
    let _ = smtlab_counters::perf_counters::raise_fd_limit();
    if !quiet {
        eprintln!(
            "smtlab: run {run_id}: {} points, seed {}, store {}",
            points.len(),
            spec.seed,
            db.display()
        );
    }
    let mut sink = Progress::new(spec, points.len(), quiet);
    let metric_regex = spec
        .metric
        .as_ref()
        .map(|m| regex::Regex::new(&m.regex).expect("validated when the run was planned"));
    let exe = std::env::current_exe().context("locating the smtlab binary")?;
    // All allocators in one engine run: their points are interleaved like
    // any others, so drift of the machine cannot favour one allocator.
    let mut preloads = BTreeMap::new();
    for alloc in &spec.allocs {
        let preload = find_allocator(alloc).map_err(|e| usage(format!("--alloc: {e}")))?;
        preloads.insert(alloc.clone(), preload);
    }
    let ctx = SampleContext {
        exe,
        preloads,
        timeout: spec
            .timeout_s
            .map(Duration::from_secs_f64)
            .or_else(|| default_timeout(points)),
        counters: spec.counters,
        stop,
        metric_regex,
    };
    let mut ctx = ctx;
    let end = engine::measure(store, points, spec, &mut ctx, &mut sink)?;
    sink.finish();
    let status = match end {
        RunEnd::Complete => RunStatus::Complete,
        RunEnd::Interrupted => RunStatus::Interrupted,
    };
    store.finish_run(run_id, status)?;
    Ok(status)
}

/// Built-in fixed-time samples cannot legitimately take much longer than
/// their duration; a generous default keeps a hung worker from hanging the
/// sweep. Fixed work and commands have no natural bound: no default.
fn default_timeout(points: &[(i64, Point)]) -> Option<Duration> {
    let mut longest: f64 = 0.0;
    for (_, p) in points {
        match (p.mode, &p.program) {
            (Mode::FixedTime { seconds }, Program::Builtin { .. }) => {
                longest = longest.max(seconds)
            }
            _ => return None,
        }
    }
    Some(Duration::from_secs_f64(longest * 10.0 + 120.0))
}

pub fn print_plan(spec: &RunSpec, points: &[Point], json: bool) -> anyhow::Result<i32> {
    let text = if json {
        serde_json::to_string_pretty(&serde_json::json!({
            "schema": "smtlab.plan/1",
            "seed": spec.seed,
            "points": points,
        }))? + "\n"
    } else {
        results::render_plan(points)
    };
    output::print(&text)?;
    Ok(0)
}

/// The progress bar: samples taken against an estimate of samples needed
/// (warm-ups plus the minimum per point, raised as points need more).
struct Progress {
    bar: ProgressBar,
    per_point: u64,
    failed: u64,
}

impl Progress {
    fn new(spec: &RunSpec, points: usize, quiet: bool) -> Progress {
        let per_point = (spec.warmup + spec.min_samples) as u64;
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(
                Some(per_point * points as u64),
                ProgressDrawTarget::stderr(),
            );
            b.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} samples, ETA {eta} {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        };
        Progress {
            bar,
            per_point,
            failed: 0,
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl EventSink for Progress {
    fn event(&mut self, e: Event<'_>) {
        match e {
            Event::Sample {
                point,
                sample,
                taken,
            } => {
                if taken as u64 > self.per_point {
                    self.bar.inc_length(1);
                }
                if sample.status != SampleStatus::Ok {
                    self.failed += 1;
                }
                self.bar.inc(1);
                self.bar.set_message(format!(
                    "{} {} {} N={}{}",
                    point.program.label(),
                    point.model,
                    point.placement,
                    point.workers,
                    if self.failed > 0 {
                        format!(" ({} failed)", self.failed)
                    } else {
                        String::new()
                    }
                ));
            }
            Event::PointDone { .. } => {}
            Event::Warning(w) => self.bar.suspend(|| eprintln!("smtlab: warning: {w}")),
        }
    }
}
