//! `smtlab __rank` (hidden): one rank of a DSM point that smtlab started
//! itself (`smtlab_execute::dsm_sample`), everything on the command line,
//! its parameters as the run planned them (`--planned`, JSON).
//! Rank 0 prints the gathered report as one JSON line; an error is one
//! line on stderr and exit 1, and so is a rank left waiting for a silent
//! one ([`give_up`]). Not for people: `smtlab rank` is the launcher's
//! entry.

use std::net::IpAddr;
use std::time::Duration;

use clap::Args;
use smtlab_dsm::{DsmPointParams, RankArgs, Rendezvous, Stalled};
use smtlab_types::Comm;

use crate::flags;

/// Set to a rank's number, that rank panics as it starts: the one way to
/// crash a rank on purpose, for the tests of what a crashed rank's sample
/// says (nothing a user gives reaches a panic).
const TEST_PANIC: &str = "SMTLAB_RANK_TEST_PANIC";

#[derive(Args, Debug)]
pub struct RankWorkerArgs {
    #[arg(long, value_parser = flags::parsed::<Comm>)]
    pub comm: Comm,
    #[arg(long)]
    pub rank: usize,
    #[arg(long)]
    pub ranks: usize,
    #[arg(long, value_parser = flags::parsed::<Rendezvous>)]
    pub rendezvous: Rendezvous,
    #[arg(long, value_parser = flags::bind_ip)]
    pub bind: IpAddr,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value = "60s", value_parser = flags::seconds("--meet-timeout"))]
    pub meet_timeout: f64,
    #[arg(long, default_value = "120s", value_parser = flags::seconds("--stall-timeout"))]
    pub stall_timeout: f64,
    /// The point's application and DSM parameters as the run planned
    /// them (JSON of `DsmPointParams`): the parent parsed the user's
    /// `--param`s once; a rank reads no parameter text.
    #[arg(long, value_parser = planned_params)]
    pub planned: DsmPointParams,
}

/// `--planned`: what the parent serialised (never typed by a person).
fn planned_params(s: &str) -> Result<DsmPointParams, String> {
    serde_json::from_str(s).map_err(|e| format!("not the planned parameters of a DSM point: {e}"))
}

pub fn run(a: RankWorkerArgs) -> anyhow::Result<i32> {
    // Ctrl-C reaches the whole foreground group; the parent smtlab decides
    // what happens to the sample and kills the ranks itself.
    let _ = smtlab_sys::ignore_sigint();
    smtlab_dsm::on_stall(give_up);
    if std::env::var(TEST_PANIC).is_ok_and(|r| r == a.rank.to_string()) {
        panic!("rank {} panics as {TEST_PANIC} asks", a.rank);
    }
    let args = RankArgs {
        comm: a.comm,
        params: a.planned,
        rank: a.rank,
        ranks: a.ranks,
        rendezvous: a.rendezvous,
        bind: a.bind,
        seed: a.seed,
        meet_timeout: Duration::from_secs_f64(a.meet_timeout),
        stall_timeout: Duration::from_secs_f64(a.stall_timeout),
    };
    if let Some(report) = smtlab_dsm::run_rank(&args)? {
        crate::output::print(&(serde_json::to_string(&report)? + "\n"))?;
    }
    Ok(0)
}

/// A rank that waited too long for another: one line naming the silent
/// rank and what this one waited for, exit 1 (the DSM has left the
/// rendezvous already). Never a panic: the wait may be in the fault
/// handler, which a panic cannot unwind out of, and a backtrace says
/// nothing a user can act on.
pub(crate) fn give_up(stalled: &Stalled) -> ! {
    crate::exit::stderr_line(&format!("smtlab: {stalled}"));
    std::process::exit(1)
}
