//! `mandel`: escape-time Mandelbrot over `[-2, 1] x [-1.5, 1.5]` on a
//! `width x height` grid (pixel centres), at most `iters` iterations of
//! `z = z^2 + c` while `|z|^2 <= 4`. Rows near the set cost up to `iters`
//! per pixel, rows far from it a few: irregular work.
//!
//! Split: bands of [`BAND`] rows are dealt from the sample's shared queue;
//! inside a process a claimed band is halved on the thread's deque down to
//! single rows, which the process's other threads may steal. One operation
//! is one row.
//!
//! Checksum: each row's `sum(count * (x + 1))` (position-weighted, so moved
//! pixels show) mixed with its row number by splitmix64, summed over rows
//! mod 2^64 (order-independent, so any split gives the same value).
//! Verified: the grand total equals `work` times a sequential run's
//! checksum, computed by rank 0 at set-up, outside the measured window (and
//! remembered per process for the same parameters). There is no shortcut to
//! the checksum of an escape-time image, and a cached value on disk could
//! go stale silently; the sequential run costs one extra instance's time
//! per sample, in one process only.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::config::MandelSettings as Settings;
use crate::error::WorkloadError;
use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, Workload, WorkloadInfo,
};
use crate::{resolve_checked, WorkloadConfig};

use super::pool::{self, Job};

/// Rows per top-level task.
pub const BAND: u32 = 4;

pub struct Mandel;

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Row `y`'s checksum (the same arithmetic as benches/c/mandel.c).
pub fn row(y: u32, w: u32, h: u32, iters: u32) -> u64 {
    let (dx, dy) = (3.0 / f64::from(w), 3.0 / f64::from(h));
    let ci = -1.5 + (f64::from(y) + 0.5) * dy;
    let mut sum = 0u64;
    for x in 0..w {
        let cr = -2.0 + (f64::from(x) + 0.5) * dx;
        let (mut zr, mut zi, mut zr2, mut zi2) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        let mut i = 0u32;
        while i < iters && zr2 + zi2 <= 4.0 {
            zi = 2.0 * zr * zi + ci;
            zr = zr2 - zi2 + cr;
            zr2 = zr * zr;
            zi2 = zi * zi;
            i += 1;
        }
        sum = sum.wrapping_add(u64::from(i).wrapping_mul(u64::from(x) + 1));
    }
    mix((u64::from(y) << 40) ^ sum)
}

/// The checksum of the whole image, sequentially.
pub fn sequential(w: u32, h: u32, iters: u32) -> u64 {
    (0..h).fold(0u64, |acc, y| acc.wrapping_add(row(y, w, h, iters)))
}

/// Checksums of whole images by (width, height, iters).
type Memo = Mutex<HashMap<(u32, u32, u32), u64>>;

fn sequential_memo(w: u32, h: u32, iters: u32) -> u64 {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    if let Some(&v) = memo.lock().expect("not poisoned").get(&(w, h, iters)) {
        return v;
    }
    let v = sequential(w, h, iters);
    memo.lock().expect("not poisoned").insert((w, h, iters), v);
    v
}

struct MandelJob {
    w: u32,
    h: u32,
    iters: u32,
}

impl Job for MandelJob {
    /// Rows `y0..y1`.
    type Task = (u32, u32);
    const NAME: &'static str = "mandel";

    fn tasks_per_instance(&self) -> u64 {
        u64::from(self.h.div_ceil(BAND))
    }
    fn top(&self, t: u64) -> (u32, u32) {
        let y0 = t as u32 * BAND;
        (y0, (y0 + BAND).min(self.h))
    }
    fn splittable(&self, r: &(u32, u32)) -> bool {
        r.1 - r.0 > 1
    }
    fn split(&self, (y0, y1): (u32, u32)) -> ((u32, u32), (u32, u32), u64) {
        let mid = y0 + (y1 - y0) / 2;
        ((y0, mid), (mid, y1), 0)
    }
    fn leaf(&self, (y, _): (u32, u32)) -> u64 {
        row(y, self.w, self.h, self.iters)
    }
    fn expected(&self) -> u64 {
        sequential_memo(self.w, self.h, self.iters)
    }
    fn describe(&self) -> String {
        format!("{}x{} image, {} iterations", self.w, self.h, self.iters)
    }
}

impl Workload for Mandel {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "mandel",
            summary: "escape-time Mandelbrot (nofib parallel mandel): irregular \
                      floating-point work, dealt in bands of rows",
            params: vec![
                ParamSpec {
                    name: "width",
                    default: "1024",
                    help: "pixels per row",
                },
                ParamSpec {
                    name: "height",
                    default: "1024",
                    help: "rows (1024x1024 at 3000 iterations: about 1.1 s on one Zen 5 core, \
                           2 s on a 2.8 GHz Ice Lake core)",
                },
                ParamSpec {
                    name: "iters",
                    default: "3000",
                    help: "most iterations per pixel",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 corrupts the checksum, to check that wrong results fail",
                },
            ],
            operation: "one row of the image",
            verification: "the checksum summed over all workers equals work x the checksum of \
                           a sequential run made at set-up",
            ..WorkloadInfo::queued(TimeMetric::throughput("rows/s"))
        }
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Mandel(settings(&params)?))
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Mandel(Settings {
            dims: [w, h, iters],
            corrupt,
        }) = *config
        else {
            return Err(config.not_for("mandel"));
        };
        pool::setup(MandelJob { w, h, iters }, ctx, corrupt)
    }
}

/// The parameters (defaults filled in), range-checked.
fn settings(params: &Params) -> Result<Settings, WorkloadError> {
    let mut dims = [0u32; 3];
    for (d, name) in dims.iter_mut().zip(["width", "height", "iters"]) {
        let v = param_u64(params, name)?;
        if v == 0 || v > 1 << 20 {
            return Err(WorkloadError::param(
                name,
                v,
                format!("expected 1..={}", 1 << 20),
            ));
        }
        *d = v as u32;
    }
    Ok(Settings {
        dims,
        corrupt: crate::params::param_corrupt(params)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::run_by_hand;

    #[test]
    fn checksum_sees_the_set() {
        // The centre pixel of a 3x3 grid is c = -0.5: inside, all iterations.
        let inside = row(1, 3, 3, 50);
        let fewer = row(1, 3, 3, 49);
        assert_ne!(inside, fewer);
        assert_ne!(sequential(16, 16, 100), sequential(16, 16, 101));
        // The value printed by benches/c/mandel.c for `64 48 300`.
        assert_eq!(sequential(64, 48, 300), 2_243_341_041_139_833_070);
    }

    #[test]
    fn parallel_checksum_equals_sequential() {
        for (w, h, it) in [("37", "29", "80"), ("8", "1", "10"), ("64", "64", "200")] {
            let r =
                run_by_hand(&Mandel, &[("width", w), ("height", h), ("iters", it)], 2, 2).unwrap();
            assert_eq!(r, Ok(()), "{w}x{h} {it}");
        }
        // And by hand: any split into rows sums to the sequential checksum.
        let job = MandelJob {
            w: 40,
            h: 30,
            iters: 100,
        };
        let by_tasks = (0..job.tasks_per_instance())
            .flat_map(|t| {
                let (a, b) = job.top(t);
                a..b
            })
            .fold(0u64, |acc, y| acc.wrapping_add(job.leaf((y, y + 1))));
        assert_eq!(by_tasks, sequential(40, 30, 100));
    }

    #[test]
    fn corrupt_fails_with_a_reason() {
        let r = run_by_hand(
            &Mandel,
            &[("width", "20"), ("height", "20"), ("corrupt", "1")],
            2,
            1,
        )
        .unwrap();
        let e = r.unwrap_err();
        assert!(e.contains("wrong result") && e.contains("20x20"), "{e}");
    }

    #[test]
    fn bad_params_name_the_parameter() {
        for (k, v) in [
            ("width", "0"),
            ("height", "x"),
            ("iters", "0"),
            ("corrupt", "3"),
        ] {
            let e = run_by_hand(&Mandel, &[(k, v)], 1, 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("--param {k}")), "{e}");
        }
    }
}
