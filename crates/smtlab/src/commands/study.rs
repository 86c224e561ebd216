//! `smtlab study [NAME]`: a predefined sweep, measured, analysed and
//! reported: verdicts on the terminal, the full report in a directory.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use smtlab_allocators::{Allocator, Preloads};
use smtlab_store::RunStatus;
use smtlab_study::comm_plan::COMM_APPS;
use smtlab_study::pairs_plan::{describe_wave, Share};
use smtlab_study::report_run::{default_dir, report_run, study_json, ReportedRun};
use smtlab_study::{
    self as study, PairsRequest, Sampling, SamplingRequest, StudyKind, StudyPlan, StudyRequest,
};
use smtlab_topology::Topology;
use smtlab_types::{Comm, MetricSpec, Model, Point, Program, RunSpec, ServerKind};

use super::program_args::ProgramArgs;
use super::report;
use super::results;
use super::run;
use super::topology_source::TopologySource;
use crate::exit::usage;
use crate::flags::{self, WorkerCounts, WorkloadName};
use crate::output;

#[derive(Args, Debug)]
#[command(after_help = after_help())]
pub struct StudyArgs {
    #[arg(value_name = "NAME", value_parser = flags::parsed::<StudyKind>, help = name_help())]
    pub name: Option<StudyKind>,
    #[command(flatten)]
    pub program: ProgramArgs,
    /// Models instead of the study's own (thread, process, hybrid:PxT)
    #[arg(
        long,
        value_name = "MODELS",
        value_delimiter = ',',
        value_parser = flags::parsed::<Model>
    )]
    pub model: Option<Vec<Model>>,
    /// Worker counts instead of the study's own (1,2,4 or 1-4)
    #[arg(short = 'n', long, value_name = "LIST", value_parser = flags::worker_counts)]
    pub threads: Option<WorkerCounts>,
    /// Allocators, comma-separated [default: glibc; the alloc study: every
    /// one installed]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = flags::allocator)]
    pub alloc: Option<Vec<Allocator>>,
    /// Fixed-time mode for every workload (e.g. 500ms)
    #[arg(long, value_name = "TIME", conflicts_with = "work", value_parser = flags::seconds("--duration"))]
    pub duration: Option<f64>,
    /// Fixed-work mode: this much work per sample
    #[arg(long, value_name = "OPS", value_parser = flags::work)]
    pub work: Option<u64>,
    #[arg(long, value_name = "N", value_parser = flags::whole::<usize>("--warmup", 0, flags::MAX_SAMPLES),
          help = default_help("Warm-up samples per point", |s| s.warmup.to_string()))]
    pub warmup: Option<usize>,
    #[arg(long, value_name = "N", value_parser = flags::whole::<usize>("--min-samples", 1, flags::MAX_SAMPLES),
          help = default_help("Measured samples per point, at least", |s| s.min_samples.to_string()))]
    pub min_samples: Option<usize>,
    #[arg(long, value_name = "N", value_parser = flags::whole::<usize>("--max-samples", 1, flags::MAX_SAMPLES),
          help = default_help("Measured samples per point, at most", |s| s.max_samples.to_string()))]
    pub max_samples: Option<usize>,
    #[arg(
        long,
        value_name = "FRACTION",
        value_parser = flags::fraction("--precision"),
        help = default_help("Target 95% CI half-width of each median", |s| {
            format!("{}%", (s.precision * 1000.0).round() / 10.0)
        })
    )]
    pub precision: Option<f64>,
    #[arg(
        long,
        value_name = "TIME",
        value_parser = flags::seconds("--max-time"),
        help = default_help("Most time per point", |s| format!("{}s", s.max_time_s))
    )]
    pub max_time: Option<f64>,
    /// Kill a sample's workers past this time
    #[arg(long, value_name = "TIME", value_parser = flags::seconds("--timeout"))]
    pub timeout: Option<f64>,
    /// Seed of the measurement order and the bootstrap
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
    /// Report directory ({host}, {rank} as in --db) [default:
    /// smtlab-reports/run-RUN]
    #[arg(short = 'o', long, value_name = "DIR", value_parser = flags::report_dir)]
    pub out: Option<PathBuf>,
    /// Print the plan (points and the CPUs of each) and the limits; run nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print one JSON object instead of text (no progress bar)
    #[arg(long)]
    pub json: bool,
    /// pairs: what the two PUs of a pair share: smt (a core's siblings),
    /// cache or package [default: the closest the machine has]
    #[arg(long, value_name = "LEVEL", value_parser = flags::share())]
    pub share: Option<Share>,
    /// pairs: co-runs at once, each on its own core [default: every core]
    #[arg(long, value_name = "N", value_parser = flags::whole::<u32>("--at-once", 1, 65535))]
    pub at_once: Option<u32>,
    /// pairs: how long the programs of a pair co-run per sample [default: 1s]
    #[arg(long, value_name = "TIME", value_parser = flags::seconds("--window"))]
    pub window: Option<f64>,
    /// pairs: random pairings drawn for the distribution [default: 10000000]
    #[arg(long, value_name = "N", value_parser = flags::whole::<u64>("--trials", 1, 1_000_000_000))]
    pub trials: Option<u64>,
    /// chat: the connection counts to sweep, multiples of 20 (rooms of 20)
    /// [default: 20,200,1000,2000,5000,10000]
    #[arg(long, value_name = "LIST", value_parser = flags::parsed::<ConnectionCounts>)]
    pub connections: Option<ConnectionCounts>,
    /// comm: the communication mechanisms to compare, comma-separated:
    /// sigio, thr1, thr2, thr3, poll [default: all five]
    #[arg(
        long,
        value_name = "MECHANISMS",
        value_delimiter = ',',
        value_parser = flags::comm()
    )]
    pub comm: Option<Vec<Comm>>,
    #[command(flatten)]
    pub source: TopologySource,
}

/// `--connections LIST`: counts of 20 to 100,000, multiples of 20.
#[derive(Debug, Clone)]
pub struct ConnectionCounts(Vec<usize>);

impl std::str::FromStr for ConnectionCounts {
    type Err = String;
    fn from_str(s: &str) -> Result<ConnectionCounts, String> {
        let mut v = Vec::new();
        for part in s.split(',') {
            match part.trim().parse::<usize>() {
                Ok(c) if (20..=100_000).contains(&c) && c % 20 == 0 => v.push(c),
                _ => {
                    return Err(format!(
                        "--connections {s}: expected a list of counts from 20 to 100000, each a \
                         multiple of 20 (rooms of 20), such as 20,200,2000"
                    ))
                }
            }
        }
        v.sort_unstable();
        v.dedup();
        Ok(ConnectionCounts(v))
    }
}

/// `models, smt, ... or alloc; none for the tour`, from the one list of
/// studies.
fn name_help() -> String {
    let names: Vec<&str> = StudyKind::named().map(StudyKind::name).collect();
    let (last, rest) = names.split_last().expect("there are studies");
    format!("{} or {last}; none for the tour", rest.join(", "))
}

/// `--help`'s list of studies and examples, from the one list of studies.
fn after_help() -> String {
    // Wrapped here, with a hanging indent under the description column:
    // clap would rewrap a long line flush left.
    const WIDTH: usize = 90;
    const INDENT: usize = 13;
    let mut s = String::from("Studies:\n");
    for k in StudyKind::ALL {
        let name = if k == StudyKind::Tour {
            "(no name)"
        } else {
            k.name()
        };
        let mut line = format!("  {name:<9}  ");
        for word in k.sweep().split_whitespace() {
            if line.len() + 1 + word.len() > WIDTH && line.trim().len() > name.len() {
                s.push_str(line.trim_end());
                s.push('\n');
                line = " ".repeat(INDENT);
            }
            if !line.ends_with(' ') {
                line.push(' ');
            }
            line.push_str(word);
        }
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(
        "\nExamples:
  smtlab study
  smtlab study models -w jbb
  smtlab study oversub -w parfib
  smtlab study pinning --synthetic 'core:8 pu:8' --dry-run
  smtlab study pairs -w parfib,stream,latency,mandel --cmd 'gz=gzip -9 < big.tar > /dev/null'
  smtlab study comm -w lu --comm sigio,thr2 --threads 2,4
  smtlab study comm --synthetic 'package:8 core:2' --dry-run   (the paper's 8 dual-processor nodes)
  smtlab study smt --fsroot DUMP --dry-run   (DUMP: an extracted hwloc sysfs dump)",
    );
    s
}

/// A flag's help with its default for studies and for the tour, from the
/// library's defaults (`[default: 10; the tour 7]`).
fn default_help(what: &str, value: impl Fn(&Sampling) -> String) -> String {
    format!(
        "{what} [default: {}; the tour {}]",
        value(&Sampling::defaults(StudyKind::Models)),
        value(&Sampling::defaults(StudyKind::Tour))
    )
}

pub fn run(a: StudyArgs) -> anyhow::Result<i32> {
    let kind = a.name.unwrap_or(StudyKind::Tour);
    if !a.dry_run && !a.source.is_live() {
        return Err(usage(
            "--fsroot/--synthetic plan for another machine: add --dry-run (only this machine can be measured)",
        ));
    }
    let topo = a.source.load()?;
    check_study_flags(kind, &a)?;
    let req = request(kind, &a)?;
    let StudyPlan {
        spec,
        points,
        allocators,
        programs,
    } = study::plan(kind, &topo, req).map_err(usage)?;
    if a.dry_run {
        return print_plan(kind, &spec, &points, a.json);
    }
    measure_and_report(kind, &a, &topo, &spec, &points, programs, &allocators)
}

/// Refuse the flags that belong to another study than `kind`, and those a
/// study does not take, before anything is planned.
fn check_study_flags(kind: StudyKind, a: &StudyArgs) -> anyhow::Result<()> {
    if kind != StudyKind::Pairs
        && (a.share.is_some() || a.at_once.is_some() || a.window.is_some() || a.trials.is_some())
    {
        return Err(usage(format!(
            "--share, --at-once, --window and --trials apply to `study pairs`, not `study {kind}`"
        )));
    }
    if kind != StudyKind::Chat && a.connections.is_some() {
        return Err(usage(format!(
            "--connections applies to `study chat`, not `study {kind}`"
        )));
    }
    if kind != StudyKind::Comm && a.comm.is_some() {
        return Err(usage(format!(
            "--comm applies to `study comm`, not `study {kind}` (or to `smtlab run -w sor,lu,tsp`)"
        )));
    }
    if kind == StudyKind::Comm {
        check_comm_flags(a)?;
    }
    if kind == StudyKind::Chat && (!a.program.workload.is_empty() || !a.program.cmd.is_empty()) {
        return Err(usage(
            "-w/--cmd: `study chat` measures smtlab's chat server and ngircd; use `smtlab run -w \
             chat,ngircd` to choose",
        ));
    }
    Ok(())
}

/// What the user asked of the study `kind`: its programs, metric, mode,
/// sweep and sampling, from the flags (the study fills in the rest).
fn request(kind: StudyKind, a: &StudyArgs) -> anyhow::Result<StudyRequest> {
    let (programs, metric, pairs) = programs(kind, a)?;
    let mode = if kind == StudyKind::Pairs {
        // Built-in workloads take --duration/--work; commands run to
        // completion whatever they are.
        let builtins = ProgramArgs {
            cmd: Vec::new(),
            ..a.program.clone()
        };
        builtins.mode(a.duration, a.work)?
    } else {
        a.program.mode(a.duration, a.work)?
    };
    Ok(StudyRequest {
        pairs,
        programs,
        metric,
        models: a.model.clone(),
        threads: a.threads.as_ref().map(|w| w.0.clone()),
        allocators: a.alloc.clone(),
        mode,
        sampling: SamplingRequest {
            warmup: a.warmup,
            min_samples: a.min_samples,
            max_samples: a.max_samples,
            precision: a.precision,
            max_time_s: a.max_time,
            timeout_s: a.timeout,
        },
        seed: run::seed_or_clock(a.seed),
        counters: !a.no_counters,
        connections: a.connections.as_ref().map(|c| c.0.clone()),
        comms: a.comm.clone(),
    })
}

/// The study's programs and metric from -w/--cmd/--param: each study
/// reads them its own way (pairs names each program; chat, comm and web
/// have programs of their own that take the user's parameters).
fn programs(
    kind: StudyKind,
    a: &StudyArgs,
) -> anyhow::Result<(Vec<Program>, Option<MetricSpec>, PairsRequest)> {
    let with = |workload: Vec<WorkloadName>| {
        let given = ProgramArgs {
            workload,
            ..a.program.clone()
        };
        given.programs(false)
    };
    if kind == StudyKind::Pairs {
        let named = a.program.pair_programs()?;
        let pairs = PairsRequest {
            names: named.iter().map(|(n, _)| n.clone()).collect(),
            share: a.share,
            at_once: a.at_once.map(|n| n as usize),
            window_s: a.window,
        };
        return Ok((named.into_iter().map(|(_, p)| p).collect(), None, pairs));
    }
    let (programs, metric) = if kind == StudyKind::Chat {
        // The study's servers take the user's --param (messages=, rate=,
        // room=) and --client-cpus; the connections are --connections.
        if a.program.params.iter().any(|(k, _)| k == "connections") {
            return Err(usage(
                "--param connections: `study chat` sweeps --connections LIST instead",
            ));
        }
        with(vec![WorkloadName::Server(ServerKind::Chat)])?
    } else if kind == StudyKind::Comm {
        // The applications named with -w (default: all three), each with
        // the user's --param; the study gives each parameter to the
        // applications that take it, and sets the layout (per_node) itself.
        let apps = if a.program.workload.is_empty() {
            COMM_APPS
                .map(|app| WorkloadName::Dsm(app.to_string()))
                .to_vec()
        } else {
            a.program.workload.clone()
        };
        with(apps)?
    } else if kind == StudyKind::Web && a.program.workload.is_empty() && a.program.cmd.is_empty() {
        // The study's servers, with the user's --param and --client-cpus:
        // smtlab's web server, and nginx where it is installed (the plan
        // says so where it is not).
        let mut servers = vec![WorkloadName::Server(ServerKind::Web)];
        if smtlab_web::nginx::find().is_some() {
            servers.push(WorkloadName::Server(ServerKind::Nginx));
        }
        with(servers)?
    } else {
        a.program.programs(true)?
    };
    Ok((programs, metric, PairsRequest::default()))
}

/// Measure the planned study into the store, write its report and print
/// its results; the exit status says whether every point has a result.
fn measure_and_report(
    kind: StudyKind,
    a: &StudyArgs,
    topo: &Topology,
    spec: &RunSpec,
    points: &[Point],
    programs: smtlab_plan::TypedPrograms,
    allocators: &[Allocator],
) -> anyhow::Result<i32> {
    let meta = spec.study.clone().expect("study::plan sets the study");
    // One task per host under a launcher, unless --shared-host.
    let shared = run::one_task_per_host(a.shared_host)?;
    // The report is written after minutes of measuring: a directory that
    // cannot be one is refused now, not then.
    check_report_dir(a.out.as_deref())?;
    let quiet = a.json || !std::io::stderr().is_terminal();
    if !quiet {
        eprintln!("smtlab study {kind}: {}", kind.question());
        for l in meta.limits.iter().chain(&meta.notes) {
            eprintln!("  {l}");
        }
    }
    let (store, run_id, stored) = run::create_shared_run(&a.db, spec, topo, points, shared)?;
    let preloads = Preloads::of(allocators);
    let run = run::Measured {
        store: &store,
        run_id,
        spec,
        points: &stored,
        programs,
    };
    let status = run::measure(run, preloads, &a.db, quiet)?;
    if status == RunStatus::Interrupted {
        eprintln!(
            "smtlab: study run {run_id} interrupted; every measured sample is stored. Finish it with: smtlab run --resume {run_id} --db {}, then write its report with: smtlab report {run_id} --db {}",
            a.db.display(),
            a.db.display()
        );
        return Ok(smtlab_sys::interrupted_exit_code());
    }
    let dir = a.out.clone().unwrap_or_else(|| default_dir(run_id));
    let record = store.run(run_id)?;
    let trials = a.trials.unwrap_or(smtlab_analyse::pairs::DEFAULT_TRIALS);
    let reported = report_run(&store, record, &dir, trials)?;
    let text = if a.json {
        serde_json::to_string_pretty(&study_json(run_id, status, &reported))? + "\n"
    } else {
        render(kind, run_id, status, &reported)
    };
    output::print(&text)?;
    let summaries: Vec<_> = reported
        .data
        .points
        .iter()
        .map(|p| p.summary.clone())
        .collect();
    Ok(crate::exit::of_results(run_id, &summaries))
}

/// The flags `study comm` does not take, refused in one line naming them:
/// its programs are the DSM applications, its ranks processes, and a DSM
/// rank runs with the system's allocator.
fn check_comm_flags(a: &StudyArgs) -> anyhow::Result<()> {
    if !a.program.cmd.is_empty() {
        return Err(usage(
            "--cmd: `study comm` measures the DSM applications sor, lu and tsp (-w chooses among \
             them)",
        ));
    }
    if let Some(w) = a
        .program
        .workload
        .iter()
        .find(|w| !COMM_APPS.contains(&w.as_str()))
    {
        return Err(usage(format!(
            "-w {w}: `study comm` measures the DSM applications sor, lu and tsp"
        )));
    }
    let mut refused = Vec::new();
    if a.model.is_some() {
        refused.push("--model (ranks are processes)");
    }
    if a.alloc.is_some() {
        refused.push("--alloc");
    }
    if a.program.client_cpus.is_some() {
        refused.push("--client-cpus");
    }
    if a.program.metric.is_some() {
        refused.push("--metric (the metric is the parallel section's wall time)");
    }
    if a.duration.is_some() || a.work.is_some() {
        refused.push("--duration/--work (one problem per sample, sized by --param)");
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(usage(format!(
            "{}: not for `study comm`, which chooses mechanisms with --comm, ranks with \
             --threads and sizes with --param",
            refused.join(", ")
        )))
    }
}

/// The pairs study's plan: each wave's co-runs on their PUs, and how long
/// the measurement takes.
fn pairs_plan_text(spec: &RunSpec, points: &[Point]) -> String {
    let mut s = String::new();
    let runs: usize = points.iter().map(|p| describe_wave(p).len()).sum();
    s.push_str(&format!(
        "{} co-runs in {} wave(s); the programs of a wave run at once:\n",
        runs,
        points.len()
    ));
    for p in points {
        s.push_str(&format!(
            "wave {:>3}: {}\n",
            p.index,
            describe_wave(p).join("; ")
        ));
    }
    let window = match points.first().map(|p| p.mode) {
        Some(smtlab_types::Mode::FixedTime { seconds }) => seconds,
        _ => 0.0,
    };
    let per_point = |n: usize| (spec.warmup + n) as f64 * window * points.len() as f64;
    s.push_str(&format!(
        "time: {:.0} to {:.0} s of co-running ({} wave(s) x ({} warm-up + {} to {} samples) x {} s \
         window), plus each program's set-up\n",
        per_point(spec.min_samples),
        per_point(spec.max_samples),
        points.len(),
        spec.warmup,
        spec.min_samples,
        spec.max_samples,
        window
    ));
    s
}

/// Make sure the report can be written where it will go: `-o DIR` (created
/// now if missing) or the default `smtlab-reports/` (its run directory is
/// named once the run has an id).
fn check_report_dir(out: Option<&Path>) -> anyhow::Result<()> {
    let (dir, flag) = match out {
        Some(d) => (d.to_path_buf(), format!("-o {}", d.display())),
        None => (
            default_dir(0)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            "the report directory smtlab-reports".to_string(),
        ),
    };
    let fail = |why: String| {
        usage(format!("{flag}: {why}; give a directory the report can be written to (it is created if missing)"))
    };
    if dir.exists() && !dir.is_dir() {
        return Err(fail("not a directory".into()));
    }
    std::fs::create_dir_all(&dir).map_err(|e| fail(format!("cannot create it ({e})")))?;
    let probe = dir.join(format!(".smtlab-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| fail(format!("cannot write in it ({e})")))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The terminal text of a finished study: results, study tables, verdicts,
/// recommendations, limits, and where the report is.
fn render(kind: StudyKind, run_id: i64, status: RunStatus, b: &ReportedRun) -> String {
    let mut s = String::new();
    s.push_str(&format!("smtlab study {kind}: {}\n\n", kind.question()));
    let mut reports: Vec<_> = b.data.points.iter().map(|p| p.summary.clone()).collect();
    if kind == StudyKind::Comm {
        // Every statistic of every rank: the study's tables show them per
        // mechanism, and results.json and samples.csv keep them all.
        for r in &mut reports {
            r.extras.clear();
        }
    }
    s.push_str(&results::render_table(run_id, status, &reports));
    match b.pairs.as_ref().and_then(|p| p.analysis.as_ref()) {
        Some(a) => {
            s.push('\n');
            s.push_str(&smtlab_analyse::pairs::render_text(a));
            // The analysis text already shows the matrix with its intervals
            // and the verdict: the report's copies are not printed again.
            let mut rest = b.findings.clone();
            rest.tables.retain(|t| !t.title.starts_with("Pair matrix"));
            rest.verdicts.retain(|v| *v != a.verdict);
            s.push_str(&report::render_findings_of(b, &rest));
        }
        None => s.push_str(&report::render_findings(b)),
    }
    s
}

fn print_plan(
    kind: StudyKind,
    spec: &RunSpec,
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
        if kind == StudyKind::Pairs {
            s.push_str(&pairs_plan_text(spec, points));
        } else {
            s.push_str(&results::render_plan(points));
        }
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
