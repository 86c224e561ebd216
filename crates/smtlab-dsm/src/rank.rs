//! One rank's run: bind the UDP socket, meet the other ranks, start the
//! mechanism over a region sized for the application, run the application
//! over the DSM between two barriers (the measured parallel section),
//! gather every rank's statistics at rank 0, and verify the result there
//! against a sequential run of the same input. Rank 0 removes the
//! rendezvous once every rank is past the first barrier; a rank that fails
//! leaves it ([`Rendezvous::leave`]).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use smtlab_dsm_apps::Shared;
use smtlab_dsm_params::{region_pages, DsmPointParams};
use smtlab_msg::{Config, Endpoint, Fault, UdpTransport};
use smtlab_types::Comm;

use crate::core::Core;
use crate::error::RankError;
use crate::node::{Node, Threads};
use crate::rendezvous::Rendezvous;
use crate::report::{RankStats, RunReport, ThreadTime, TimeSplit};
use crate::snapshot::Snapshot;

/// How long the end of a run may take (statistics to rank 0, goodbyes).
const FINISH_LIMIT: Duration = Duration::from_secs(30);

/// What one rank needs to run.
#[derive(Debug, Clone)]
pub struct RankArgs {
    pub comm: Comm,
    /// The application (with its parameters) and the DSM's parameters,
    /// parsed and checked once where the user gave them: a rank reads no
    /// `--param` text.
    pub params: DsmPointParams,
    pub rank: usize,
    pub ranks: usize,
    pub rendezvous: Rendezvous,
    /// The address this rank's UDP socket binds to and tells the others
    /// (127.0.0.1 on one machine; the node's address on a cluster).
    pub bind: IpAddr,
    /// Seeds the injected loss.
    pub seed: u64,
    /// How long to wait for the other ranks at the rendezvous.
    pub meet_timeout: Duration,
    /// How long a wait for another rank may last before this one gives up
    /// ([`crate::on_stall`]); [`crate::DEFAULT_STALL_TIMEOUT`] unless a
    /// run says.
    pub stall_timeout: Duration,
}

/// Run one rank on the calling thread; rank 0 returns the gathered
/// report, the others `None`. A rank that fails leaves the rendezvous.
pub fn run_rank(args: &RankArgs) -> Result<Option<RunReport>, RankError> {
    let result = run_one(args);
    if result.is_err() {
        args.rendezvous.leave(args.rank);
    }
    result
}

fn run_one(args: &RankArgs) -> Result<Option<RunReport>, RankError> {
    let fail = |what: String| RankError::Failed {
        rank: args.rank,
        what,
    };
    let app_params = args.params.app;
    let dsm = args.params.dsm;
    let pages = region_pages(&app_params, args.ranks);
    let (node, threads) = start_node(args, dsm.loss, pages)?;

    // Everybody up; then the measured section, ended by a barrier so the
    // last rank's writes are home before rank 0 reads the result.
    node.barrier();
    // Past the first barrier every rank has read the rendezvous: nothing
    // of it need outlive the run, however the run ends from here.
    if args.rank == 0 {
        args.rendezvous.clean_up(args.ranks);
    }
    let before = node.snapshot();
    let start_s = smtlab_sys::monotonic_s();
    let outcome = smtlab_dsm_apps::run_app(&app_params, &*node);
    // The section ended where the application said (before rank 0 read
    // the whole result to verify it), else here.
    let (end_s, after) = node
        .take_section_end()
        .unwrap_or_else(|| (smtlab_sys::monotonic_s(), node.snapshot()));
    node.barrier();

    let stats = rank_stats(args.rank, outcome.work, start_s, end_s, &before, &after);
    let json = serde_json::to_vec(&stats).expect("statistics serialise");
    let gathered = node.finish(&json, FINISH_LIMIT);
    node.stop(threads);
    let gathered = gathered.map_err(|e| fail(e.to_string()))?;
    if args.rank != 0 {
        return Ok(None);
    }

    let mut per_rank = Vec::with_capacity(args.ranks);
    for (r, bytes) in gathered.iter().enumerate() {
        let s: RankStats = serde_json::from_slice(bytes)
            .map_err(|e| fail(format!("rank {r}'s statistics: {e}")))?;
        per_rank.push(s);
    }
    let sequential = smtlab_dsm_apps::sequential_app(&app_params);
    let verdict = smtlab_dsm_apps::verify_app(&app_params, &outcome, &sequential);
    let first = per_rank
        .iter()
        .map(|r| r.start_s)
        .fold(f64::INFINITY, f64::min);
    let last = per_rank
        .iter()
        .map(|r| r.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    Ok(Some(RunReport {
        app: app_params.app().to_string(),
        comm: args.comm,
        ranks: args.ranks,
        wall_s: last - first,
        verified: verdict.is_ok(),
        verify_detail: match verdict {
            Ok(()) => format!("matches the sequential run ({})", sequential.detail),
            Err(why) => why.to_string(),
        },
        checksum: outcome.checksum,
        work: per_rank.iter().map(|r| r.work).sum(),
        per_rank,
    }))
}

/// Bind, meet the other ranks, build the node over a region of `pages`
/// pages and start its mechanism on the calling thread (which becomes the
/// rank's computing thread).
pub(crate) fn start_node(
    args: &RankArgs,
    loss: f64,
    pages: usize,
) -> Result<(Arc<Node>, Threads), RankError> {
    let fail = |what: String| RankError::Failed {
        rank: args.rank,
        what,
    };
    let net = UdpTransport::bind(SocketAddr::new(args.bind, 0))
        .map_err(|e| fail(format!("binding a UDP socket on {}: {e}", args.bind)))?;
    let mine = net
        .local_addr()
        .map_err(|e| fail(format!("the UDP socket's address: {e}")))?;
    let peers = args
        .rendezvous
        .exchange(args.rank, args.ranks, mine, args.meet_timeout)
        .map_err(|e| fail(e.to_string()))?;
    let mut config = Config::new(args.ranks);
    if loss > 0.0 {
        config.fault = Fault {
            loss,
            seed: args.seed ^ (args.rank as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            ..Fault::none()
        };
    }
    let ep = Endpoint::new(args.rank, config).map_err(|e| fail(e.to_string()))?;
    let mut core = Core::new(
        args.rank,
        args.ranks,
        pages,
        ep,
        net,
        args.comm == Comm::Thr3,
    );
    core.set_peers(peers);
    let node = Arc::new(
        Node::new(
            args.rank,
            args.ranks,
            args.comm,
            pages,
            core,
            args.stall_timeout,
            Some(args.rendezvous.clone()),
        )
        .map_err(|e| fail(format!("the DSM region of {pages} pages: {e}")))?,
    );
    let threads = node
        .start()
        .map_err(|e| fail(format!("starting {}: {e}", args.comm)))?;
    Ok((node, threads))
}

/// A rank's statistics over its section, from two snapshots.
fn rank_stats(
    rank: usize,
    work: u64,
    start_s: f64,
    end_s: f64,
    a: &Snapshot,
    b: &Snapshot,
) -> RankStats {
    let s = |ns: u64| ns as f64 * 1e-9;
    let fault_s = s(b.fault_ns - a.fault_ns);
    let sync_s = s(b.sync_ns - a.sync_ns);
    let serve_s = s(b.serve_ns - a.serve_ns);
    let wait_s = s(b.wait_ns - a.wait_ns);
    let section = end_s - start_s;
    let mut threads = vec![ThreadTime {
        name: "main".into(),
        cpu_s: b.main_cpu_s - a.main_cpu_s,
    }];
    for (x, y) in a.threads.iter().zip(&b.threads) {
        threads.push(ThreadTime {
            name: y.name.clone(),
            cpu_s: y.cpu_s - x.cpu_s,
        });
    }
    let (ca, cb) = (&a.counters, &b.counters);
    RankStats {
        rank,
        pid: std::process::id(),
        work,
        start_s,
        end_s,
        messages_sent: cb.messages_sent - ca.messages_sent,
        bytes_sent: cb.bytes_sent - ca.bytes_sent,
        messages_received: cb.messages_received - ca.messages_received,
        bytes_received: cb.bytes_received - ca.bytes_received,
        retransmissions: cb.retransmissions - ca.retransmissions,
        duplicates_dropped: cb.duplicates_dropped - ca.duplicates_dropped,
        injected_drops: cb.injected_drops - ca.injected_drops,
        getp: b.getp - a.getp,
        diffs: b.diffs - a.diffs,
        locks: b.locks - a.locks,
        barriers: b.barriers - a.barriers,
        served: b.served - a.served,
        time: TimeSplit {
            compute_s: (section - fault_s - sync_s - serve_s).max(0.0),
            fault_s,
            sync_s,
            serve_s,
            wait_s,
        },
        threads,
    }
}

/// Every rank of a run as threads of this process (tests, and the
/// benchmark's page fetches): rank 0's report.
pub fn run_local_threads(args: &RankArgs) -> Result<RunReport, RankError> {
    let dir = std::env::temp_dir().join(format!(
        "smtlab-dsm-{}-{}",
        std::process::id(),
        crate::clock::now_ns()
    ));
    let rendezvous = Rendezvous::Dir(dir.clone());
    let handles: Vec<_> = (0..args.ranks)
        .map(|rank| {
            let a = RankArgs {
                rank,
                rendezvous: rendezvous.clone(),
                ..args.clone()
            };
            std::thread::spawn(move || run_rank(&a))
        })
        .collect();
    let mut report = None;
    let mut error = None;
    for h in handles {
        match h.join() {
            Ok(Ok(Some(r))) => report = Some(r),
            Ok(Ok(None)) => {}
            Ok(Err(e)) => error = error.or(Some(e)),
            Err(payload) => {
                // A stalled rank panics with its line here (no handler is
                // set for ranks as threads): keep it.
                let said = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                error = error.or(Some(RankError::Failed {
                    rank: usize::MAX,
                    what: format!("a rank panicked: {said}"),
                }))
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    match (error, report) {
        (Some(e), _) => Err(e),
        (None, Some(r)) => Ok(r),
        (None, None) => Err(RankError::Failed {
            rank: 0,
            what: "no report".into(),
        }),
    }
}
