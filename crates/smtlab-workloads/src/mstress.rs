//! `mstress`: thread churn (in the spirit of mimalloc-bench's `mstress`),
//! written from its public description.
//!
//! Each worker runs *generations*: it starts a short-lived thread that
//! first frees the objects the previous generation handed over, then
//! allocates a batch of `batch` objects of mixed sizes
//! (`min_size..=max_size`, uniform, every byte written), frees a random
//! `100 - keep` percent of them, hands the rest to the next generation and
//! exits. Every handed-over object is thus freed by a thread other than
//! the one that allocated it, and that thread is dead by then: the
//! allocator must cope with memory of exited threads (reclaim or adopt its
//! heaps) and with the set-up and tear-down of a thread's heap, again and
//! again. A new thread inherits its creator's CPU affinity, so a pinned
//! worker's generations run where the worker is pinned.
//!
//! One operation is one allocation (about `100 - keep` percent of them are
//! freed in their own generation, the rest in the next). A step runs one
//! whole generation, more operations than the worker loop's first small chunks
//! ask for (a thread per single allocation would measure only threads). Verified by
//! conservation of tags (`alloc_common.rs`) across generations.

use std::sync::Arc;

use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult,
    WorkerSlot, WorkerState, Workload, WorkloadInfo,
};

use super::alloc_common::{param_count, tag_of, worker_seed, Block, Ledger, Rng, Sizes, Tally};
use crate::config::MstressSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::params::param_corrupt;
use crate::{resolve_checked, WorkloadConfig};

pub struct Mstress;

impl Workload for Mstress {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "mstress",
            summary: "thread churn: short-lived threads allocate batches, free part, and hand \
                      the rest to the next generation's thread to free",
            params: vec![
                ParamSpec {
                    name: "batch",
                    default: "2000",
                    help: "objects one generation (one short-lived thread) allocates",
                },
                ParamSpec {
                    name: "keep",
                    default: "50",
                    help: "percent of a generation's objects handed to the next generation \
                           (the rest it frees itself)",
                },
                ParamSpec {
                    name: "min_size",
                    default: "16",
                    help: "smallest object, bytes (at least 8)",
                },
                ParamSpec {
                    name: "max_size",
                    default: "1024",
                    help: "largest object, bytes (sizes are uniform in between)",
                },
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "seed of the sizes and of which objects are kept",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 scribbles on a handed-over object, to check that wrong \
                           results fail",
                },
            ],
            operation: "one malloc of 16-1024 B (default sizes) with every byte written, in a \
                        short-lived thread; freed there or by the next generation's thread",
            verification: "every object freed (in its generation or the next) or still handed \
                           over at the end is read back: tag and pattern intact, allocations \
                           = frees + live as counts and tag sums, reported ops = counted",
            ..WorkloadInfo::timed(TimeMetric::throughput("allocs/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        _ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Mstress(settings) = *config else {
            return Err(config.not_for("mstress"));
        };
        let Settings {
            batch,
            keep,
            sizes,
            seed,
            corrupt,
        } = settings;
        Ok(Box::new(MstressProcess {
            batch,
            keep,
            sizes,
            seed,
            corrupt,
            ledger: Arc::new(Ledger::new("mstress")),
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Mstress(Settings::parse(&params)?))
    }
}

impl Settings {
    fn parse(params: &Params) -> Result<Settings, WorkloadError> {
        let keep = param_u64(params, "keep")?;
        if keep > 100 {
            return Err(WorkloadError::param(
                "keep",
                keep,
                "expected a percentage, 0..=100",
            ));
        }
        Ok(Settings {
            batch: param_count(params, "batch", 1 << 20)?,
            keep,
            sizes: Sizes::from_params(params)?,
            seed: param_u64(params, "seed")?,
            corrupt: param_corrupt(params)?,
        })
    }
}

struct MstressProcess {
    batch: u64,
    keep: u64,
    sizes: Sizes,
    seed: u64,
    corrupt: bool,
    ledger: Arc<Ledger>,
}

impl ProcessState for MstressProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(MstressWorker {
            carry: Vec::new(),
            batch: self.batch,
            keep: self.keep,
            sizes: self.sizes,
            rng: Rng::new(worker_seed(self.seed, slot.worker)),
            tally: Tally::default(),
            ops: 0,
            worker: slot.worker,
            quota: slot.quota,
            corrupt: self.corrupt,
            ledger: self.ledger.clone(),
        }))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        self.ledger.verify(results, &Tally::default())
    }
}

struct MstressWorker {
    /// What the last generation handed over.
    carry: Vec<Block>,
    batch: u64,
    keep: u64,
    sizes: Sizes,
    rng: Rng,
    tally: Tally,
    ops: u64,
    worker: usize,
    /// Fixed-work quota: the last generation stops at it.
    quota: Option<u64>,
    corrupt: bool,
    ledger: Arc<Ledger>,
}

/// What one generation is given: its objects' first sequence number, how
/// many to allocate, and its generator.
struct Generation {
    worker: usize,
    first: u64,
    n: u64,
    keep: u64,
    sizes: Sizes,
    rng: Rng,
}

impl Generation {
    /// The body of a generation's thread: free what was handed over,
    /// allocate `n`, free all but about `keep` percent, hand the rest on.
    fn run(mut self, carry: Vec<Block>) -> (Vec<Block>, Tally) {
        let mut tally = Tally::default();
        for b in carry {
            tally.free(b);
        }
        let mut kept = Vec::new();
        let mut fresh: Vec<Block> = (0..self.n)
            .map(|i| {
                let size = self.sizes.draw(&mut self.rng);
                tally.alloc(size, tag_of(self.worker, self.first + i))
            })
            .collect();
        for b in fresh.drain(..) {
            if self.rng.below(100) < self.keep {
                kept.push(b);
            } else {
                tally.free(b);
            }
        }
        (kept, tally)
    }
}

impl WorkerState for MstressWorker {
    /// One whole generation per step, whatever `max_ops` asks: a thread's
    /// start and exit are the unit of this workload, and cutting a
    /// generation to the worker loop's first, tiny chunks would measure thread
    /// creation per single allocation. (A default generation takes well
    /// under a millisecond.) Only a fixed-work quota cuts the last
    /// generation short, so the quota is met exactly.
    fn step(&mut self, _max_ops: u64) -> u64 {
        let n = match self.quota {
            Some(q) => self.batch.min(q.saturating_sub(self.ops)),
            None => self.batch,
        };
        let gen = Generation {
            worker: self.worker,
            first: self.ops,
            n,
            keep: self.keep,
            sizes: self.sizes,
            rng: Rng::new(self.rng.next_u64()),
        };
        let carry = std::mem::take(&mut self.carry);
        let (kept, tally) = std::thread::scope(|s| {
            std::thread::Builder::new()
                .name(format!("mstress-{}", self.worker))
                .spawn_scoped(s, move || gen.run(carry))
                .expect("starting a generation thread")
                .join()
                .expect("a generation thread panicked")
        });
        self.carry = kept;
        self.tally.add(&tally);
        self.ops += n;
        n
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            let b = self.tally.corrupt();
            self.carry.push(b);
        }
        for b in &self.carry {
            self.tally.keep(b);
        }
        self.ledger.finish(self.worker, self.tally, self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&Mstress, kv).unwrap()
    }

    #[test]
    fn mstress_generations_hand_over_and_verify() {
        for keep in ["0", "50", "100"] {
            let p = Mstress
                .setup(&config(&[("batch", "64"), ("keep", keep)]), &ctx(2))
                .unwrap();
            let slots = [slot(0, 2), slot(1, 2)];
            let results: Vec<_> = slots
                .iter()
                .map(|&s| {
                    let mut w = p.worker(s).unwrap();
                    // A whole generation per step, even when asked for one op.
                    assert_eq!(w.step(1), 64);
                    assert_eq!(w.step(200), 64);
                    (s, w.finish())
                })
                .collect();
            assert_eq!(results[0].1.ops, 128);
            assert_eq!(p.verify(&results), Ok(()), "keep={keep}");
        }
        // A quota cuts the last generation short.
        let p = Mstress.setup(&config(&[("batch", "64")]), &ctx(1)).unwrap();
        let s = WorkerSlot {
            quota: Some(100),
            ..slot(0, 1)
        };
        let mut w = p.worker(s).unwrap();
        assert_eq!(w.step(1), 64);
        assert_eq!(w.step(1), 36);
        assert_eq!(p.verify(&[(s, w.finish())]), Ok(()));

        let p = Mstress
            .setup(&config(&[("batch", "10"), ("corrupt", "1")]), &ctx(1))
            .unwrap();
        let mut w = p.worker(slot(0, 1)).unwrap();
        w.step(30);
        assert!(p
            .verify(&[(slot(0, 1), w.finish())])
            .unwrap_err()
            .contains("pattern"));
    }

    #[test]
    fn mstress_bad_params_name_the_parameter() {
        for (k, v) in [
            ("batch", "0"),
            ("keep", "101"),
            ("max_size", "9999999"),
            ("corrupt", "2"),
        ] {
            let e = testing::config(&Mstress, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
    }
}
