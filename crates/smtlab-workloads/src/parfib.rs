//! `parfib`: nfib with a sequential threshold, after the nofib parallel
//! benchmark: `nfib n = 1 + nfib (n-1) + nfib (n-2)` for `n >= 2`, else 1
//! (the number of calls the naive recursion makes; nfib 43 = 1,402,817,465).
//!
//! Split: each instance's call tree is cut at set-up into some 1000-2000
//! top-level subtrees (every node above `max(threshold, n - 15)` is expanded;
//! those internal nodes are counted once per instance as the pool's `base`),
//! dealt from the sample's shared queue; a claimed subtree `nfib m` with
//! `m > threshold` is split into `nfib (m-1)` and `nfib (m-2)` on the
//! thread's deque (the other thread of the process may steal), and subtrees
//! at or below the threshold run the sequential recursion. One operation is
//! one such sequential leaf.
//!
//! Verified: the grand total of all workers equals `work * nfib n` by the
//! closed form `nfib n = 2 fib (n+1) - 1` (see `pool.rs`).

use crate::config::ParfibSettings as Settings;
use crate::error::WorkloadError;
use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, Workload, WorkloadInfo,
};
use crate::{resolve_checked, WorkloadConfig};

use super::pool::{self, Job};

/// Levels of the call tree expanded into top-level tasks: φ^15 ≈ 1364 of
/// them, so the last one dealt is under a thousandth of an instance.
const TOP_DEPTH: u32 = 15;
/// Largest `n` whose nfib fits in 64 bits.
const MAX_N: u64 = 90;

pub struct Parfib;

// The sequential recursion, exactly `nfib n` calls' worth of additions.
// The recursion is written as a loop over its second call (`n-2`, with an
// accumulator) and inlined four levels deep by hand, which is what gcc -O2
// does to the plain C function; rustc does not, and would be twice as slow
// as the C reference. Calls are never shared between branches (no
// memoisation): the work grows as nfib n.
//
/// One level: `nfib n` as a loop over `n, n-2, n-4, ...` adding `1 + inner
/// (n-1)` each time. A macro rather than a function taking `inner`, so each
/// level is a direct call LLVM inlines (a function pointer was not inlined
/// and ran at half the C speed).
macro_rules! nfib_level {
    ($n:expr, $inner:ident) => {{
        let (mut n, mut acc) = ($n, 0u64);
        loop {
            if n < 2 {
                break acc + 1;
            }
            acc += 1 + $inner(n - 1);
            n -= 2;
        }
    }};
}

/// `nfib n` by the recursion (see above).
#[inline(never)]
pub fn nfib(n: u32) -> u64 {
    nfib_level!(n, nfib1)
}

#[inline(always)]
fn nfib1(n: u32) -> u64 {
    nfib_level!(n, nfib2)
}
#[inline(always)]
fn nfib2(n: u32) -> u64 {
    nfib_level!(n, nfib3)
}
#[inline(always)]
fn nfib3(n: u32) -> u64 {
    nfib_level!(n, nfib)
}

/// `nfib n` in closed form, `2 fib (n+1) - 1`, computed iteratively.
pub fn nfib_closed(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64); // fib 0, fib 1
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    // b = fib (n+1)
    2 * b - 1
}

struct ParfibJob {
    n: u32,
    threshold: u32,
    /// Top-level subtrees (their `m`), in call-tree order.
    tops: Vec<u32>,
    /// Calls above the top-level subtrees, counted once per instance.
    internal: u64,
}

impl ParfibJob {
    fn new(n: u32, threshold: u32) -> ParfibJob {
        let cutoff = threshold.max(n.saturating_sub(TOP_DEPTH)).max(1);
        let (mut tops, mut internal, mut stack) = (Vec::new(), 0u64, vec![n]);
        while let Some(m) = stack.pop() {
            if m > cutoff {
                internal += 1;
                stack.push(m - 2);
                stack.push(m - 1);
            } else {
                tops.push(m);
            }
        }
        ParfibJob {
            n,
            threshold,
            tops,
            internal,
        }
    }
}

impl Job for ParfibJob {
    type Task = u32;
    const NAME: &'static str = "parfib";

    fn tasks_per_instance(&self) -> u64 {
        self.tops.len() as u64
    }
    fn top(&self, t: u64) -> u32 {
        self.tops[t as usize]
    }
    fn splittable(&self, m: &u32) -> bool {
        *m > self.threshold && *m >= 2
    }
    fn split(&self, m: u32) -> (u32, u32, u64) {
        // Keep the larger half (depth first); offer the other to thieves.
        (m - 1, m - 2, 1)
    }
    fn leaf(&self, m: u32) -> u64 {
        nfib(m)
    }
    fn base(&self) -> u64 {
        self.internal
    }
    fn expected(&self) -> u64 {
        nfib_closed(self.n)
    }
    fn describe(&self) -> String {
        format!("nfib({}) with threshold {}", self.n, self.threshold)
    }
}

impl Workload for Parfib {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "parfib",
            summary: "nfib with a sequential threshold (nofib parallel parfib): irregular \
                      divide and conquer, a work-stealing pool per process",
            params: vec![
                ParamSpec {
                    name: "n",
                    default: "45",
                    help: "compute nfib(n) per instance (45: 3,672,623,805 calls, about 1.0 s on \
                           one Zen 5 core, 1.8-2 s on a 2.8 GHz Ice Lake core; each step down \
                           divides by 1.618)",
                },
                ParamSpec {
                    name: "threshold",
                    default: "24",
                    help: "subtrees nfib(m) with m <= threshold run sequentially \
                           (nfib(24) = 75,025 calls, some 40 us)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 corrupts the result, to check that wrong results fail",
                },
            ],
            operation: "one sequential nfib(m) leaf, m <= threshold",
            verification: "the sum over all workers equals work x nfib(n) by the closed form \
                           2 fib(n+1) - 1",
            ..WorkloadInfo::queued(TimeMetric::throughput("leaves/s"))
        }
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Parfib(settings(&params)?))
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Parfib(Settings {
            n,
            threshold,
            corrupt,
        }) = *config
        else {
            return Err(config.not_for("parfib"));
        };
        pool::setup(ParfibJob::new(n, threshold), ctx, corrupt)
    }
}

/// The parameters (defaults filled in), range-checked.
fn settings(params: &Params) -> Result<Settings, WorkloadError> {
    let n = param_u64(params, "n")?;
    if n > MAX_N {
        return Err(WorkloadError::param(
            "n",
            n,
            format!("at most {MAX_N} (nfib must fit in 64 bits)"),
        ));
    }
    let threshold = param_u64(params, "threshold")?;
    if threshold == 0 || threshold > MAX_N {
        return Err(WorkloadError::param(
            "threshold",
            threshold,
            format!("expected 1..={MAX_N}"),
        ));
    }
    let corrupt = crate::params::param_corrupt(params)?;
    Ok(Settings {
        n: n as u32,
        threshold: threshold as u32,
        corrupt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::run_by_hand;

    fn plain(n: u32) -> u64 {
        if n < 2 {
            1
        } else {
            1 + plain(n - 1) + plain(n - 2)
        }
    }

    #[test]
    fn nfib_known_values_and_closed_form() {
        assert_eq!(nfib_closed(43), 1_402_817_465);
        for n in 0..=25 {
            assert_eq!(nfib(n), plain(n), "nfib({n})");
            assert_eq!(nfib_closed(n), plain(n), "closed form at {n}");
        }
        assert_eq!(nfib_closed(MAX_N as u32), 2 * 4_660_046_610_375_530_309 - 1);
    }

    #[test]
    fn top_level_tasks_cover_the_call_tree() {
        for (n, t) in [(30, 10), (30, 20), (5, 10), (0, 1), (25, 3)] {
            let job = ParfibJob::new(n, t);
            let sum: u64 = job.tops.iter().map(|&m| plain(m)).sum::<u64>() + job.internal;
            assert_eq!(sum, plain(n), "n={n} threshold={t}");
        }
    }

    #[test]
    fn two_threads_by_hand_verify() {
        let r = run_by_hand(&Parfib, &[("n", "27"), ("threshold", "10")], 2, 3).unwrap();
        assert_eq!(r, Ok(()));
        let r = run_by_hand(&Parfib, &[("n", "20"), ("threshold", "30")], 2, 1).unwrap();
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn corrupt_fails_with_a_reason() {
        let r = run_by_hand(&Parfib, &[("n", "22"), ("corrupt", "1")], 2, 1).unwrap();
        let e = r.unwrap_err();
        assert!(e.contains("wrong result") && e.contains("nfib(22)"), "{e}");
    }

    #[test]
    fn bad_params_name_the_parameter() {
        for (k, v) in [
            ("n", "x"),
            ("n", "91"),
            ("threshold", "0"),
            ("corrupt", "2"),
        ] {
            let e = run_by_hand(&Parfib, &[(k, v)], 1, 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("--param {k}")), "{e}");
        }
        let e = run_by_hand(&Parfib, &[("m", "1")], 1, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`m`"), "{e}");
    }
}
