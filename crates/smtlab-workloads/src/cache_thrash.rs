//! `cache_thrash`: Hoard's *active* false-sharing test (Berger et al.,
//! "Hoard: a scalable memory allocator for multithreaded applications",
//! ASPLOS 2000), written from its public description.
//!
//! Each worker repeatedly allocates a small object (`size` bytes, default
//! 8), writes to it `writes` times and frees it. Nothing is shared by the
//! program; but an allocator that hands two threads objects from the same
//! cache line (consecutive small chunks of one shared heap) makes their
//! writes fight over that line, and the threads slow each other down by an
//! order of magnitude. An allocator that gives each thread (or core) its
//! own memory keeps the line private. As separate processes the workers
//! cannot share lines at all: the process model is the reference.
//!
//! One operation is one malloc, `writes` byte increments (cycling through
//! the object, each forced to memory) and one free. Verified per object
//! before it is freed: every byte holds the number of increments it
//! received (mod 256); allocations and frees balance and reported ops equal
//! counted ones (`alloc_common.rs`).

use std::sync::Arc;

use crate::{
    ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult, WorkerSlot,
    WorkerState, Workload, WorkloadInfo,
};

use super::alloc_common::{param_count, Block, Ledger, Tally, MAX_BLOCK};
use crate::config::CacheSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::params::param_corrupt;
use crate::{resolve_checked, WorkloadConfig};

pub struct CacheThrash;

/// The parameters of both false-sharing workloads.
pub(crate) fn cache_params(corrupt_help: &'static str) -> Vec<ParamSpec> {
    vec![
        ParamSpec {
            name: "size",
            default: "8",
            help: "object size, bytes (small, so several objects fit in a cache line)",
        },
        ParamSpec {
            name: "writes",
            default: "1000",
            help: "byte increments per object between its malloc and its free",
        },
        ParamSpec {
            name: "corrupt",
            default: "0",
            help: corrupt_help,
        },
    ]
}

/// The parameters of both false-sharing benchmarks (defaults filled in),
/// range-checked.
pub(crate) fn size_writes(params: &Params) -> Result<Settings, WorkloadError> {
    Ok(Settings {
        size: param_count(params, "size", MAX_BLOCK)? as usize,
        writes: param_count(params, "writes", 1 << 30)?,
        corrupt: param_corrupt(params)?,
    })
}

/// An object of `size` bytes from the process's malloc, zeroed by writing
/// (not `calloc`: the allocator's malloc path is what is measured).
// Clippy's `vec![0; n]` would be exactly the calloc this avoids.
#[allow(clippy::slow_vector_initialization)]
pub(crate) fn zeroed(size: usize) -> Box<[u8]> {
    let mut v: Vec<u8> = Vec::with_capacity(size);
    v.resize(size, 0);
    v.into_boxed_slice()
}

impl Workload for CacheThrash {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "cache_thrash",
            summary: "Hoard's active false sharing: each thread mallocs a small object, \
                      writes it many times, frees it",
            params: cache_params(
                "test-only: 1 keeps a scribbled-on object, to check that wrong results fail",
            ),
            operation: "malloc an 8 B object (default), 1000 byte increments forced to \
                        memory (default), free",
            verification: "before each free every byte holds the number of increments it \
                           received; allocations = frees per process; reported ops = counted",
            ..WorkloadInfo::timed(TimeMetric::throughput("ops/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        _ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::CacheThrash(Settings {
            size,
            writes,
            corrupt,
        }) = *config
        else {
            return Err(config.not_for("cache_thrash"));
        };
        Ok(Box::new(CacheProcess {
            size,
            writes,
            corrupt,
            ledger: Arc::new(Ledger::new("cache_thrash")),
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::CacheThrash(size_writes(&params)?))
    }
}

struct CacheProcess {
    size: usize,
    writes: u64,
    corrupt: bool,
    ledger: Arc<Ledger>,
}

impl ProcessState for CacheProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(CacheWorker::new(
            slot,
            self.size,
            self.writes,
            self.corrupt,
            self.ledger.clone(),
        )))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        self.ledger.verify(results, &Tally::default())
    }
}

/// The worker of both false-sharing workloads.
pub(crate) struct CacheWorker {
    size: usize,
    writes: u64,
    /// What byte `j` of an object holds after `writes` increments.
    want: Vec<u8>,
    pub(crate) tally: Tally,
    ops: u64,
    worker: usize,
    corrupt: bool,
    ledger: Arc<Ledger>,
}

impl CacheWorker {
    pub(crate) fn new(
        slot: WorkerSlot,
        size: usize,
        writes: u64,
        corrupt: bool,
        ledger: Arc<Ledger>,
    ) -> CacheWorker {
        let n = size as u64;
        CacheWorker {
            size,
            writes,
            want: (0..n)
                .map(|j| (writes / n + u64::from(j < writes % n)) as u8)
                .collect(),
            tally: Tally::default(),
            ops: 0,
            worker: slot.worker,
            corrupt,
            ledger,
        }
    }
}

impl WorkerState for CacheWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        for _ in 0..max_ops {
            let mut obj = zeroed(self.size);
            self.tally.allocs += 1;
            let mut j = 0;
            for _ in 0..self.writes {
                obj[j] = obj[j].wrapping_add(1);
                // Each increment must reach the object's cache line: what
                // makes a shared line ping-pong between cores.
                std::hint::black_box(&mut obj);
                j += 1;
                if j == obj.len() {
                    j = 0;
                }
            }
            self.tally.broken += u64::from(*obj != *self.want);
            drop(obj);
            self.tally.frees += 1;
            self.ops += 1;
        }
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            let b: Block = self.tally.corrupt();
            self.tally.keep(&b);
        }
        self.ledger.finish(self.worker, self.tally, self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&CacheThrash, kv).unwrap()
    }

    #[test]
    fn cache_thrash_counts_writes_and_verifies() {
        for (size, writes) in [("8", "1000"), ("3", "7"), ("64", "10")] {
            let p = CacheThrash
                .setup(&config(&[("size", size), ("writes", writes)]), &ctx(2))
                .unwrap();
            let slots = [slot(0, 2), slot(1, 2)];
            let results: Vec<_> = slots
                .iter()
                .map(|&s| {
                    let mut w = p.worker(s).unwrap();
                    w.step(3);
                    w.step(40);
                    (s, w.finish())
                })
                .collect();
            assert_eq!(results[1].1.ops, 43);
            assert_eq!(p.verify(&results), Ok(()), "size={size} writes={writes}");
        }
        let p = CacheThrash
            .setup(&config(&[("corrupt", "1")]), &ctx(1))
            .unwrap();
        let mut w = p.worker(slot(0, 1)).unwrap();
        w.step(2);
        assert!(p
            .verify(&[(slot(0, 1), w.finish())])
            .unwrap_err()
            .contains("pattern"));
    }

    #[test]
    fn cache_thrash_expected_bytes() {
        let w = CacheWorker::new(slot(0, 1), 3, 7, false, Arc::new(Ledger::new("t")));
        assert_eq!(w.want, vec![3, 2, 2]);
        let w = CacheWorker::new(slot(0, 1), 1, 300, false, Arc::new(Ledger::new("t")));
        assert_eq!(w.want, vec![44]);
    }

    #[test]
    fn cache_thrash_bad_params_name_the_parameter() {
        for (k, v) in [("size", "0"), ("writes", "0"), ("corrupt", "2")] {
            let e = testing::config(&CacheThrash, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
    }
}
