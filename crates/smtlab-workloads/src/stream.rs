//! `stream`: the STREAM triad `a[i] = b[i] + s*c[i]` over f64 arrays, to
//! measure memory bandwidth as STREAM and `likwid-bench -t stream` do.
//!
//! Every worker owns its three arrays, allocated and first touched in
//! [`ProcessState::worker`] on the worker's own pinned thread, so on a NUMA
//! machine they live on its node (as likwid-bench's per-thread streams do).
//! Nothing is shared between workers: the thread and process models do the
//! same memory traffic, and any difference between them is the machine's.
//!
//! One operation is one block of [`ELEMS_PER_OP`] elements of each array,
//! taken cyclically through the arrays, rather than one whole pass: a pass
//! over the default arrays takes some 20 ms, far longer than the
//! millisecond a `step` may take, while a block takes about a microsecond.
//!
//! Bytes are counted as STREAM counts them for triad: 24 per element (two
//! 8-byte reads and one 8-byte write). The write-allocate read of `a` that
//! ordinary stores cause (the line is read into the cache before it is
//! overwritten) is *not* counted, as STREAM and likwid-bench's "MByte/s"
//! do not; the DRAM traffic is therefore 4/3 of the reported figure.
//!
//! Verification is exact. `b` and `c` hold small integers known per index
//! and the scalar of pass `p` is the small integer `scalar(p)`, so every
//! result is exact in f64. After the window every element of `a` is
//! checked against what the reported number of operations implies: blocks
//! written `k > 0` times must hold `b + scalar(k-1)*c`, blocks never
//! written must still hold the sentinel -1. A block skipped, done twice or
//! computed wrong, or an operation count that does not match the passes
//! made, shows up as a wrong element.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::config::StreamSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::{
    param_bytes, param_corrupt, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric,
    WorkerResult, WorkerSlot, WorkerState, Workload, WorkloadInfo,
};
use crate::{resolve_checked, WorkloadConfig};

/// Elements of each array one operation processes (8 KiB of each array):
/// small enough that an operation takes about a microsecond, large enough
/// that the per-block bookkeeping is invisible next to the loop.
pub const ELEMS_PER_OP: usize = 1024;
/// Bytes one operation moves, counted as STREAM counts triad: 2 reads and
/// 1 write of 8 bytes per element, no write-allocate.
pub const BYTES_PER_OP: u64 = 3 * 8 * ELEMS_PER_OP as u64;
/// What `a` holds before it is written: no `b + s*c` can be negative.
const SENTINEL: f64 = -1.0;

fn b_of(i: usize) -> f64 {
    (i & 0xfff) as f64
}

fn c_of(i: usize) -> f64 {
    (i.wrapping_mul(7) & 0x3ff) as f64
}

/// The scalar of pass `p` (1..=1024): it changes from pass to pass so that
/// `a` records how many passes each block saw; every `b + s*c` stays below
/// 2^21, exact in f64.
fn scalar(pass: u64) -> f64 {
    (pass % 1024 + 1) as f64
}

pub struct Stream;

impl Workload for Stream {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "stream",
            summary: "STREAM triad a[i] = b[i] + s*c[i] on per-worker f64 arrays: memory bandwidth",
            params: vec![
                ParamSpec {
                    name: "size",
                    // 3 x 128 MiB: each array is 4x a 32 MiB last-level
                    // cache, STREAM's own rule, so no pass finds data left
                    // in the cache by the previous one.
                    default: "384MiB",
                    help: "bytes of the three arrays together, per worker (K/M/G suffixes are \
                           binary); a multiple of 24 KiB. Keep each array at least 4x the \
                           last-level cache to measure memory rather than cache",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 alters one element of a[] before the check, to check \
                           that wrong results fail",
                },
            ],
            operation: "triad over 1024 elements (8 KiB) of each array, cyclically: 24 KiB \
                        counted (2 reads + 1 write per element; write-allocate not counted, \
                        as in STREAM)",
            verification: "after the window every element of a[] is checked exactly: blocks \
                           written k times hold b + s(k-1)*c for the pass scalar s, unwritten \
                           blocks the sentinel; this also checks the reported operation count",
            ..WorkloadInfo::timed(TimeMetric::Throughput {
                name: "bandwidth",
                unit: "GB/s",
                scale: BYTES_PER_OP as f64 / 1e9,
            })
        }
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Stream(settings(&params)?))
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        _ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Stream(Settings { blocks, corrupt }) = *config else {
            return Err(config.not_for("stream"));
        };
        Ok(Box::new(StreamProcess {
            blocks,
            corrupt,
            problems: Arc::new(Mutex::new(BTreeMap::new())),
        }))
    }
}

/// The parameters (defaults filled in), range-checked.
fn settings(params: &Params) -> Result<Settings, WorkloadError> {
    let size = param_bytes(params, "size")?;
    let unit = 3 * 8 * ELEMS_PER_OP as u64;
    if size < unit || size % unit != 0 {
        return Err(WorkloadError::param(
            "size",
            &params["size"],
            format!(
                "expected a positive multiple of {} KiB (three arrays of whole 8 KiB blocks)",
                unit >> 10
            ),
        ));
    }
    Ok(Settings {
        blocks: size / unit,
        corrupt: param_corrupt(params)?,
    })
}

struct StreamProcess {
    /// Blocks per array.
    blocks: u64,
    corrupt: bool,
    /// What each worker's check found wrong, by worker number: the check
    /// needs the arrays, which only the worker has, so it runs in `finish`
    /// and leaves its findings here for `verify`.
    problems: Arc<Mutex<BTreeMap<usize, String>>>,
}

impl StreamProcess {
    fn make_worker(&self, slot: WorkerSlot) -> StreamWorker {
        // Built element by element on this (pinned) thread: the writes are
        // the first touch of every page.
        let n = self.blocks as usize * ELEMS_PER_OP;
        // b and c start SKEW and 2 SKEW elements into their buffers: large
        // allocations are page-aligned alike, and a[i], b[i], c[i] at the
        // same offset in a page make loads wait on the store to a[i] that
        // aliases them (4K aliasing), as STREAM's OFFSET padding avoids.
        StreamWorker {
            a: vec![SENTINEL; n],
            b: std::iter::repeat_n(0.0, SKEW)
                .chain((0..n).map(b_of))
                .collect(),
            c: std::iter::repeat_n(0.0, 2 * SKEW)
                .chain((0..n).map(c_of))
                .collect(),
            blocks: self.blocks,
            cursor: 0,
            reported: 0,
            corrupt: self.corrupt,
            worker: slot.worker,
            problems: self.problems.clone(),
        }
    }
}

impl ProcessState for StreamProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(self.make_worker(slot)))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        let problems = self.problems.lock().expect("not poisoned");
        for (slot, r) in results {
            if let Some(p) = problems.get(&slot.worker) {
                return Err(p.clone().into());
            }
            if r.checksum != 0 {
                return Err(format!(
                    "stream worker {}: {} wrong elements of a[] after {} ops",
                    slot.worker, r.checksum, r.ops
                )
                .into());
            }
            if let Some(q) = slot.quota {
                if r.ops != q {
                    return Err(format!(
                        "stream worker {}: did {} ops, its quota was {q}",
                        slot.worker, r.ops
                    )
                    .into());
                }
            }
        }
        Ok(())
    }
}

struct StreamWorker {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    blocks: u64,
    /// Blocks processed, by the loop itself (block `cursor % blocks` of pass
    /// `cursor / blocks` is next).
    cursor: u64,
    /// Operations reported to the worker loop; the check derives what `a` must
    /// hold from this, not from `cursor`.
    reported: u64,
    corrupt: bool,
    worker: usize,
    problems: Arc<Mutex<BTreeMap<usize, String>>>,
}

/// Elements of padding in front of `b` (and twice that in front of `c`):
/// 1 KiB plus a line, so the three streams never share a page offset.
const SKEW: usize = 136;

/// The kernel: `a = b + s*c`. Plain indexing over slices cut to one
/// length: LLVM hoists the bounds checks and emits packed loads, multiplies,
/// adds and stores (a zip over 64-byte line structs was vectorised across
/// lines instead, with one scalar load per element, at half the speed in
/// cache). Unaligned packed moves cost nothing extra at the 16-byte
/// alignment malloc gives.
#[inline]
fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    let n = a.len();
    let (b, c) = (&b[..n], &c[..n]);
    for i in 0..n {
        a[i] = b[i] + s * c[i];
    }
}

impl WorkerState for StreamWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        for _ in 0..max_ops {
            let block = (self.cursor % self.blocks) as usize;
            let s = scalar(self.cursor / self.blocks);
            let r = block * ELEMS_PER_OP..(block + 1) * ELEMS_PER_OP;
            let (rb, rc) = (r.start + SKEW, r.start + 2 * SKEW);
            triad(
                &mut self.a[r.clone()],
                &self.b[rb..rb + ELEMS_PER_OP],
                &self.c[rc..rc + ELEMS_PER_OP],
                s,
            );
            self.cursor += 1;
        }
        self.reported += max_ops;
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if self.corrupt {
            self.a[0] += 1.0;
        }
        let ops = self.reported;
        let (full, rest) = (ops / self.blocks, ops % self.blocks);
        let mut wrong = 0u64;
        let mut first = None;
        for (i, &got) in self.a.iter().enumerate() {
            let block = (i / ELEMS_PER_OP) as u64;
            let want = match full + u64::from(block < rest) {
                0 => SENTINEL,
                t => b_of(i) + scalar(t - 1) * c_of(i),
            };
            if got != want {
                wrong += 1;
                first.get_or_insert((i, got, want));
            }
        }
        if let Some((i, got, want)) = first {
            self.problems.lock().expect("not poisoned").insert(
                self.worker,
                format!(
                    "stream worker {}: {wrong} of {} elements of a[] wrong after {ops} ops \
                     (first: a[{i}] = {got}, expected {want})",
                    self.worker,
                    self.a.len()
                ),
            );
        }
        WorkerResult {
            ops,
            checksum: wrong,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn params(kv: &[(&str, &str)]) -> Params {
        testing::params(&Stream.info(), kv).unwrap()
    }

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&Stream, kv).unwrap()
    }

    #[test]
    fn stream_triad_computes_b_plus_s_c() {
        // An odd length exercises the vector loop's scalar tail.
        let b: Vec<f64> = (0..37).map(b_of).collect();
        let c: Vec<f64> = (0..37).map(c_of).collect();
        let mut a = vec![SENTINEL; 37];
        triad(&mut a, &b, &c, 3.0);
        for (i, &x) in a.iter().enumerate() {
            assert_eq!(x, b_of(i) + 3.0 * c_of(i));
        }
    }

    #[test]
    fn stream_sizes_parse_with_binary_suffixes() {
        for (v, want) in [
            ("24576", 24576),
            ("24K", 24 << 10),
            ("384MiB", 384 << 20),
            ("1g", 1 << 30),
            ("1_024", 1024),
        ] {
            assert_eq!(param_bytes(&params(&[("size", v)]), "size").unwrap(), want);
        }
        for v in ["12MB", "x", "-1K", ""] {
            let e = param_bytes(&params(&[("size", v)]), "size").unwrap_err();
            assert!(e.to_string().contains("--param size="), "{e}");
        }
    }

    #[test]
    fn stream_bad_params_name_the_parameter() {
        for (k, v) in [
            ("size", "0"),
            ("size", "12K"),
            ("size", "25000"),
            ("size", "12MB"),
            ("corrupt", "2"),
        ] {
            let e = testing::config(&Stream, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
        assert!(Stream.setup(&config(&[("size", "48K")]), &ctx(1)).is_ok());
    }

    /// Partial passes, whole passes, and passes wrapping the scalar all
    /// check out; the worker loop is imitated by hand.
    #[test]
    fn stream_two_workers_by_hand_verify() {
        let p = Stream.setup(&config(&[("size", "72K")]), &ctx(2)).unwrap();
        for ops in [0u64, 1, 2, 3, 7, 3 * 1025 + 2] {
            let slots = [slot(0, 2), slot(1, 2)];
            let results: Vec<_> = slots
                .iter()
                .map(|&s| {
                    let mut w = p.worker(s).unwrap();
                    let mut done = 0;
                    while done < ops {
                        done += w.step((ops - done).min(5));
                    }
                    (s, w.finish())
                })
                .collect();
            assert_eq!(results[0].1.ops, ops);
            assert_eq!(p.verify(&results), Ok(()), "ops={ops}");
        }
    }

    #[test]
    fn stream_wrong_op_count_or_corrupt_fails() {
        let p = StreamProcess {
            blocks: 3,
            corrupt: false,
            problems: Arc::new(Mutex::new(BTreeMap::new())),
        };
        let s = slot(0, 1);
        // Work done but one op fewer reported: the last block holds a
        // result the count does not explain.
        let mut w = p.make_worker(s);
        w.step(5);
        w.reported -= 1;
        let r = w.finish();
        assert_ne!(r.checksum, 0);
        assert!(p
            .verify(&[(s, r)])
            .unwrap_err()
            .contains("wrong after 4 ops"));

        let p = Stream
            .setup(&config(&[("size", "72K"), ("corrupt", "1")]), &ctx(1))
            .unwrap();
        let mut w = p.worker(s).unwrap();
        w.step(4);
        let e = p.verify(&[(s, w.finish())]).unwrap_err();
        assert!(
            e.contains("1 of 3072 elements") && e.contains("a[0]"),
            "{e}"
        );
    }

    #[test]
    fn stream_quota_is_checked() {
        let p = Stream.setup(&config(&[("size", "24K")]), &ctx(1)).unwrap();
        let s = WorkerSlot {
            quota: Some(3),
            ..slot(0, 1)
        };
        let mut w = p.worker(s).unwrap();
        w.step(2);
        assert!(p.verify(&[(s, w.finish())]).unwrap_err().contains("quota"));
    }
}
