//! `xmalloc`: producer/consumer allocation (after Lever and Boreham's
//! xmalloc-test), written from its public description.
//!
//! Within a process, worker *i* allocates batches of `batch` blocks
//! (`min_size..=max_size`, uniform; the first `touch` bytes written,
//! default 128 as in the original) and passes each
//! batch to worker *(i+1) mod threads* through that worker's bounded inbox
//! (a mutex-guarded queue of at most `depth` batches); each worker first
//! frees whatever batches arrived in its inbox. Every block is therefore
//! freed by a thread other than the one that allocated it — the pattern
//! that makes per-thread caches send memory back and forth.
//!
//! A full inbox does not make the producer wait (a step must stay short):
//! it frees its own batch instead. A process with a single thread (the
//! process model) always frees its own batches: no cross-thread frees.
//!
//! One operation is one block allocated and (by someone) freed. Verified by
//! conservation of tags (`alloc_common.rs`): blocks freed by any
//! thread and left in inboxes add up to those allocated, patterns intact.

use std::sync::{Arc, Mutex};

use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult,
    WorkerSlot, WorkerState, Workload, WorkloadInfo,
};

use super::alloc_common::{
    block_size_params, param_count, param_touch, worker_seed, Block, Ledger, NewBlocks, Rng, Sizes,
    Tally,
};
use crate::config::XmallocSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::params::param_corrupt;
use crate::{resolve_checked, WorkloadConfig};

pub struct Xmalloc;

impl Workload for Xmalloc {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "xmalloc",
            summary: "producer/consumer: each thread allocates batches that the next thread \
                      of its process frees (cross-thread frees)",
            params: [
                ParamSpec {
                    name: "batch",
                    default: "100",
                    help: "blocks per batch passed to the next thread",
                },
                ParamSpec {
                    name: "depth",
                    default: "16",
                    help: "batches an inbox holds; a producer finding it full frees its \
                           batch itself",
                },
            ]
            .into_iter()
            .chain(block_size_params("256"))
            .chain([
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "seed of the sizes (mixed with the worker number)",
                },
                ParamSpec {
                    name: "touch",
                    default: "128",
                    help: "bytes written at the start of each block (at least 8, its tag; \
                               max_size or more: every byte)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 scribbles on a block, to check that wrong results fail",
                },
            ])
            .collect(),
            operation: "one malloc of 16-256 B (default sizes) with its first 128 bytes \
                        (default touch) written, freed \
                        by the next thread of the process (by itself with one thread or a \
                        full inbox)",
            verification: "every block freed by any thread or left in an inbox is read back: \
                           tag and pattern intact, allocations = frees + live as counts and \
                           tag sums per process, reported ops = counted",
            ..WorkloadInfo::timed(TimeMetric::throughput("ops/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Xmalloc(settings) = *config else {
            return Err(config.not_for("xmalloc"));
        };
        Ok(Box::new(XmallocProcess {
            settings,
            threads: ctx.threads,
            shared: Arc::new(Shared {
                ledger: Ledger::new("xmalloc"),
                inboxes: (0..ctx.threads).map(|_| Mutex::new(Vec::new())).collect(),
            }),
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Xmalloc(Settings::parse(&params)?))
    }
}

impl Settings {
    fn parse(params: &Params) -> Result<Settings, WorkloadError> {
        Ok(Settings {
            batch: param_count(params, "batch", 1 << 20)?,
            depth: param_count(params, "depth", 1 << 16)? as usize,
            sizes: Sizes::from_params(params)?,
            touch: param_touch(params)?,
            seed: param_u64(params, "seed")?,
            corrupt: param_corrupt(params)?,
        })
    }
}

struct XmallocProcess {
    settings: Settings,
    threads: usize,
    shared: Arc<Shared>,
}

struct Shared {
    ledger: Ledger,
    /// `inboxes[t]`: batches waiting for thread `t` to free them.
    inboxes: Vec<Mutex<Vec<Vec<Block>>>>,
}

impl ProcessState for XmallocProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(XmallocWorker {
            thread: slot.thread,
            next: (self.threads > 1).then_some((slot.thread + 1) % self.threads),
            batch: self.settings.batch,
            depth: self.settings.depth,
            new: NewBlocks {
                sizes: self.settings.sizes,
                touch: self.settings.touch,
                rng: Rng::new(worker_seed(self.settings.seed, slot.worker)),
                tally: Tally::default(),
                ops: 0,
                worker: slot.worker,
            },
            corrupt: self.settings.corrupt,
            shared: self.shared.clone(),
        }))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        let mut left = Tally::default();
        for inbox in &self.shared.inboxes {
            for b in inbox.lock().expect("not poisoned").iter().flatten() {
                left.keep(b);
            }
        }
        self.shared.ledger.verify(results, &left)
    }
}

struct XmallocWorker {
    thread: usize,
    /// The consumer of this thread's batches; `None` with one thread.
    next: Option<usize>,
    batch: u64,
    depth: usize,
    /// The blocks it allocates.
    new: NewBlocks,
    corrupt: bool,
    shared: Arc<Shared>,
}

impl XmallocWorker {
    fn free_all(&mut self, batches: Vec<Vec<Block>>) {
        for b in batches.into_iter().flatten() {
            self.new.free(b);
        }
    }
}

impl WorkerState for XmallocWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        let mut done = 0;
        while done < max_ops {
            // Consume: take the whole inbox at once, free outside the lock.
            let arrived = std::mem::take(
                &mut *self.shared.inboxes[self.thread]
                    .lock()
                    .expect("not poisoned"),
            );
            self.free_all(arrived);
            // Produce: a batch (cut short to stay within max_ops).
            let n = self.batch.min(max_ops - done);
            let mut batch = Vec::with_capacity(n as usize);
            for _ in 0..n {
                batch.push(self.new.next());
            }
            done += n;
            let rejected = match self.next {
                Some(t) => {
                    let mut inbox = self.shared.inboxes[t].lock().expect("not poisoned");
                    if inbox.len() < self.depth {
                        inbox.push(batch);
                        None
                    } else {
                        Some(batch)
                    }
                }
                None => Some(batch),
            };
            if let Some(own) = rejected {
                self.free_all(vec![own]);
            }
        }
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            // Left in this thread's inbox, where verify reads it.
            let b = self.new.tally.corrupt();
            self.shared.inboxes[self.thread]
                .lock()
                .expect("not poisoned")
                .push(vec![b]);
        }
        self.new.finish(&self.shared.ledger)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&Xmalloc, kv).unwrap()
    }

    fn run(p: &dyn ProcessState, threads: usize, steps: &[u64]) -> Vec<(WorkerSlot, WorkerResult)> {
        let slots: Vec<_> = (0..threads).map(|t| slot(t, threads)).collect();
        let mut ws: Vec<_> = slots.iter().map(|&s| p.worker(s).unwrap()).collect();
        for &n in steps {
            for w in &mut ws {
                assert_eq!(w.step(n), n);
            }
        }
        slots
            .iter()
            .zip(&mut ws)
            .map(|(&s, w)| (s, w.finish()))
            .collect()
    }

    #[test]
    fn xmalloc_batches_cross_threads_and_verify() {
        // A small depth: some batches are refused and freed by their producer.
        let p = Xmalloc
            .setup(&config(&[("batch", "7"), ("depth", "2")]), &ctx(2))
            .unwrap();
        let results = run(&*p, 2, &[1, 30, 5, 100, 3]);
        assert_eq!(results[0].1.ops, 139);
        assert_eq!(p.verify(&results), Ok(()));

        let p = Xmalloc.setup(&config(&[("batch", "7")]), &ctx(1)).unwrap();
        let results = run(&*p, 1, &[10, 20]);
        assert_eq!(p.verify(&results), Ok(()));

        let p = Xmalloc
            .setup(&config(&[("corrupt", "1")]), &ctx(2))
            .unwrap();
        let results = run(&*p, 2, &[50]);
        assert!(p.verify(&results).unwrap_err().contains("pattern"));
    }

    #[test]
    fn xmalloc_bad_params_name_the_parameter() {
        for (k, v) in [
            ("batch", "0"),
            ("depth", "0"),
            ("min_size", "2"),
            ("touch", "0"),
            ("corrupt", "3"),
        ] {
            let e = testing::config(&Xmalloc, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
    }
}

/// The seeded run, pinned, as `larson_seeded_result_is_pinned`.
#[cfg(test)]
#[test]
fn xmalloc_seeded_result_is_pinned() {
    let r = crate::testing::seeded_results(
        &Xmalloc,
        &[("batch", "7"), ("depth", "2")],
        2,
        &[1, 30, 5, 100, 3],
    );
    assert_eq!(r, XMALLOC_PINNED);
}

#[cfg(test)]
const XMALLOC_PINNED: [(u64, u64); 2] = [(139, 7373965240100634283), (139, 12833150441429977147)];
