//! `spin`: a calibrated integer loop with a checksum, to test execution and measurement.
//!
//! One operation is 1024 steps of a 64-bit linear congruential generator
//! (`x = a*x + c mod 2^64`, Knuth's MMIX constants): a chain of dependent
//! multiply-adds, so its speed is the core's integer latency and nothing
//! else (no memory traffic, no sharing between workers). Each worker starts
//! from its own seed; the LCG can be jumped ahead in O(log n), so the final
//! value is verified exactly for any number of operations without redoing
//! the work.

use crate::config::SpinSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::{
    param_u64, resolve_checked, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric,
    WorkerResult, WorkerSlot, WorkerState, Workload, WorkloadConfig, WorkloadInfo,
};

const A: u64 = 6364136223846793005;
const C: u64 = 1442695040888963407;
/// LCG steps per operation.
pub const STEPS_PER_OP: u64 = 1024;

pub struct Spin;

/// `x` after `n` steps, by repeated squaring of the affine map.
pub fn jump(mut x: u64, mut n: u64) -> u64 {
    // (mul, add) represents x -> mul*x + add; compose powers of two.
    let (mut mul, mut add) = (A, C);
    while n > 0 {
        if n & 1 == 1 {
            x = x.wrapping_mul(mul).wrapping_add(add);
        }
        add = add.wrapping_mul(mul).wrapping_add(add);
        mul = mul.wrapping_mul(mul);
        n >>= 1;
    }
    x
}

fn seed_of(seed: u64, worker: usize) -> u64 {
    seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Workload for Spin {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "spin",
            summary: "calibrated integer loop (dependent 64-bit multiply-adds), no memory traffic",
            params: vec![
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "starting value of every worker's generator (mixed with its number)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 corrupts the checksum, to check that wrong results fail",
                },
            ],
            operation: "1024 dependent 64-bit multiply-adds (a multiply-add latency each: some 3000-4000 cycles)",
            verification: "each worker's final generator value equals the closed-form jump of \
                           its seed by ops x 1024 steps",
            ..WorkloadInfo::timed(TimeMetric::throughput("ops/s"))
        }
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Spin(Settings {
            seed: param_u64(&params, "seed")?,
            corrupt: crate::params::param_corrupt(&params)?,
        }))
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        _ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Spin(Settings { seed, corrupt }) = *config else {
            return Err(config.not_for("spin"));
        };
        Ok(Box::new(SpinProcess { seed, corrupt }))
    }
}

struct SpinProcess {
    seed: u64,
    corrupt: bool,
}

impl ProcessState for SpinProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(SpinWorker {
            x: seed_of(self.seed, slot.worker),
            ops: 0,
            corrupt: self.corrupt,
        }))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        for (slot, r) in results {
            let want = jump(seed_of(self.seed, slot.worker), r.ops * STEPS_PER_OP);
            if r.checksum != want {
                return Err(format!(
                    "spin worker {}: checksum {:#018x} after {} ops, expected {want:#018x}",
                    slot.worker, r.checksum, r.ops
                )
                .into());
            }
            if let Some(q) = slot.quota {
                if r.ops != q {
                    return Err(format!(
                        "spin worker {}: did {} ops, its quota was {q}",
                        slot.worker, r.ops
                    )
                    .into());
                }
            }
        }
        Ok(())
    }
}

struct SpinWorker {
    x: u64,
    ops: u64,
    corrupt: bool,
}

impl WorkerState for SpinWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        // Opaque constants: with literal ones LLVM composes several steps of
        // the affine map into one (x*a^k + c_k), and the loop would do a
        // fraction of the multiply-adds an operation promises.
        let (a, c) = (std::hint::black_box(A), std::hint::black_box(C));
        let mut x = self.x;
        for _ in 0..max_ops * STEPS_PER_OP {
            x = x.wrapping_mul(a).wrapping_add(c);
        }
        // Keep the chain observable so the optimiser cannot drop it.
        self.x = std::hint::black_box(x);
        self.ops += max_ops;
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        WorkerResult {
            ops: self.ops,
            checksum: if self.corrupt { self.x ^ 1 } else { self.x },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_matches_stepping() {
        let mut x = 42u64;
        for n in 0..3000u64 {
            assert_eq!(jump(42, n), x, "after {n} steps");
            x = x.wrapping_mul(A).wrapping_add(C);
        }
    }

    #[test]
    fn verification_accepts_real_work_and_rejects_corruption() {
        let config = Spin.parse(&Params::new()).unwrap();
        // One process running worker 3 of a 4-worker point.
        let ctx = ProcessContext {
            workers: 4,
            ..crate::testing::ctx(1)
        };
        let p = Spin.setup(&config, &ctx).unwrap();
        let slot = WorkerSlot {
            worker: 3,
            workers: 4,
            thread: 0,
            quota: None,
        };
        let mut w = p.worker(slot).unwrap();
        w.step(5);
        w.step(2);
        let r = w.finish();
        assert_eq!(r.ops, 7);
        assert!(p.verify(&[(slot, r.clone())]).is_ok());
        let bad = WorkerResult {
            checksum: r.checksum ^ 4,
            ..r
        };
        assert!(p.verify(&[(slot, bad)]).unwrap_err().contains("checksum"));

        let corrupt = Params::from([("corrupt".to_string(), "1".to_string())]);
        let p = Spin.setup(&Spin.parse(&corrupt).unwrap(), &ctx).unwrap();
        let mut w = p.worker(slot).unwrap();
        w.step(1);
        assert!(p.verify(&[(slot, w.finish())]).is_err());
    }
}
