//! `latency`: load-to-use latency by a pointer chase through a random
//! cyclic permutation of cache lines, as lmbench's `lat_mem_rd` and
//! likwid-bench's latency kernels do.
//!
//! The chase array holds one "next" pointer per 64-byte line; the lines
//! are linked in the order of a random single-cycle permutation (Sattolo's
//! algorithm, seeded per worker), so every load depends on the previous one
//! and hardware prefetchers, which follow strides, cannot guess the next
//! line. Sweeping `size` from 16 KiB to well beyond the last-level cache
//! shows L1, L2, L3 and DRAM latency as steps. At sizes beyond the TLB's
//! reach the figure includes page-walk cost, as lat_mem_rd's does.
//!
//! The array is built and first touched in [`ProcessState::worker`] on the
//! worker's pinned thread (its memory on its NUMA node); each worker has its
//! own. "Next" is stored as the index of the next line's first word, so one
//! load is one `mov` with a base+index*8 address: no shift or multiply is
//! added to the dependency chain (an extra cycle would inflate L1 latency
//! by a fifth).
//!
//! Verification. At set-up, the walk from line 0 must return to line 0 after
//! exactly `lines` steps and not before (the permutation is one cycle over
//! every line); that walk also records the order in which lines are
//! visited. After the window the worker's position must be exactly the
//! line visited after `ops * 1024` loads from line 0, `order[ops*1024 mod
//! lines]`: this checks both that the reported number of loads was made
//! and that they followed the array. It cannot tell *when* the loads were
//! made (a chase done faster than possible would need a bug that skips
//! loads yet lands on the right line, which the dependent chain rules out).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::LatencySettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::params::{param_bytes, param_corrupt};
use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult,
    WorkerSlot, WorkerState, Workload, WorkloadInfo,
};
use crate::{resolve_checked, WorkloadConfig};

/// Dependent loads per operation: about a microsecond in L1, 100 us in
/// DRAM, so a `step` stays bounded at every size.
pub const LOADS_PER_OP: u64 = 1024;
/// 8-byte words per 64-byte line.
const WORDS: usize = 8;
const LINE_BYTES: u64 = 64;

pub struct Latency;

fn seed_of(seed: u64, worker: usize) -> u64 {
    seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A random cyclic permutation of `0..n` (Sattolo 1986): `next[i]` is the
/// successor of `i`, and following it from any start visits all `n`
/// elements before returning. Unlike Fisher-Yates, `j` is drawn from
/// `0..i` (never `i` itself), which is what makes the result one cycle.
pub fn sattolo(n: usize, seed: u64) -> Vec<u32> {
    assert!(n <= u32::MAX as usize);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut next: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.random_range(0..i);
        next.swap(i, j);
    }
    next
}

/// Follow `next` from 0: the order lines are visited in, or what is wrong
/// if it is not a single cycle over all of them.
fn cycle_order(n: usize, mut next: impl FnMut(usize) -> usize) -> Result<Vec<u32>, String> {
    let mut order = Vec::with_capacity(n);
    let mut p = 0usize;
    for step in 0..n {
        if step > 0 && p == 0 {
            return Err(format!(
                "the chase returns to line 0 after {step} steps, not {n}: not a single cycle"
            ));
        }
        if p >= n {
            return Err(format!(
                "the chase leaves the array at step {step}: line {p}"
            ));
        }
        order.push(p as u32);
        p = next(p);
    }
    if p != 0 {
        return Err(format!(
            "the chase is at line {p}, not 0, after {n} steps: not a single cycle"
        ));
    }
    Ok(order)
}

impl Workload for Latency {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "latency",
            summary: "pointer chase through a random cyclic permutation of cache lines: \
                      load-to-use latency per worker",
            params: vec![
                ParamSpec {
                    name: "size",
                    // 8x a 32 MiB last-level cache: a random line is in the
                    // LLC at most 1 time in 8, so the figure is DRAM's (at
                    // 64 MiB up to half the loads could still hit it).
                    default: "256MiB",
                    help: "bytes of the chase array per worker, one pointer per 64-byte line \
                           (K/M/G suffixes are binary); a multiple of 64, at least 128. \
                           Sweep from 16K (L1) to beyond the last-level cache",
                },
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "seed of every worker's permutation (mixed with its number)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 moves the final position, to check that wrong results \
                           fail",
                },
            ],
            operation: "1024 dependent loads, each from a random 64-byte line",
            verification: "at set-up the chase is one cycle over every line; after the window \
                           the final position equals the line visited ops x 1024 loads after \
                           line 0 (recorded at set-up)",
            ..WorkloadInfo::timed(TimeMetric::Latency {
                name: "latency",
                unit: "ns",
                scale: 1e9 / LOADS_PER_OP as f64,
            })
        }
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Latency(settings(&params)?))
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        _ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Latency(Settings {
            lines,
            seed,
            corrupt,
        }) = *config
        else {
            return Err(config.not_for("latency"));
        };
        Ok(Box::new(LatencyProcess {
            lines,
            seed,
            corrupt,
            problems: Arc::new(Mutex::new(BTreeMap::new())),
        }))
    }
}

/// The parameters (defaults filled in), range-checked.
fn settings(params: &Params) -> Result<Settings, WorkloadError> {
    let size = param_bytes(params, "size")?;
    if size < 2 * LINE_BYTES || size % LINE_BYTES != 0 {
        return Err(WorkloadError::param(
            "size",
            &params["size"],
            "expected a multiple of 64 bytes (one line), at least 128 (two lines)",
        ));
    }
    let lines = size / LINE_BYTES;
    if lines > u64::from(u32::MAX) {
        return Err(WorkloadError::param(
            "size",
            &params["size"],
            "at most 256 GiB",
        ));
    }
    Ok(Settings {
        lines: lines as usize,
        seed: param_u64(params, "seed")?,
        corrupt: param_corrupt(params)?,
    })
}

struct LatencyProcess {
    lines: usize,
    seed: u64,
    corrupt: bool,
    /// What each worker's check found wrong, by worker number (the check
    /// needs the visit order, which only the worker has).
    problems: Arc<Mutex<BTreeMap<usize, String>>>,
}

impl LatencyProcess {
    fn make_worker(&self, slot: WorkerSlot) -> Result<LatencyWorker, WorkloadError> {
        let n = self.lines;
        let next = sattolo(n, seed_of(self.seed, slot.worker));
        // Zeroed (lazily mapped) and then written one word per line on this
        // pinned thread: that write is the first touch of every page.
        let mut chase = vec![0u64; n * WORDS];
        for (i, &j) in next.iter().enumerate() {
            chase[i * WORDS] = j as u64 * WORDS as u64;
        }
        drop(next);
        let order = cycle_order(n, |p| chase[p * WORDS] as usize / WORDS)
            .map_err(|e| WorkloadError::Setup(format!("latency worker {}: {e}", slot.worker)))?;
        Ok(LatencyWorker {
            chase,
            order,
            pos: 0,
            ops: 0,
            corrupt: self.corrupt,
            worker: slot.worker,
            problems: self.problems.clone(),
        })
    }
}

impl ProcessState for LatencyProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(self.make_worker(slot)?))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        let problems = self.problems.lock().expect("not poisoned");
        for (slot, r) in results {
            if let Some(p) = problems.get(&slot.worker) {
                return Err(p.clone().into());
            }
            if let Some(q) = slot.quota {
                if r.ops != q {
                    return Err(format!(
                        "latency worker {}: did {} ops, its quota was {q}",
                        slot.worker, r.ops
                    )
                    .into());
                }
            }
        }
        Ok(())
    }
}

struct LatencyWorker {
    /// Word `8*i` holds `8*next(i)`; the other seven words of each line are
    /// padding that keeps one pointer per line.
    chase: Vec<u64>,
    /// `order[t]`: the line reached after `t` loads from line 0.
    order: Vec<u32>,
    /// Current position, a word index (8 x line).
    pos: usize,
    ops: u64,
    corrupt: bool,
    worker: usize,
    problems: Arc<Mutex<BTreeMap<usize, String>>>,
}

impl WorkerState for LatencyWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        let chase = &self.chase[..];
        let mut p = self.pos;
        for _ in 0..max_ops * LOADS_PER_OP {
            // The bounds check is a predicted branch beside the chain, not
            // on it: the load's address depends only on the previous load.
            p = chase[p] as usize;
        }
        self.pos = p;
        self.ops += max_ops;
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            self.pos = (self.pos + WORDS) % self.chase.len();
        }
        let n = self.order.len() as u64;
        let loads = self.ops as u128 * LOADS_PER_OP as u128;
        let want = self.order[(loads % n as u128) as usize] as usize;
        let problem = if self.pos % WORDS != 0 || self.pos / WORDS >= n as usize {
            Some(format!(
                "latency worker {}: final position word {} is not a line of the {n}-line array",
                self.worker, self.pos
            ))
        } else if self.pos / WORDS != want {
            Some(format!(
                "latency worker {}: at line {} after {} ops ({loads} loads), expected line {want}",
                self.worker,
                self.pos / WORDS,
                self.ops
            ))
        } else {
            None
        };
        if let Some(p) = problem {
            self.problems
                .lock()
                .expect("not poisoned")
                .insert(self.worker, p);
        }
        WorkerResult {
            ops: self.ops,
            checksum: (self.pos / WORDS) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&Latency, kv).unwrap()
    }

    #[test]
    fn latency_sattolo_is_one_cycle() {
        for n in [1usize, 2, 3, 5, 64, 256, 1000, 4096, 100_003] {
            for seed in [1u64, 2, 99] {
                let next = sattolo(n, seed);
                let order = cycle_order(n, |p| next[p] as usize).unwrap();
                let mut seen = order.clone();
                seen.sort_unstable();
                assert!(seen.iter().copied().eq(0..n as u32), "n={n}");
            }
        }
        // Different seeds, different permutations.
        assert_ne!(sattolo(1000, 1), sattolo(1000, 2));
    }

    #[test]
    fn latency_cycle_check_rejects_two_cycles_and_escapes() {
        // 0->1->0 and 2->3->2: two cycles.
        let e = cycle_order(4, |p| [1, 0, 3, 2][p]).unwrap_err();
        assert!(e.contains("after 2 steps"), "{e}");
        // 0->1->2->1: never back to 0.
        assert!(cycle_order(3, |p| [1, 2, 1][p]).is_err());
        assert!(cycle_order(3, |p| [1, 7, 0][p])
            .unwrap_err()
            .contains("leaves"));
    }

    #[test]
    fn latency_bad_params_name_the_parameter() {
        for (k, v) in [
            ("size", "64"),
            ("size", "100"),
            ("size", "1KB"),
            ("seed", "x"),
            ("corrupt", "3"),
        ] {
            let e = testing::config(&Latency, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
        assert!(Latency.setup(&config(&[("size", "128")]), &ctx(1)).is_ok());
    }

    #[test]
    fn latency_two_workers_by_hand_verify() {
        // 249 lines: no op count here is a whole number of cycles.
        let p = Latency
            .setup(&config(&[("size", "15936")]), &ctx(2))
            .unwrap();
        for ops in [0u64, 1, 3, 17] {
            let slots = [slot(0, 2), slot(1, 2)];
            let results: Vec<_> = slots
                .iter()
                .map(|&s| {
                    let mut w = p.worker(s).unwrap();
                    let mut done = 0;
                    while done < ops {
                        done += w.step((ops - done).min(4));
                    }
                    (s, w.finish())
                })
                .collect();
            assert_eq!(p.verify(&results), Ok(()), "ops={ops}");
            // Distinct permutations per worker: after a few ops they differ.
            if ops == 17 {
                assert_ne!(results[0].1.checksum, results[1].1.checksum);
            }
        }
    }

    #[test]
    fn latency_walk_matches_direct_chase() {
        // 256 lines, 1024 loads: four times round the cycle, back to line 0.
        let p = Latency.setup(&config(&[("size", "16K")]), &ctx(1)).unwrap();
        let mut w = p.worker(slot(0, 1)).unwrap();
        w.step(1);
        assert_eq!(w.finish().checksum, 0);
    }

    #[test]
    fn latency_corrupt_and_wrong_counts_fail() {
        let p = Latency
            .setup(&config(&[("size", "4K"), ("corrupt", "1")]), &ctx(1))
            .unwrap();
        let s = slot(0, 1);
        let mut w = p.worker(s).unwrap();
        w.step(3);
        let e = p.verify(&[(s, w.finish())]).unwrap_err();
        assert!(e.contains("expected line"), "{e}");

        // Work that the reported count does not explain (one op more
        // reported than chased) fails.
        let p = LatencyProcess {
            lines: 100,
            seed: 5,
            corrupt: false,
            problems: Arc::new(Mutex::new(BTreeMap::new())),
        };
        let mut w = p.make_worker(s).unwrap();
        w.step(3);
        w.ops += 1;
        let e = p.verify(&[(s, w.finish())]).unwrap_err();
        assert!(e.contains("after 4 ops"), "{e}");
    }
}
