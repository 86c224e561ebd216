//! `cache_scratch`: Hoard's *passive* false-sharing test (Berger et al.,
//! ASPLOS 2000), written from its public description.
//!
//! At set-up the process's main thread allocates one small object per
//! worker thread, one after the other, so they are likely neighbours in one
//! cache line. Each worker frees its object (on its own thread, before the
//! window), then repeatedly allocates an object of the same size, writes
//! to it `writes` times and frees it, exactly as `cache_thrash` does. An
//! allocator that lets a thread reuse the chunk it just freed (a
//! per-thread cache does) hands every thread back its neighbour-sharing
//! chunk: the false sharing the main thread set up is inherited, passively,
//! and the threads slow each other down. An allocator that returns freed
//! memory to its owner's heap avoids it. With one thread per process there
//! is nothing to share.
//!
//! One operation and the verification are `cache_thrash`'s: malloc, byte
//! increments forced to memory, a check of every byte, free; allocations
//! (the set-up objects included) balance frees.

use std::sync::{Arc, Mutex};

use crate::{
    Params, ProcessContext, ProcessState, TimeMetric, WorkerResult, WorkerSlot, WorkerState,
    Workload, WorkloadInfo,
};

use super::alloc_common::{Ledger, Tally};
use super::cache_thrash::{cache_params, size_writes, zeroed, CacheWorker};
use crate::config::CacheSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::{resolve_checked, WorkloadConfig};

pub struct CacheScratch;

impl Workload for CacheScratch {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "cache_scratch",
            summary: "Hoard's passive false sharing: threads free neighbouring objects the main \
                      thread allocated, then malloc, write, free objects of that size",
            params: cache_params(
                "test-only: 1 keeps a scribbled-on object, to check that wrong results fail",
            ),
            operation: "malloc an 8 B object (default), 1000 byte increments forced to \
                        memory (default), free; each thread first frees one of the \
                        neighbouring objects allocated at set-up",
            verification: "before each free every byte holds the number of increments it \
                           received; allocations (set-up objects included) = frees per \
                           process; reported ops = counted",
            ..WorkloadInfo::timed(TimeMetric::throughput("ops/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::CacheScratch(Settings {
            size,
            writes,
            corrupt,
        }) = *config
        else {
            return Err(config.not_for("cache_scratch"));
        };
        let ledger = Arc::new(Ledger::new("cache_scratch"));
        // One object per thread, back to back, by this (main) thread.
        let objects: Vec<Option<Box<[u8]>>> =
            (0..ctx.threads).map(|_| Some(zeroed(size))).collect();
        ledger.add_other(&Tally {
            allocs: ctx.threads as u64,
            ..Tally::default()
        });
        Ok(Box::new(ScratchProcess {
            size,
            writes,
            corrupt,
            objects: Mutex::new(objects),
            ledger,
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::CacheScratch(size_writes(&params)?))
    }
}

struct ScratchProcess {
    size: usize,
    writes: u64,
    corrupt: bool,
    /// `objects[t]`: the object thread `t` frees before its window.
    objects: Mutex<Vec<Option<Box<[u8]>>>>,
    ledger: Arc<Ledger>,
}

impl ProcessState for ScratchProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        let mut w = CacheWorker::new(
            slot,
            self.size,
            self.writes,
            self.corrupt,
            self.ledger.clone(),
        );
        // Freed here, on the worker's own thread: into its cache, if the
        // allocator keeps one.
        let obj = self.objects.lock().expect("not poisoned")[slot.thread].take();
        if let Some(obj) = obj {
            drop(obj);
            w.tally.frees += 1;
        }
        Ok(Box::new(w))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        // Objects of threads that never started are still here.
        let left = self
            .objects
            .lock()
            .expect("not poisoned")
            .iter()
            .flatten()
            .count() as u64;
        self.ledger.verify(
            results,
            &Tally {
                live: left,
                ..Tally::default()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&CacheScratch, kv).unwrap()
    }

    #[test]
    fn cache_scratch_frees_setup_objects_and_verifies() {
        let p = CacheScratch
            .setup(&config(&[("writes", "50")]), &ctx(2))
            .unwrap();
        let slots = [slot(0, 2), slot(1, 2)];
        let results: Vec<_> = slots
            .iter()
            .map(|&s| {
                let mut w = p.worker(s).unwrap();
                w.step(5);
                (s, w.finish())
            })
            .collect();
        assert_eq!(p.verify(&results), Ok(()));

        // Only one of two threads started: its neighbour's object is
        // counted as left, and the process still balances.
        let p = CacheScratch.setup(&config(&[]), &ctx(2)).unwrap();
        let mut w = p.worker(slot(1, 2)).unwrap();
        w.step(1);
        assert_eq!(p.verify(&[(slot(1, 2), w.finish())]), Ok(()));

        let p = CacheScratch
            .setup(&config(&[("corrupt", "1")]), &ctx(1))
            .unwrap();
        let mut w = p.worker(slot(0, 1)).unwrap();
        w.step(3);
        assert!(p
            .verify(&[(slot(0, 1), w.finish())])
            .unwrap_err()
            .contains("pattern"));
    }
}
