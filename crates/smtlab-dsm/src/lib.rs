//! A home-based software DSM in the manner of JIAJIA, over smtlab-msg's
//! reliable UDP, for the communication study (`--comm`).

mod clock;
mod coherence;
mod core;
mod error;
mod fetch_bench;
mod gather;
mod launcher;
mod managers;
mod mechanism;
mod node;
mod page_table;
mod protocol;
mod rank;
mod registry;
mod rendezvous;
mod report;
mod shared;
mod snapshot;
mod stall;
mod waiting;

pub use error::{
    DirError, GatherError, LauncherError, RankError, RendezvousError, RendezvousSpecError, Stalled,
};
pub use fetch_bench::{fault_floor_ns, page_fetch_ns, udp_ping_pong_ns};
pub use launcher::{
    default_bind, default_rendezvous, from_env as launcher_from_env, path_component, LauncherRank,
};
pub use rank::{run_local_threads, run_rank, RankArgs};
pub use rendezvous::{sweep_stale, Rendezvous, DIR_PREFIX};
pub use report::{RankStats, RunReport, ThreadTime, TimeSplit};
pub use stall::{on_stall, StallHandler, DEFAULT_STALL_TIMEOUT};
// The DSM's parameters live below it, where planning checks them too.
pub use smtlab_dsm_params::{
    check_params, max_region_pages, region_pages, DsmParams, DsmPointParams, RanksFrom, MAX_LOSS,
    MAX_RANKS,
};
