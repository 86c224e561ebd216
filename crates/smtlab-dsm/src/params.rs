//! The DSM's own `--param`s (beside the application's): injected loss and
//! how many ranks share a node's CPUs. Checked when a run is planned.

use std::collections::BTreeMap;

use smtlab_dsm_apps::AppParams;

/// Most injected loss: beyond it retransmission, not the mechanism, is
/// what a run measures.
pub const MAX_LOSS: f64 = 0.5;

/// The DSM's parameters of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DsmParams {
    /// Probability that a datagram is dropped on send (benchmarks, tests).
    pub loss: f64,
    /// Ranks per node: 1, each rank on its own CPU(s); 2, two consecutive
    /// ranks share their node's CPUs (the paper's dual-processor nodes).
    pub per_node: usize,
}

impl DsmParams {
    pub fn parse(params: &BTreeMap<String, String>) -> Result<DsmParams, String> {
        let mut p = DsmParams {
            loss: 0.0,
            per_node: 1,
        };
        if let Some(v) = params.get("loss") {
            p.loss = v
                .parse::<f64>()
                .ok()
                .filter(|l| (0.0..=MAX_LOSS).contains(l))
                .ok_or_else(|| {
                    format!("--param loss={v}: expected a fraction from 0 to {MAX_LOSS}")
                })?;
        }
        if let Some(v) = params.get("per_node") {
            p.per_node = match v.as_str() {
                "1" => 1,
                "2" => 2,
                _ => return Err(format!("--param per_node={v}: expected 1 or 2")),
            };
        }
        Ok(p)
    }
}

/// Check a DSM point's parameters (the application's and the DSM's) and
/// its rank count before anything runs; the message names what is wrong.
pub fn check_params(
    app: &str,
    params: &BTreeMap<String, String>,
    ranks: usize,
) -> Result<(), String> {
    let app_params = app
        .parse()
        .map_err(|_| format!("--workload {app}: not a DSM application (sor, lu, tsp)"))?;
    AppParams::parse(app_params, params).map_err(|e| e.to_string())?;
    let dsm = DsmParams::parse(params)?;
    if ranks < 2 {
        return Err(format!(
            "--threads {ranks}: a DSM application needs at least 2 ranks"
        ));
    }
    if ranks > MAX_RANKS {
        return Err(format!("--threads {ranks}: at most {MAX_RANKS} ranks"));
    }
    if ranks % dsm.per_node != 0 {
        return Err(format!(
            "--threads {ranks}: with per_node={} the ranks must fill whole nodes (a multiple of {})",
            dsm.per_node, dsm.per_node
        ));
    }
    Ok(())
}

/// Most ranks of one run (the lock and barrier managers keep a word per
/// rank; the message layer a window per peer).
pub const MAX_RANKS: usize = 64;
