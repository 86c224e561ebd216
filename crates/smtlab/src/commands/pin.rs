//! `smtlab pin -c EXPR [--skip HEXMASK] [--process-only] [--report FILE] -- CMD ARGS...`:
//! run a program with its threads pinned one by one (see `smtlab_execute::pin`).

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use smtlab_execute::pin::{self, PinError, PinMode, PinRequest};
use smtlab_sys as sys;
use smtlab_topology::cpu_expr;
use smtlab_topology::sysfs;
use smtlab_types::CpuSet;

use crate::exit::usage;
use crate::flags;

#[derive(Args, Debug)]
#[command(after_help = "\
The main thread runs on the first CPU of the list; the k-th thread the program creates \
with pthread_create (k from 0) on CPU number k+1, wrapping around (round robin), as \
likwid-pin does. Children inherit the pinning: each exec'd child pins its own main \
thread to the first CPU and counts its threads from 0. When the program ends, a table \
on stderr shows where every thread was pinned and last ran; stdout stays the program's. \
The exit code is the program's (128+N if killed by signal N). OMP_NUM_THREADS is set to \
the number of listed CPUs unless already set (as likwid-pin does).

Examples:
  smtlab pin -c 0,2 -- ./a.out                  main on 0, first thread on 2, next on 0 ...
  smtlab pin -c S0:0-3 -s 0x1 -- ./omp_prog     skip Intel OpenMP's shepherd thread
  smtlab pin -c 1 --process-only -- make -j2    everything on CPU 1")]
pub struct PinArgs {
    /// CPUs in pinning order: a list (0,2-5) or a likwid-style expression
    /// (N:0-3, S0:0-1@S1:0-1, E:N:4:1:2)
    #[arg(short = 'c', long = "cpus", value_name = "EXPR")]
    pub cpus: String,

    /// Hexadecimal mask of created threads not to pin to one CPU: bit i = the
    /// i-th created thread (from 0, the main thread not counted); a skipped
    /// thread may run on any CPU of the list and does not use one up
    #[arg(short = 's', long, value_name = "HEXMASK", value_parser = flags::skip_mask)]
    pub skip: Option<u64>,

    /// Pin the whole process (every thread) to the CPU set instead of thread
    /// by thread
    #[arg(long, conflicts_with = "skip")]
    pub process_only: bool,

    /// Also write the report as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// The program to run and its arguments (after `--`, or after the
    /// options)
    #[arg(
        value_name = "CMD",
        required = true,
        num_args = 1..,
        trailing_var_arg = true
    )]
    pub command: Vec<OsString>,
}

pub fn run(a: PinArgs) -> anyhow::Result<i32> {
    let topo = sysfs::read_live().map_err(|e| anyhow::anyhow!(e))?;
    let cpus = cpu_expr::parse(&a.cpus, &topo).map_err(|e| usage(format!("-c: {e}")))?;
    if cpus.is_empty() {
        return Err(usage(format!("-c `{}`: selects no CPU", a.cpus)));
    }
    if cpus.len() > pin::MAX_LIST {
        return Err(usage(format!(
            "-c `{}`: {} CPUs listed; at most {} are supported",
            a.cpus,
            cpus.len(),
            pin::MAX_LIST
        )));
    }
    let allowed = sys::current_affinity().context("reading this process's CPU affinity")?;
    let set: CpuSet = cpus.iter().copied().collect();
    if let Some(bad) = set.difference(&allowed).first() {
        return Err(usage(format!(
            "-c `{}`: CPU {bad} is not available to this process (allowed: {allowed})",
            a.cpus
        )));
    }
    let skip = a.skip.unwrap_or(0);
    let req = PinRequest {
        command: a.command,
        cpus,
        skip,
        mode: if a.process_only {
            PinMode::Process
        } else {
            PinMode::Threads
        },
    };
    let outcome = match pin::run(&req) {
        Ok(o) => o,
        Err(e @ (PinError::NotFound(_) | PinError::Spawn { .. })) => return Err(usage(e)),
        Err(e) => return Err(e.into()),
    };
    eprint!("{}", pin::render_table(&outcome));
    if let Some(path) = &a.report {
        let json = serde_json::to_string_pretty(&outcome)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    Ok(outcome.exit_code)
}
