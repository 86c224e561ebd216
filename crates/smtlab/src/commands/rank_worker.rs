//! `smtlab __rank` (hidden): one rank of a DSM point that smtlab started
//! itself (`smtlab_execute::dsm_sample`), everything on the command line.
//! Rank 0 prints the gathered report as one JSON line; an error is one
//! line on stderr and exit 1. Not for people: `smtlab rank` is the
//! launcher's entry.

use std::net::IpAddr;
use std::time::Duration;

use clap::Args;
use smtlab_dsm::{RankArgs, Rendezvous};
use smtlab_types::Comm;

use crate::flags;

#[derive(Args, Debug)]
pub struct RankWorkerArgs {
    #[arg(long, value_parser = flags::dsm_app)]
    pub app: String,
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
    #[arg(long = "param", value_parser = flags::param)]
    pub params: Vec<(String, String)>,
}

pub fn run(a: RankWorkerArgs) -> anyhow::Result<i32> {
    // Ctrl-C reaches the whole foreground group; the parent smtlab decides
    // what happens to the sample and kills the ranks itself.
    let _ = smtlab_sys::ignore_sigint();
    let args = RankArgs {
        app: a.app,
        comm: a.comm,
        params: a.params.into_iter().collect(),
        rank: a.rank,
        ranks: a.ranks,
        rendezvous: a.rendezvous,
        bind: a.bind,
        seed: a.seed,
        meet_timeout: Duration::from_secs_f64(a.meet_timeout),
    };
    if let Some(report) = smtlab_dsm::run_rank(&args)? {
        // Every rank has sent its statistics to rank 0: all have read the
        // rendezvous long ago.
        args.rendezvous.clean_up(args.ranks);
        crate::output::print(&(serde_json::to_string(&report)? + "\n"))?;
    }
    Ok(0)
}
