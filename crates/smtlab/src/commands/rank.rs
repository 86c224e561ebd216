//! `smtlab rank`: one rank of a DSM run started by an existing launcher
//! (`mpirun -np 4 smtlab rank -w sor --comm thr2`, `srun smtlab rank ...`).
//! The rank and the rank count come from the launcher's variables; the
//! ranks meet at a rendezvous (by default a directory named by the job);
//! rank 0 records the run in its store as `run` records a one-point run
//! (the sample made from the report by the same code) and prints it, the
//! other ranks exit quietly. A rank left waiting for a silent one, or
//! told to stop (the launcher aborting the job), leaves the rendezvous
//! and exits with one line; a rendezvous directory that ranks killed
//! outright left under the temp dir is removed by the next job.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use smtlab_analyse::summary::point_summaries;
use smtlab_dsm::{DsmPointParams, LauncherRank, RankArgs as OneRank, Rendezvous, RunReport};
use smtlab_plan as plan;
use smtlab_store::{RunStatus, Store};
use smtlab_topology::Topology;
use smtlab_types::extras::dsm;
use smtlab_types::{Comm, Model, Point, PolicySpec, Program, ResourceUsage, RunSpec, Spawn};

use super::program_args::param_map;
use super::run::create_run;
use crate::exit::usage;
use crate::flags;
use crate::output;

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  mpirun -np 4 smtlab rank -w sor --comm thr2 --param n=256
  mpirun --oversubscribe -np 4 smtlab rank -w lu --comm sigio --db lu.db --json
  srun -N 2 -n 4 smtlab rank -w tsp --comm thr2 --rendezvous node01:7300

Run it under a launcher: Open MPI's mpirun (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE), \
Slurm's srun (SLURM_PROCID, SLURM_NTASKS) or a PMI launcher (PMI_RANK, PMI_SIZE); every \
process is one rank. Without --rendezvous the ranks meet in a directory under TMPDIR named by \
the launcher's job id: enough on one machine or with a shared TMPDIR; across machines give \
rank 0's address (HOST:PORT, on rank 0's host) or a shared directory. Rank 0 stores the run \
(placement `none`: the launcher placed the ranks) and prints it; exit 3 if the result did \
not verify. To start the ranks on this machine, use `smtlab run -w APP --comm MECH -n N`.")]
pub struct RankArgs {
    /// The DSM application: sor, lu or tsp
    #[arg(short = 'w', long, value_name = "APP", value_parser = flags::dsm_app)]
    pub workload: String,
    /// How each rank notices the others' requests: sigio, thr1, thr2, thr3
    /// or poll
    #[arg(long, value_name = "MECHANISM", value_parser = flags::comm())]
    pub comm: Comm,
    /// A parameter of the application or the DSM, KEY=VALUE (repeatable)
    #[arg(long = "param", value_name = "K=V", value_parser = flags::param)]
    pub params: Vec<(String, String)>,
    /// Where the ranks meet: dir:PATH (a directory every rank can read) or
    /// HOST:PORT (rank 0 listens there) [default: a directory named by the
    /// launcher's job]
    #[arg(long, value_name = "dir:PATH|HOST:PORT", value_parser = flags::parsed::<Rendezvous>)]
    pub rendezvous: Option<Rendezvous>,
    /// The address this rank's UDP socket binds and tells the others
    /// [default: 127.0.0.1 when every rank is on this machine; else the
    /// interface toward rank 0 or this host name's address]
    #[arg(long, value_name = "IP", value_parser = flags::bind_ip)]
    pub bind: Option<IpAddr>,
    /// How long a rank waits for the others at the rendezvous
    #[arg(
        long,
        value_name = "TIME",
        default_value = "60s",
        value_parser = flags::seconds("--meet-timeout")
    )]
    pub meet_timeout: f64,
    /// How long a rank waits for a reply of another (a page, a lock, a
    /// barrier) before it gives up, naming the rank that went silent
    #[arg(
        long,
        value_name = "TIME",
        default_value = "120s",
        value_parser = flags::seconds("--stall-timeout")
    )]
    pub stall_timeout: f64,
    /// Seed of the injected loss (the same for every rank; stored with the
    /// run)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = flags::whole::<u64>("--seed", 0, u64::MAX))]
    pub seed: u64,
    /// SQLite store rank 0 records the run in ({host}: this host's name)
    #[arg(long, value_name = "PATH", default_value = "smtlab.db", value_parser = flags::db)]
    pub db: PathBuf,
    /// Rank 0 prints one JSON object instead of the summary
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: RankArgs) -> anyhow::Result<i32> {
    let started_at = smtlab_sys::unix_now_s();
    smtlab_dsm::on_stall(super::rank_worker::give_up);
    let launcher = launcher()?;
    let params = param_map(&a.params)?;
    // Every rank checks, so every rank refuses the same mistake at once
    // instead of waiting at the rendezvous for a rank that gave up. The
    // rank count is the launcher's, named by its variable.
    let ranks_from = smtlab_dsm::RanksFrom::Var(launcher.size_var());
    // Parsed once, here, where the user gave them: the rank runs with
    // these, and rank 0 records its sample with their `per_node`.
    let planned = DsmPointParams::parse(&a.workload, &params).map_err(usage)?;
    planned
        .check_ranks(launcher.size, ranks_from)
        .map_err(usage)?;
    let (rendezvous, bind) = meeting(&a, &launcher)?;
    leave_when_stopped(&rendezvous, launcher.rank)?;
    let spec = rank_spec(&a, &params, launcher.size);
    // Rank 0 plans the run and opens its store before the ranks meet: a
    // mistake there must not cost the run it would have recorded.
    let rank0 = if launcher.rank == 0 {
        Some(plan_rank0(&a.db, &spec)?)
    } else {
        None
    };
    let per_node = planned.dsm.per_node;
    let args = OneRank {
        comm: a.comm,
        params: planned,
        rank: launcher.rank,
        ranks: launcher.size,
        rendezvous: rendezvous.clone(),
        bind,
        seed: spec.seed,
        meet_timeout: Duration::from_secs_f64(a.meet_timeout),
        stall_timeout: Duration::from_secs_f64(a.stall_timeout),
    };
    // What earlier jobs' ranks, killed before they could leave, left.
    if let Rendezvous::Dir(own) = &rendezvous {
        smtlab_dsm::sweep_stale(&std::env::temp_dir(), Some(own));
    }
    // The DSM removes the rendezvous as the run goes (rank 0 once every
    // rank is past the first barrier; a rank that fails leaves it).
    let report = smtlab_dsm::run_rank(&args)?;
    let (Some(rank0), Some(report)) = (rank0, report) else {
        // Not rank 0: rank 0 records and prints.
        return Ok(0);
    };
    record(&a, &launcher, &spec, &rank0, &report, started_at, per_node)
}

/// This process's rank and the rank count, from the launcher's variables;
/// without a launcher, one line saying how to run it.
fn launcher() -> anyhow::Result<LauncherRank> {
    smtlab_dsm::launcher_from_env(|k| std::env::var(k).ok())
        .map_err(|e| usage(format!("`smtlab rank`: {e}")))?
        .ok_or_else(|| {
            usage(
                "`smtlab rank` found no launcher's rank in the environment (OMPI_COMM_WORLD_RANK, \
                 PMI_RANK or SLURM_PROCID): run it under mpirun or srun (mpirun -np 4 smtlab \
                 rank -w sor --comm thr2), or start the ranks here with `smtlab run -w sor \
                 --comm thr2 -n 4`",
            )
        })
}

/// Where the ranks meet (`--rendezvous`, else by the launcher's job) and
/// the address this rank binds (`--bind`, else one the others can reach).
fn meeting(a: &RankArgs, launcher: &LauncherRank) -> anyhow::Result<(Rendezvous, IpAddr)> {
    let rendezvous = match a
        .rendezvous
        .clone()
        .or_else(|| smtlab_dsm::default_rendezvous(launcher))
    {
        Some(r) => r,
        None => {
            return Err(usage(format!(
                "--rendezvous: {} gives no job id to meet by; name where the ranks meet: \
                 --rendezvous dir:PATH (a directory every rank can read) or HOST:PORT (rank \
                 0's address)",
                launcher.launcher
            )))
        }
    };
    let bind = match a.bind {
        Some(ip) => ip,
        None => smtlab_dsm::default_bind(launcher, &rendezvous).ok_or_else(|| {
            usage(
                "--bind: cannot tell this host's address for ranks on other machines; give \
                 --bind IP",
            )
        })?,
    };
    Ok((rendezvous, bind))
}

/// The one-point run a launcher's job is: `ranks` processes of the
/// application, placed by the launcher, one sample.
fn rank_spec(a: &RankArgs, params: &BTreeMap<String, String>, ranks: usize) -> RunSpec {
    RunSpec {
        programs: vec![Program::Ranks {
            app: a.workload.clone(),
            comm: a.comm,
            params: params.clone(),
        }],
        comms: vec![a.comm],
        models: vec![Model::Process],
        placements: vec!["none".parse::<PolicySpec>().expect("`none` is a placement")],
        threads: vec![ranks],
        allocs: vec!["glibc".into()],
        spawn: Spawn::Exec,
        mode: None,
        metric: None,
        warmup: 0,
        min_samples: 1,
        max_samples: 1,
        precision: 0.02,
        max_time_s: 30.0,
        timeout_s: None,
        seed: a.seed,
        counters: false,
        study: None,
    }
}

/// Rank 0's checks before the ranks meet: the machine, the run's one
/// point, the store opened and the host name it will record.
fn plan_rank0(db: &Path, spec: &RunSpec) -> anyhow::Result<(Topology, Vec<Point>)> {
    let topo = smtlab_topology::sysfs::read_live().map_err(|e| anyhow::anyhow!(e))?;
    let points = plan::expand(&topo, spec).map_err(usage)?;
    Store::open(db).map_err(usage)?;
    // The host name the run's facts will record, refused now if it
    // cannot be shown.
    smtlab_store::host_name().map_err(usage)?;
    Ok((topo, points))
}

/// Rank 0 at the job's end: the run stored (dated from its start) with
/// its one sample, and printed; the exit status says whether it verified.
fn record(
    a: &RankArgs,
    launcher: &LauncherRank,
    spec: &RunSpec,
    (topo, points): &(Topology, Vec<Point>),
    report: &RunReport,
    started_at: f64,
    per_node: usize,
) -> anyhow::Result<i32> {
    let (store, run_id, stored) = create_run(&a.db, spec, topo, points, started_at)?;
    let (point_id, point) = &stored[0];
    // Only rank 0's process is known here: no usage rather than a part
    // of it passed off as the whole.
    let sample = smtlab_execute::dsm_sample::dsm_sample(
        point,
        per_node,
        0,
        false,
        started_at,
        report,
        ResourceUsage::default(),
    );
    store
        .add_sample(*point_id, &sample)
        .with_context(|| format!("storing the run in {}", a.db.display()))?;
    store.finish_run(run_id, RunStatus::Complete)?;
    let summaries = point_summaries(&store, run_id, spec.seed)?;
    let text = if a.json {
        serde_json::to_string_pretty(&serde_json::json!({
            "schema": "smtlab.rank/1",
            "run_id": run_id,
            "db": a.db,
            "launcher": launcher.launcher,
            "job": launcher.job,
            "status": sample.status.as_str(),
            "reason": sample.reason,
            "report": report,
        }))? + "\n"
    } else {
        summary(run_id, &a.db, launcher, report, sample.reason.as_deref())
    };
    output::print(&text)?;
    Ok(crate::exit::of_results(run_id, &summaries))
}

/// A launcher aborting the job (mpirun when another rank failed, Ctrl-C)
/// sends SIGTERM or SIGINT before SIGKILL: this rank leaves the
/// rendezvous (so the last rank out removes it), says so in one line and
/// exits as the signal would have ended it (128 + its number). Set up
/// before any thread starts, so that every thread leaves the signals to
/// the one that waits for them.
fn leave_when_stopped(rendezvous: &Rendezvous, rank: usize) -> anyhow::Result<()> {
    let rv = rendezvous.clone();
    smtlab_sys::on_stop_signal(move |sig| {
        rv.leave(rank);
        crate::exit::stderr_line(&format!(
            "smtlab: rank {rank}: stopped by {}",
            smtlab_sys::signal_name(sig)
        ));
        std::process::exit(128 + sig)
    })
    .context("setting up the stop signals")
}

/// The few lines a person reads after a launcher's run.
fn summary(
    run_id: i64,
    db: &std::path::Path,
    launcher: &LauncherRank,
    report: &RunReport,
    reason: Option<&str>,
) -> String {
    let x = report.extras();
    let n = |k: &str| x.get(k).copied().unwrap_or(0.0);
    let verified = match (report.verified, reason) {
        (true, _) => "verified".to_string(),
        (false, Some(r)) => format!("NOT verified: {r}"),
        (false, None) => "NOT verified".to_string(),
    };
    format!(
        "run {run_id} ({}): {} {}, {} ranks ({}): {:.4} s, {verified}\n  messages {}, GETPs {}, \
         locks {}, barriers {}, retransmissions {}\n",
        db.display(),
        report.app,
        report.comm,
        report.ranks,
        launcher.launcher,
        report.wall_s,
        n(dsm::MESSAGES),
        n(dsm::GETP),
        n(dsm::LOCKS),
        n(dsm::BARRIERS),
        n(dsm::RETRANSMISSIONS),
    )
}
