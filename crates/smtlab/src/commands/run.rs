//! `smtlab run`: measure a workload or a command across models, placements,
//! thread counts and allocators; store every sample; print the results.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smtlab_allocators::{Allocator, Preloads};
use smtlab_analyse::summary::point_summaries;
use smtlab_execute::SampleContext;
use smtlab_measure::engine::{self, Event, EventSink, RunEnd};
use smtlab_plan as plan;
use smtlab_store::{collect_host_facts, HostFacts, NewRun, RunStatus, Store, StoreError};
use smtlab_types::{Comm, Mode, Model, Point, Program, RunSpec, SampleStatus, SharedHost, Spawn};

use super::program_args::ProgramArgs;
use super::results;
use super::topology_source::TopologySource;
use crate::exit::usage;
use crate::flags::{self, Placements, WorkerCounts};
use crate::output;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  smtlab run -w spin --model thread,process --placement compact,scatter --threads 1,2
  smtlab run --cmd 'stress-ng --cpu {threads} -t 2' --model thread --threads 1,2
  smtlab run --cmd './bench -j {threads}' --metric 'rate=([0-9.]+) ops/s' --metric-unit ops/s
  smtlab run -w web,nginx --model process,thread,event,staged --threads 1 --client-cpus 1
  smtlab run -w sor --comm sigio,thr1,thr2,thr3,poll -n 2,4 --param per_node=2
  smtlab run --resume 3

Servers (-w web: smtlab's, in the models process, thread, event, staged; -w nginx: Debian's, \
as event) run on the placement's CPUs and are driven by smtlab's load generator on the others \
(--client-cpus to choose) for --duration (default 1 s) per sample; the metric is successful \
requests/s. Parameters: files=SIZE (default 51MB), connections=C (default 2 per worker), \
keepalive=0|1 (default 0, a connection per request as SPECweb96), url=PATH (one file instead \
of the SPECweb96 mix), helpers=K (event's helper threads). Per request, the server's CPU µs \
(user, sys) and context switches are stored with each sample.

DSM applications (-w sor, lu, tsp) run as N processes (ranks) sharing memory through a software \
DSM over UDP on this machine, one point per --comm mechanism; the metric is the wall time of \
the parallel section, and a result that does not match the sequential run fails the sample. \
Parameters: the application's sizes (sor: n, iterations; lu: n, block, seed; tsp: \
cities, seed, depth; an unknown one is refused naming the valid ones), loss=P (injected datagram loss), \
per_node=1|2 (two ranks share a node's two CPUs). On a cluster, start the ranks with a \
launcher instead: mpirun -np 4 smtlab rank -w sor --comm thr2.")]
pub struct RunArgs {
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Execution models, comma-separated: thread, process, hybrid:PxT (P
    /// processes of T threads: its N is P x T, --threads does not apply);
    /// servers also event and staged (nginx: event only) [default: thread;
    /// process when every workload is a DSM application]
    #[arg(
        long,
        value_name = "MODELS",
        value_delimiter = ',',
        value_parser = flags::parsed::<Model>
    )]
    pub model: Option<Vec<Model>>,
    /// DSM applications (-w sor, lu, tsp): how each rank notices the
    /// others' requests, comma-separated: sigio, thr1, thr2, thr3, poll
    /// (one point each; default sigio). N (--threads) is the number of
    /// ranks, each a process
    #[arg(
        long,
        value_name = "MECHANISMS",
        value_delimiter = ',',
        value_parser = flags::comm()
    )]
    pub comm: Vec<Comm>,
    /// Placements: compact, scatter, core, smt:K, none, comma-separated; or
    /// one CPU expression per flag (repeatable, e.g. --placement 0,1)
    #[arg(
        long,
        value_name = "POLICY",
        default_value = "compact",
        value_parser = flags::placements
    )]
    pub placement: Vec<Placements>,
    /// Worker counts: a list or ranges (1,2,4 or 1-4)
    #[arg(
        short = 'n',
        long,
        value_name = "LIST",
        default_value = "1",
        value_parser = flags::worker_counts
    )]
    pub threads: WorkerCounts,
    /// Allocators: glibc, jemalloc, mimalloc, tcmalloc, jemalloc-percpu,
    /// smtalloc (libsmtalloc.so next to smtlab, else in its ../lib/smtlab/)
    /// or a .so path, comma-separated (LD_PRELOAD for the workers)
    #[arg(
        long,
        value_name = "LIST",
        default_value = "glibc",
        value_delimiter = ',',
        value_parser = flags::allocator
    )]
    pub alloc: Vec<Allocator>,
    /// How worker processes start: exec (fresh address space) or fork (prefork)
    #[arg(
        long,
        value_name = "HOW",
        default_value = "exec",
        value_parser = flags::spawn()
    )]
    pub spawn: Spawn,
    /// Fixed-time mode: run each sample this long, metric = the workload's
    /// throughput or latency (default: each workload's own, see `smtlab list`)
    #[arg(long, value_name = "TIME", conflicts_with = "work", value_parser = flags::seconds("--duration"))]
    pub duration: Option<f64>,
    /// Fixed-work mode: this much work per sample (operations, or problem
    /// instances for queue workloads), metric = wall time
    #[arg(long, value_name = "OPS", value_parser = flags::work)]
    pub work: Option<u64>,
    /// Warm-up samples per point (stored, flagged, excluded)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = flags::whole::<usize>("--warmup", 0, flags::MAX_SAMPLES))]
    pub warmup: usize,
    /// Measured samples per point, at least
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = flags::whole::<usize>("--min-samples", 1, flags::MAX_SAMPLES))]
    pub min_samples: usize,
    /// Measured samples per point, at most
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = flags::whole::<usize>("--max-samples", 1, flags::MAX_SAMPLES))]
    pub max_samples: usize,
    /// Stop repeating a point when the 95% CI half-width of its median is
    /// within this fraction (0.02 or 2%)
    #[arg(
        long,
        value_name = "FRACTION",
        default_value = "2%",
        value_parser = flags::fraction("--precision")
    )]
    pub precision: f64,
    /// Most time to spend on one point
    #[arg(
        long,
        value_name = "TIME",
        default_value = "30s",
        value_parser = flags::seconds("--max-time")
    )]
    pub max_time: f64,
    /// Kill a sample's workers past this time and record it as a timeout
    /// (bounds a built-in workload's set-up and its measured run, each)
    #[arg(long, value_name = "TIME", value_parser = flags::seconds("--timeout"))]
    pub timeout: Option<f64>,
    /// Seed of the interleaved measurement order and the bootstrap
    /// (default: from the clock, printed and stored)
    #[arg(long, value_name = "N", value_parser = flags::whole::<u64>("--seed", 0, u64::MAX))]
    pub seed: Option<u64>,
    /// Do not open perf counters
    #[arg(long)]
    pub no_counters: bool,
    /// SQLite store; {host} and {rank} in it are this host's name
    /// (SMTLAB_HOSTNAME replaces it) and the launcher's rank
    /// (`--db /shared/{host}.db`)
    #[arg(long, value_name = "PATH", default_value = "smtlab.db", value_parser = flags::db)]
    pub db: PathBuf,
    /// Measure even when a launcher (mpirun, srun) runs other tasks of this
    /// job on this host (they disturb each other's measurements; the run
    /// records it)
    #[arg(long)]
    pub shared_host: bool,
    /// Print every point and its CPUs, run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Finish an interrupted run without repeating committed samples (as
    /// it was planned: flags that would change the plan are refused)
    #[arg(
        long,
        value_name = "RUN",
        value_parser = flags::whole::<i64>("--resume", 1, i64::MAX as u64),
        conflicts_with_all = [
            "workload", "params", "cmd", "metric", "metric_unit", "metric_better", "model", "comm",
            "placement", "threads", "alloc", "spawn", "duration", "work", "warmup",
            "min_samples", "max_samples", "precision", "max_time", "timeout", "seed",
            "no_counters", "fsroot", "synthetic",
        ]
    )]
    pub resume: Option<i64>,
    /// Print one JSON object instead of tables (no progress bar)
    #[arg(long)]
    pub json: bool,
    /// Plan for another machine (only with --dry-run)
    #[command(flatten)]
    pub source: TopologySource,
}

/// The run specification of the command line: every flag is typed
/// already; what is checked here is how they go together.
fn spec(a: &RunArgs) -> anyhow::Result<RunSpec> {
    let (programs, metric) = a.program.programs(false)?;
    if a.spawn == Spawn::Fork && a.alloc.iter().any(|al| al.name != "glibc") {
        return Err(usage(
            "--alloc needs --spawn exec: a forked worker keeps the parent's allocator (LD_PRELOAD acts at exec)",
        ));
    }
    // DSM ranks are processes and nothing else: `-w sor` alone needs no
    // --model.
    let all_dsm = !a.program.workload.is_empty()
        && a.program
            .workload
            .iter()
            .all(|w| matches!(w, crate::flags::WorkloadName::Dsm(_)));
    let models = match &a.model {
        Some(m) => m.clone(),
        None if all_dsm => vec![Model::Process],
        None => vec![Model::Thread],
    };
    Ok(RunSpec {
        programs,
        comms: a.comm.clone(),
        models,
        placements: a.placement.iter().flat_map(|p| p.0.clone()).collect(),
        threads: a.threads.0.clone(),
        allocs: a.alloc.iter().map(|al| al.name.clone()).collect(),
        spawn: a.spawn,
        mode: a.program.mode(a.duration, a.work)?,
        metric,
        warmup: a.warmup,
        min_samples: a.min_samples,
        max_samples: a.max_samples,
        precision: a.precision,
        max_time_s: a.max_time,
        timeout_s: a.timeout,
        seed: seed_or_clock(a.seed),
        counters: !a.no_counters,
        study: None,
    })
}

/// `--seed`, or one from the clock (printed and stored with the run).
pub fn seed_or_clock(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    })
}

pub fn run(a: RunArgs) -> anyhow::Result<i32> {
    if !a.dry_run && !a.source.is_live() {
        return Err(usage(
            "--fsroot/--synthetic plan for another machine: add --dry-run (only this machine can be measured)",
        ));
    }
    let topo = a.source.load()?;
    let shared = if a.dry_run {
        None
    } else {
        one_task_per_host(a.shared_host)?
    };
    let (store, run_id, spec, points, preloads, programs) = match a.resume {
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
            // A dry run leaves the store as it found it.
            if a.dry_run {
                let pts: Vec<Point> = points.into_iter().map(|(_, p)| p).collect();
                return print_plan(&spec, &pts, a.json);
            }
            // The stored points' parameters, typed once for every sample.
            let pts: Vec<Point> = points.iter().map(|(_, p)| p.clone()).collect();
            let programs = plan::TypedPrograms::of(&pts).map_err(usage)?;
            // The stored run names its allocators; find them here, once.
            let preloads =
                Preloads::find(&spec.allocs).map_err(|e| usage(format!("--alloc: {e}")))?;
            for (name, p) in spec
                .allocs
                .iter()
                .filter_map(|n| Some((n, preloads.get(n)?)))
            {
                crate::flags::loadable(p).map_err(|e| usage(format!("--alloc {name}: {e}")))?;
            }
            // Only now, every check passed, is the run running again, and
            // this process's alone: refused while another measures it.
            store.resume_run(id).map_err(|e| match e {
                StoreError::RunOwned { .. } | StoreError::RunComplete { .. } => usage(e),
                other => other.into(),
            })?;
            // The samples still to come share the host: say so in the
            // run's facts, as a new run would.
            if let Some(s) = &shared {
                store.set_shared_host(id, s)?;
            }
            (store, id, spec, points, preloads, programs)
        }
        None => {
            let spec = spec(&a)?;
            let plan::Plan { points, programs } = plan::plan(&topo, &spec).map_err(usage)?;
            if a.dry_run {
                return print_plan(&spec, &points, a.json);
            }
            let (store, run_id, stored) = create_shared_run(&a.db, &spec, &topo, &points, shared)?;
            (
                store,
                run_id,
                spec,
                stored,
                Preloads::of(&a.alloc),
                programs,
            )
        }
    };

    let quiet = a.json || !std::io::stderr().is_terminal();
    let run = Measured {
        store: &store,
        run_id,
        spec: &spec,
        points: &points,
        programs,
    };
    let status = measure(run, preloads, &a.db, quiet)?;
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
        return Ok(smtlab_sys::interrupted_exit_code());
    }
    Ok(crate::exit::of_results(run_id, &reports))
}

/// Whether this task may measure on this host (`shared_host`: one task
/// per host, or `--shared-host`): what the run's host facts record, or the
/// one-line usage error. A shared host is warned about here, before
/// anything runs.
pub fn one_task_per_host(allowed: bool) -> anyhow::Result<Option<SharedHost>> {
    let launcher = smtlab_dsm::launcher_from_env(|k| std::env::var(k).ok());
    let shared = crate::shared_host::check(launcher, allowed).map_err(usage)?;
    if let Some(s) = &shared {
        crate::exit::stderr_line(&crate::shared_host::warning(s));
    }
    Ok(shared)
}

/// A new run in its store: the store, the run id, and each point with its id.
pub type NewlyStored = (Store, i64, Vec<(i64, Point)>);

/// Open (or create) the store and record a new run with its plan, begun
/// at `started_at` (Unix seconds): rank 0 records a launcher's job at its
/// end.
pub fn create_run(
    db: &std::path::Path,
    spec: &RunSpec,
    topo: &smtlab_topology::Topology,
    points: &[Point],
    started_at: f64,
) -> anyhow::Result<NewlyStored> {
    create_run_with(db, spec, topo, points, None, Some(started_at))
}

/// Open (or create) the store and record a new run with its plan, begun
/// now, the host facts saying whether the run shares its host
/// with other tasks of a launcher's job ([`one_task_per_host`]).
pub fn create_shared_run(
    db: &std::path::Path,
    spec: &RunSpec,
    topo: &smtlab_topology::Topology,
    points: &[Point],
    shared: Option<SharedHost>,
) -> anyhow::Result<NewlyStored> {
    create_run_with(db, spec, topo, points, shared, None)
}

fn create_run_with(
    db: &std::path::Path,
    spec: &RunSpec,
    topo: &smtlab_topology::Topology,
    points: &[Point],
    shared: Option<SharedHost>,
    started_at: Option<f64>,
) -> anyhow::Result<NewlyStored> {
    let topo_json = serde_json::to_value(topo)?;
    let new = NewRun {
        command_line: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: Some(crate::GIT_COMMIT.to_string()),
        seed: spec.seed,
        config_json: serde_json::to_value(spec)?,
        host: HostFacts {
            shared_host: shared,
            emulated: smtlab_topology::emulated_cpu(std::path::Path::new("/")),
            ..collect_host_facts(topo_json, topo.smt_active(), topo.cpu_model.clone())
                .map_err(usage)?
        },
        started_at,
    };
    // After the host facts, which refuse a host name that cannot be shown:
    // a refused run makes no store.
    let store = Store::open(db).map_err(usage)?;
    let run_id = store.create_run(&new)?;
    let mut stored = Vec::new();
    for p in points {
        stored.push((store.add_point(run_id, p)?, p.clone()));
    }
    Ok((store, run_id, stored))
}

/// A stored run to measure: its store and id, its specification, its
/// points with their ids, and its programs' parameters as planned.
pub struct Measured<'a> {
    pub store: &'a Store,
    pub run_id: i64,
    pub spec: &'a RunSpec,
    pub points: &'a [(i64, Point)],
    pub programs: plan::TypedPrograms,
}

/// Measure every point of a stored run (resuming what the store holds),
/// with a progress bar unless `quiet`, and record how the run ended.
pub fn measure(
    run: Measured<'_>,
    preloads: Preloads,
    db: &std::path::Path,
    quiet: bool,
) -> anyhow::Result<RunStatus> {
    let Measured {
        store,
        run_id,
        spec,
        points,
        programs,
    } = run;
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
    let exe = std::env::current_exe().context("locating the smtlab binary")?;
    // All allocators in one measurement: their points are interleaved like
    // any others, so drift of the machine cannot favour one allocator.
    let mut ctx = SampleContext {
        exe,
        preloads,
        timeout: spec
            .timeout_s
            .map(Duration::from_secs_f64)
            .or_else(|| default_timeout(points)),
        counters: spec.counters,
        stop,
        metric_regex: spec.metric.as_ref().map(|m| m.regex.regex().clone()),
        programs,
    };
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
