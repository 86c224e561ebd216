//! `larson`: Larson and Krishnan's server simulation ("Memory allocation
//! for long-running server applications", ISMM 1998), written from its
//! public description.
//!
//! Each worker owns an array of `slots` blocks of random sizes
//! (`min_size..=max_size`, uniform). One operation frees the block of a
//! random slot and allocates a new random-size block into it. Every
//! `rounds` operations the worker **swaps its whole array** with the one
//! waiting in the process's hand-off (a mutex-guarded slot that holds one
//! array, filled at set-up), as the original's threads hand their blocks to
//! the next generation: from then on it frees blocks another thread
//! allocated. Those cross-thread frees are what the benchmark is about —
//! allocators with per-thread caches must send such blocks home or let
//! memory drift between threads.
//!
//! In the process model each process has one thread, and the exchange would
//! be with itself, so it is skipped: there are no cross-thread frees there,
//! which is part of what the thread-vs-process comparison shows.
//!
//! One operation is one free plus one malloc. The new block's first
//! `touch` bytes are written (default 16: its tag and a check pattern); the
//! original writes two bytes, so that the benchmark measures the allocator
//! and not `memset` over 520-byte blocks (`touch=1024` writes every byte).
//! Verified by conservation of tags (`alloc_common.rs`): blocks
//! freed by any thread, alive in the arrays or left in the hand-off add up
//! to those allocated, patterns intact.

use std::sync::{Arc, Mutex};

use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult,
    WorkerSlot, WorkerState, Workload, WorkloadInfo,
};

use super::alloc_common::{
    block_size_params, param_count, param_touch, tag_of, worker_seed, Block, Ledger, NewBlocks,
    Rng, Sizes, Tally,
};
use crate::config::LarsonSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::params::param_corrupt;
use crate::{resolve_checked, WorkloadConfig};

pub struct Larson;

impl Workload for Larson {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "larson",
            summary: "Larson server simulation: random-size blocks replaced in random slots; \
                      threads swap slot arrays, so blocks are freed by other threads",
            params: [ParamSpec {
                name: "slots",
                default: "5000",
                help: "blocks each worker holds (its array)",
            }]
            .into_iter()
            .chain(block_size_params("1024"))
            .chain([
                ParamSpec {
                    name: "rounds",
                    default: "10000",
                    help: "operations between swaps of a worker's array through the \
                               process's hand-off (threads of one process only)",
                },
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "seed of the sizes and slots (mixed with the worker number)",
                },
                ParamSpec {
                    name: "touch",
                    default: "16",
                    help: "bytes written at the start of each new block (at least 8, its \
                               tag; max_size or more: every byte)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 scribbles on a held block, to check that wrong \
                               results fail",
                },
            ])
            .collect(),
            operation: "free the block in a random slot and malloc a new 16-1024 B block \
                        (default sizes) into it, its first 16 bytes written (default touch)",
            verification: "every block freed (by any thread), held at the end or left in the \
                           hand-off is read back: tag and pattern intact, allocations = frees \
                           + live as counts and tag sums per process, reported ops = counted",
            ..WorkloadInfo::timed(TimeMetric::throughput("ops/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Larson(settings) = *config else {
            return Err(config.not_for("larson"));
        };
        let Settings {
            slots,
            sizes,
            seed,
            touch,
            rounds,
            corrupt,
        } = settings;
        let ledger = Ledger::new("larson");
        // The array waiting in the hand-off, allocated here by the main
        // thread (so even the first swap hands over foreign blocks); none
        // when the process has a single thread, which never swaps.
        let handoff = (ctx.threads > 1).then(|| {
            let mut t = Tally::default();
            let mut rng = Rng::new(worker_seed(seed, usize::MAX >> 1));
            let blocks = (0..slots)
                .map(|i| {
                    t.alloc_touching(
                        sizes.draw(&mut rng),
                        tag_of(usize::MAX >> 21, i as u64),
                        touch,
                    )
                })
                .collect();
            ledger.add_other(&t);
            blocks
        });
        Ok(Box::new(LarsonProcess {
            slots,
            sizes,
            rounds,
            touch,
            seed,
            corrupt,
            shared: Arc::new(Shared {
                ledger,
                handoff: Mutex::new(handoff),
            }),
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Larson(Settings::parse(&params)?))
    }
}

impl Settings {
    fn parse(params: &Params) -> Result<Settings, WorkloadError> {
        Ok(Settings {
            slots: param_count(params, "slots", 1 << 22)? as usize,
            sizes: Sizes::from_params(params)?,
            seed: param_u64(params, "seed")?,
            touch: param_touch(params)?,
            rounds: param_count(params, "rounds", u64::MAX)?,
            corrupt: param_corrupt(params)?,
        })
    }
}

struct LarsonProcess {
    slots: usize,
    sizes: Sizes,
    rounds: u64,
    touch: usize,
    seed: u64,
    corrupt: bool,
    shared: Arc<Shared>,
}

struct Shared {
    ledger: Ledger,
    /// The array waiting to be swapped; `None` with one thread.
    handoff: Mutex<Option<Vec<Block>>>,
}

impl ProcessState for LarsonProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        // The initial array is allocated on the worker's own thread, before
        // the window: these allocations are counted but are not operations.
        let mut rng = Rng::new(worker_seed(self.seed, slot.worker));
        let mut tally = Tally::default();
        let blocks = (0..self.slots)
            .map(|i| {
                tally.alloc_touching(
                    self.sizes.draw(&mut rng),
                    tag_of(slot.worker, u64::MAX - i as u64),
                    self.touch,
                )
            })
            .collect();
        Ok(Box::new(LarsonWorker {
            blocks,
            rounds: self.rounds,
            since_swap: 0,
            new: NewBlocks {
                sizes: self.sizes,
                touch: self.touch,
                rng,
                tally,
                ops: 0,
                worker: slot.worker,
            },
            corrupt: self.corrupt,
            shared: self.shared.clone(),
        }))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        let mut left = Tally::default();
        if let Some(blocks) = self.shared.handoff.lock().expect("not poisoned").as_ref() {
            for b in blocks {
                left.keep(b);
            }
        }
        self.shared.ledger.verify(results, &left)
    }
}

struct LarsonWorker {
    blocks: Vec<Block>,
    rounds: u64,
    since_swap: u64,
    /// The blocks it allocates, and its generator (slots are drawn from it
    /// too).
    new: NewBlocks,
    corrupt: bool,
    shared: Arc<Shared>,
}

impl WorkerState for LarsonWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        for _ in 0..max_ops {
            if self.since_swap >= self.rounds {
                self.since_swap = 0;
                if let Some(other) = self.shared.handoff.lock().expect("not poisoned").as_mut() {
                    std::mem::swap(&mut self.blocks, other);
                }
            }
            let i = self.new.rng.below(self.blocks.len() as u64) as usize;
            // Free first, then allocate, as the original does: the freed
            // block may be the one the allocator hands back.
            let old = std::mem::replace(&mut self.blocks[i], Block::empty());
            self.new.free(old);
            self.blocks[i] = self.new.next();
            self.since_swap += 1;
        }
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            let b = self.new.tally.corrupt();
            self.blocks.push(b);
        }
        for b in &self.blocks {
            self.new.tally.keep(b);
        }
        self.new.finish(&self.shared.ledger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&Larson, kv).unwrap()
    }

    /// Two threads, several swaps each: blocks cross threads and still
    /// balance; corruption and a wrong count fail.
    #[test]
    fn larson_threads_swap_and_verify() {
        let pr = config(&[("slots", "50"), ("rounds", "30")]);
        let p = Larson.setup(&pr, &ctx(2)).unwrap();
        let slots = [slot(0, 2), slot(1, 2)];
        let mut ws: Vec<_> = slots.iter().map(|&s| p.worker(s).unwrap()).collect();
        for _ in 0..10 {
            for w in &mut ws {
                assert_eq!(w.step(17), 17);
            }
        }
        let results: Vec<_> = slots
            .iter()
            .zip(&mut ws)
            .map(|(&s, w)| (s, w.finish()))
            .collect();
        assert_eq!(results[0].1.ops, 170);
        assert_eq!(p.verify(&results), Ok(()));
        let mut wrong = results.clone();
        wrong[1].1.ops += 1;
        assert!(p.verify(&wrong).unwrap_err().contains("reported 171 ops"));

        let p = Larson
            .setup(&config(&[("slots", "10"), ("corrupt", "1")]), &ctx(1))
            .unwrap();
        let mut w = p.worker(slot(0, 1)).unwrap();
        w.step(100);
        let e = p.verify(&[(slot(0, 1), w.finish())]).unwrap_err();
        assert!(e.contains("pattern"), "{e}");
    }

    #[test]
    fn larson_bad_params_name_the_parameter() {
        for (k, v) in [
            ("slots", "0"),
            ("rounds", "0"),
            ("min_size", "4"),
            ("max_size", "8"),
            ("touch", "7"),
            ("corrupt", "2"),
        ] {
            let e = testing::config(&Larson, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
    }
}

/// The seeded run, pinned: one worker's tag checksum and count after a
/// fixed number of operations are what they were before larson and
/// xmalloc shared their allocating code (`NewBlocks`).
#[cfg(test)]
#[test]
fn larson_seeded_result_is_pinned() {
    let r =
        crate::testing::seeded_results(&Larson, &[("slots", "40"), ("rounds", "25")], 2, &[13; 7]);
    assert_eq!(r, LARSON_PINNED);
}

#[cfg(test)]
const LARSON_PINNED: [(u64, u64); 2] = [(91, 2636121681382829801), (91, 15800868799116711048)];
