//! `sumeuler`: the sum of Euler's totient over `[0..n]` by the naive gcd
//! count, after the nofib parallel benchmark: `euler k = length (filter
//! (relprime k) [1..k-1])` with Euclid's remainder gcd on 32-bit integers,
//! so `euler 0 = euler 1 = 0` and sumEuler [0..8000] = 19,455,781. The cost
//! of `euler k` grows with `k`: the work is irregular by design.
//!
//! Split: the range is cut into chunks of `chunk` values, dealt from the
//! sample's shared queue largest-`k`-first (so the last tasks dealt are the
//! cheapest and no worker is left with a big one at the end); inside a
//! process a claimed chunk is halved on the thread's deque down to single
//! values, which the process's other threads may steal. One operation is
//! one `euler k`.
//!
//! Verified: the grand total of all workers equals `work` times the sum of
//! a totient sieve computed at set-up (see `pool.rs`).

use crate::config::SumeulerSettings as Settings;
use crate::error::WorkloadError;
use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, Workload, WorkloadInfo,
};
use crate::{resolve_checked, WorkloadConfig};

use super::pool::{self, Job};

pub struct SumEuler;

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// `euler k` by counting `1 <= j < k` with `gcd(k, j) == 1`.
pub fn euler(k: u32) -> u64 {
    let mut c = 0u64;
    for j in 1..k {
        c += u64::from(gcd(k, j) == 1);
    }
    c
}

/// `sumEuler [0..n]` by a totient sieve (with the naive count's
/// `euler 1 = 0`): the independent check.
pub fn sum_euler_sieve(n: u32) -> u64 {
    let n = n as usize;
    let mut phi: Vec<u32> = (0..=n as u32).collect();
    for p in 2..=n {
        if phi[p] == p as u32 {
            // p is prime: every multiple loses the fraction 1/p.
            for m in (p..=n).step_by(p) {
                phi[m] -= phi[m] / p as u32;
            }
        }
    }
    phi.iter().skip(2).map(|&v| u64::from(v)).sum()
}

struct SumEulerJob {
    n: u32,
    chunk: u32,
    chunks: u64,
}

impl Job for SumEulerJob {
    /// Values `lo..hi`.
    type Task = (u32, u32);
    const NAME: &'static str = "sumeuler";

    fn tasks_per_instance(&self) -> u64 {
        self.chunks
    }
    fn top(&self, t: u64) -> (u32, u32) {
        // Largest k first.
        let c = (self.chunks - 1 - t) as u32;
        let lo = c * self.chunk;
        (lo, lo.saturating_add(self.chunk).min(self.n + 1))
    }
    fn splittable(&self, r: &(u32, u32)) -> bool {
        r.1 - r.0 > 1
    }
    fn split(&self, (lo, hi): (u32, u32)) -> ((u32, u32), (u32, u32), u64) {
        // Offer the costlier upper half to thieves.
        let mid = lo + (hi - lo) / 2;
        ((lo, mid), (mid, hi), 0)
    }
    fn leaf(&self, (lo, _): (u32, u32)) -> u64 {
        euler(lo)
    }
    fn expected(&self) -> u64 {
        sum_euler_sieve(self.n)
    }
    fn describe(&self) -> String {
        format!("sumEuler [0..{}] in chunks of {}", self.n, self.chunk)
    }
}

impl Workload for SumEuler {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "sumeuler",
            summary: "sum of Euler's totient by the naive gcd count (nofib parallel \
                      sumeuler): irregular integer division work, dealt in chunks",
            params: vec![
                ParamSpec {
                    name: "n",
                    default: "10000",
                    help: "sum euler k for k in [0..n] (10000: about 1.25 s on one Zen 5 core, \
                           1.5-1.9 s on a 2.8 GHz Ice Lake core; \
                           sumEuler [0..8000] = 19,455,781)",
                },
                ParamSpec {
                    name: "chunk",
                    default: "100",
                    help: "values per top-level task dealt from the shared queue",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 corrupts the result, to check that wrong results fail",
                },
            ],
            operation: "one euler k (k gcds)",
            verification: "the sum over all workers equals work x sumEuler [0..n] from a \
                           totient sieve",
            ..WorkloadInfo::queued(TimeMetric::throughput("values/s"))
        }
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Sumeuler(settings(&params)?))
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Sumeuler(Settings { n, chunk, corrupt }) = *config else {
            return Err(config.not_for("sumeuler"));
        };
        let chunks = (u64::from(n) + 1).div_ceil(u64::from(chunk));
        pool::setup(SumEulerJob { n, chunk, chunks }, ctx, corrupt)
    }
}

/// The parameters (defaults filled in), range-checked.
fn settings(params: &Params) -> Result<Settings, WorkloadError> {
    let n = param_u64(params, "n")?;
    // The sum grows as 0.3 n^2: 10^8 keeps it (and the sieve) small.
    if n > 100_000_000 {
        return Err(WorkloadError::param("n", n, "at most 100000000"));
    }
    let chunk = param_u64(params, "chunk")?;
    if chunk == 0 || chunk > u64::from(u32::MAX) {
        return Err(WorkloadError::param(
            "chunk",
            chunk,
            format!("expected 1..={}", u32::MAX),
        ));
    }
    let corrupt = crate::params::param_corrupt(params)?;
    Ok(Settings {
        n: n as u32,
        chunk: chunk as u32,
        corrupt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::run_by_hand;

    #[test]
    fn sumeuler_known_values() {
        assert_eq!(euler(0), 0);
        assert_eq!(euler(1), 0);
        assert_eq!(euler(2), 1);
        assert_eq!(euler(12), 4);
        for n in [0u32, 1, 2, 3, 10, 97, 300] {
            let brute: u64 = (0..=n).map(euler).sum();
            assert_eq!(sum_euler_sieve(n), brute, "n={n}");
        }
        assert_eq!(sum_euler_sieve(8000), 19_455_781);
    }

    #[test]
    fn two_threads_by_hand_verify() {
        for (n, chunk) in [("600", "7"), ("10", "100"), ("0", "1")] {
            let r = run_by_hand(&SumEuler, &[("n", n), ("chunk", chunk)], 2, 2).unwrap();
            assert_eq!(r, Ok(()), "n={n} chunk={chunk}");
        }
    }

    #[test]
    fn corrupt_fails_with_a_reason() {
        let r = run_by_hand(&SumEuler, &[("n", "300"), ("corrupt", "1")], 2, 1).unwrap();
        let e = r.unwrap_err();
        assert!(e.contains("wrong result") && e.contains("sumEuler"), "{e}");
    }

    #[test]
    fn bad_params_name_the_parameter() {
        for (k, v) in [("n", "-1"), ("chunk", "0"), ("corrupt", "x")] {
            let e = run_by_hand(&SumEuler, &[(k, v)], 1, 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("--param {k}")), "{e}");
        }
    }
}
