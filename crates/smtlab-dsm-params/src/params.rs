//! The DSM's own `--param`s (beside the application's): injected loss and
//! how many ranks share a node's CPUs; the size of a run's shared region.
//! Checked when a run is planned, and again by `smtlab rank` against its
//! launcher's rank count.

use std::collections::BTreeMap;

use smtlab_dsm_apps::AppParams;
use smtlab_msg::Config;

use smtlab_sys::DSM_PAGE;

use crate::error::DsmParamError;

/// The pages an allocation of `words` words takes: whole pages, at least
/// one (every allocation starts a page of its own). The DSM's region lays
/// out its allocations so; the sizing here must agree.
pub fn pages_of(words: usize) -> usize {
    (words * 8).div_ceil(DSM_PAGE).max(1)
}

/// Most injected loss: beyond it retransmission, not the mechanism, is
/// what a run measures.
pub const MAX_LOSS: f64 = 0.5;

/// The DSM's parameters of a run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DsmParams {
    /// Probability that a datagram is dropped on send (benchmarks, tests).
    pub loss: f64,
    /// Ranks per node: 1, each rank on its own CPU(s); 2, two consecutive
    /// ranks share their node's CPUs (the paper's dual-processor nodes).
    pub per_node: usize,
}

impl DsmParams {
    pub fn parse(params: &BTreeMap<String, String>) -> Result<DsmParams, DsmParamError> {
        let mut p = DsmParams {
            loss: 0.0,
            per_node: 1,
        };
        if let Some(v) = params.get("loss") {
            p.loss = v
                .parse::<f64>()
                .ok()
                .filter(|l| (0.0..=MAX_LOSS).contains(l))
                .ok_or_else(|| DsmParamError::Loss {
                    value: v.clone(),
                    most: MAX_LOSS,
                })?;
        }
        if let Some(v) = params.get("per_node") {
            p.per_node = match v.as_str() {
                "1" => 1,
                "2" => 2,
                _ => return Err(DsmParamError::PerNode(v.clone())),
            };
        }
        Ok(p)
    }
}

/// What gave a run its rank count, for the messages about it: the user's
/// `--threads N`, or a launcher's variable (`OMPI_COMM_WORLD_SIZE=N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RanksFrom {
    Threads,
    Var(&'static str),
}

impl RanksFrom {
    fn name(self, ranks: usize) -> String {
        match self {
            RanksFrom::Threads => format!("--threads {ranks}"),
            RanksFrom::Var(var) => format!("{var}={ranks}"),
        }
    }
}

/// A DSM point's parameters parsed: the application's and the DSM's.
/// Parsed once (when a run is planned); each rank count of the plan is
/// then checked against them ([`DsmPointParams::check_ranks`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DsmPointParams {
    pub app: AppParams,
    pub dsm: DsmParams,
}

impl DsmPointParams {
    /// Parse application `app`'s parameters and the DSM's; the message
    /// names the parameter at fault.
    pub fn parse(
        app: &str,
        params: &BTreeMap<String, String>,
    ) -> Result<DsmPointParams, DsmParamError> {
        let app_params = app
            .parse()
            .map_err(|_| DsmParamError::NotAnApp(app.to_string()))?;
        let app =
            AppParams::parse(app_params, params).map_err(|e| DsmParamError::App(e.to_string()))?;
        let dsm = DsmParams::parse(params)?;
        Ok(DsmPointParams { app, dsm })
    }

    /// Check a rank count (which `from` gave) against these parameters:
    /// bounds, whole nodes, the region it makes.
    pub fn check_ranks(&self, ranks: usize, from: RanksFrom) -> Result<(), DsmParamError> {
        let named = from.name(ranks);
        if ranks < 2 {
            return Err(DsmParamError::TooFewRanks { named });
        }
        if ranks > MAX_RANKS {
            return Err(DsmParamError::TooManyRanks {
                named,
                most: MAX_RANKS,
            });
        }
        if ranks % self.dsm.per_node != 0 {
            return Err(DsmParamError::PartNode {
                named,
                per_node: self.dsm.per_node,
            });
        }
        check_region(region_pages(&self.app, ranks), &self.app)
    }
}

/// Check a DSM point's parameters (the application's and the DSM's) and
/// its rank count (which `from` gave) before anything runs; the message
/// names what is wrong.
pub fn check_params(
    app: &str,
    params: &BTreeMap<String, String>,
    ranks: usize,
    from: RanksFrom,
) -> Result<(), DsmParamError> {
    DsmPointParams::parse(app, params)?.check_ranks(ranks, from)
}

/// The pages of the shared region a run of `app` on `ranks` ranks needs:
/// its allocations, each on pages of its own. Address space costs
/// nothing until touched, but a fixed size was either too small for the
/// largest problems the parameters allow or a waste for the rest.
pub fn region_pages(app: &AppParams, ranks: usize) -> usize {
    smtlab_dsm_apps::app_allocations(app, ranks)
        .into_iter()
        .map(pages_of)
        .sum()
}

/// The most pages a region may have: a list of written pages (4 bytes a
/// page: a barrier's arrival and go, a lock's release and grant) must fit
/// one message, with its kind and two words before it.
pub fn max_region_pages() -> usize {
    (Config::new(2).max_message - 16) / 4
}

/// Refuse a region larger than [`max_region_pages`], naming the problem
/// (no size the parameters' ranges allow reaches it: a guard for ranges
/// widened later).
fn check_region(pages: usize, app: &AppParams) -> Result<(), DsmParamError> {
    let most = max_region_pages();
    if pages > most {
        return Err(DsmParamError::RegionTooLarge {
            app: app.to_string(),
            mib: (pages * DSM_PAGE) >> 20,
            most_mib: (most * DSM_PAGE) >> 20,
        });
    }
    Ok(())
}

/// Most ranks of one run (the lock and barrier managers keep a word per
/// rank; the message layer a window per peer).
pub const MAX_RANKS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_dsm_apps::{App, LuParams, SorParams};

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Every value `smtlab list` gives as a parameter's maximum runs: the
    /// region is sized from the application's needs (a fixed 64 MiB
    /// region refused SOR from n=2895 and LU n=4096 in every rank), and
    /// the largest fits the DSM's messages.
    #[test]
    fn the_largest_listed_sizes_are_valid_and_get_their_region() {
        for name in smtlab_dsm_apps::APPS {
            let app: App = name.parse().unwrap();
            for spec in app.params() {
                let v = spec.max.to_string();
                for ranks in [2, 3, MAX_RANKS] {
                    let p = map(&[(spec.name, &v)]);
                    check_params(name, &p, ranks, RanksFrom::Threads).unwrap_or_else(|e| {
                        panic!("{name} {}={v} on {ranks} ranks: {e}", spec.name)
                    });
                }
            }
        }
        // The smallest SOR that no longer fitted 64 MiB, and the largest.
        let sor = |n| AppParams::Sor(SorParams { n, iterations: 1 });
        assert!(region_pages(&sor(2894), 2) <= 16 << 10);
        assert_eq!(region_pages(&sor(2895), 2), 16392);
        assert_eq!(region_pages(&sor(4096), 2), 32801);
        // LU: each rank's blocks on pages of their own.
        let lu = AppParams::Lu(LuParams {
            n: 4096,
            block: 32,
            seed: 1,
        });
        assert_eq!(region_pages(&lu, 2), 32768);
        // 5 ranks: 1 x 5 blocks' columns, 128 of them unevenly dealt,
        // whole pages each (a 32 x 32 block is two pages).
        assert_eq!(region_pages(&lu, 5), 32768);
        // A block of 24 x 24 is 1.125 pages: each rank's blocks are
        // rounded up on their own.
        let lu24 = AppParams::Lu(LuParams {
            n: 48,
            block: 24,
            seed: 1,
        });
        assert_eq!(
            region_pages(&lu24, 2),
            2 * (2 * 24 * 24 * 8usize).div_ceil(4096)
        );
        assert!(region_pages(&sor(4096), 64) <= max_region_pages());
    }

    #[test]
    fn a_region_beyond_one_message_is_refused_naming_the_sizes() {
        let app = AppParams::Sor(SorParams {
            n: 8,
            iterations: 1,
        });
        let most = max_region_pages();
        assert_eq!(check_region(most, &app), Ok(()));
        let e = check_region(most + 1, &app).unwrap_err().to_string();
        assert!(
            e.starts_with("--param: sor n=8 iterations=1 needs a shared region of"),
            "{e}"
        );
        assert!(e.contains("at most 255 MiB"), "{e}");
    }

    #[test]
    fn a_rank_count_is_named_by_what_gave_it() {
        let none = BTreeMap::new();
        let e = check_params("sor", &none, 99_999_999_999, RanksFrom::Threads)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--threads 99999999999: at most 64 ranks");
        let from = RanksFrom::Var("OMPI_COMM_WORLD_SIZE");
        let e = check_params("sor", &none, 99_999_999_999, from)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "OMPI_COMM_WORLD_SIZE=99999999999: at most 64 ranks");
        let e = check_params("sor", &none, 1, from).unwrap_err().to_string();
        assert_eq!(
            e,
            "OMPI_COMM_WORLD_SIZE=1: a DSM application needs at least 2 ranks"
        );
        let e = check_params("sor", &map(&[("per_node", "2")]), 3, from)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("OMPI_COMM_WORLD_SIZE=3: with per_node=2"),
            "{e}"
        );
    }

    /// Planning parses a DSM point's parameters once and checks each rank
    /// count of the sweep against them, with the messages `check_params`
    /// gives.
    #[test]
    fn a_point_parsed_once_checks_each_rank_count() {
        let p = DsmPointParams::parse("sor", &map(&[("per_node", "2"), ("loss", "0.1")])).unwrap();
        assert_eq!((p.dsm.per_node, p.dsm.loss), (2, 0.1));
        assert_eq!(p.check_ranks(4, RanksFrom::Threads), Ok(()));
        let e = p
            .check_ranks(3, RanksFrom::Threads)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--threads 3: with per_node=2"), "{e}");
        let e = DsmPointParams::parse("sor", &map(&[("loss", "2")]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--param loss=2: "), "{e}");
        let e = DsmPointParams::parse("fft", &map(&[]))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--workload fft: not a DSM application (sor, lu, tsp)");
    }

    /// A point's parameters reach its rank processes as planned (JSON),
    /// not as `--param` text: every application's, with the DSM's, comes
    /// back equal.
    #[test]
    fn a_points_parameters_cross_to_its_ranks_as_planned() {
        for (app, kv) in [
            ("sor", &[("n", "64"), ("per_node", "2")][..]),
            ("lu", &[("n", "64"), ("block", "16"), ("loss", "0.05")][..]),
            ("tsp", &[][..]),
        ] {
            let planned = DsmPointParams::parse(app, &map(kv)).unwrap();
            let json = serde_json::to_string(&planned).unwrap();
            let back: DsmPointParams = serde_json::from_str(&json).unwrap();
            assert_eq!(back, planned, "{app}: {json}");
        }
    }
}
