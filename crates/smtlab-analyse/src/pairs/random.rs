//! Random schedules: uniformly random perfect matchings of the programs
//! (an odd count adds an "alone" slot, `WS = 1`), drawn in seeded chunks
//! spread over every core, and the distribution of their speedup: mean,
//! min, max, percentiles and the CDF, from a fine histogram rather than 10
//! million stored values. The first draws are also kept, in order, for the
//! re-randomizing scheduler (`rerandomize`), which needs schedules of the
//! very same kind: one stream serves both.
//!
//! Reproducible: chunk `c` always holds draws `c·CHUNK ..` and draws them
//! from ChaCha8 keyed by (seed, `c`), every draw from the same slot order,
//! so which thread runs which chunk does not matter; sums are integers, exact
//! in any order. The same seed gives the same numbers on one thread or
//! sixty-four.
//!
//! Fast, because a draw reads one random cell of the matrix per pair: 10
//! million schedules of 500 programs are 2.5 billion reads. The matrix is
//! one flat table of fixed-point `WS` (an `i32` per cell: half the cache of
//! an `f64`, and integer sums have no floating-point latency chain, nor any
//! rounding), shared by every thread; and each thread draws `LANES`
//! schedules at once, so that their reads are in flight together. Uses
//! `matrix` and `progress`.

use std::sync::atomic::{AtomicU64, Ordering};

use rand::{Rng, RngCore};
use rand_chacha::ChaCha8Rng;
use smtlab_stats::{rng_for_domain, uniform_below};

use super::matrix::Matrix;
use super::progress::Progress;

/// Draws per chunk: enough that handing out chunks costs nothing, few
/// enough that 10 million draws keep every core busy to the end. A
/// multiple of [`LANES`].
const CHUNK: u64 = 50_000;

/// Schedules drawn side by side by one thread.
pub(crate) const LANES: usize = 4;

/// Bins of the speedup histogram, spread evenly between the exact worst and
/// best speedups (every schedule lies between them): percentiles are exact
/// to one bin, (best - worst) / 100 000 — for the paper's 12-26% spread,
/// 0.0014 percentage points. 800 KB of counts per thread.
pub const BINS: usize = 100_000;

/// Points of the CDF reported (and drawn) between the lowest and highest
/// speedup drawn, besides its two ends.
const CDF_POINTS: usize = 200;

/// Fixed-point scale of the table: `WS` to 10⁻⁹ (rounded: a schedule's mean
/// `WS` within 10⁻⁹ of its exact value, far below a histogram bin), for
/// every `WS` up to 4.29 (all a file may hold, `matrix.rs`); a larger `WS`
/// scales the table down so that every cell fits an `i32`.
const SCALE: f64 = 5e8;

/// The matrix as the draws read it: one flat table over the slots (the
/// "alone" slot of an odd count a row and column of 1s), each `WS` in fixed
/// point, read-only and shared by every drawing thread.
pub(crate) struct Table {
    slots: usize,
    cells: Vec<i32>,
    scale: f64,
    /// `0..slots`, where every draw starts.
    identity: Vec<u32>,
}

impl Table {
    pub(crate) fn new(m: &Matrix) -> Table {
        let n = m.len();
        let slots = n + n % 2;
        let top = m.ws.iter().flatten().copied().fold(1.0f64, f64::max);
        let scale = SCALE.min(f64::from(i32::MAX) / top);
        let one = scale.round() as i32;
        let mut cells = vec![one; slots * slots];
        for (i, row) in m.ws.iter().enumerate() {
            for (cell, &ws) in cells[i * slots..i * slots + n].iter_mut().zip(row) {
                *cell = (ws * scale).round() as i32;
            }
        }
        Table {
            slots,
            cells,
            scale,
            identity: (0..slots as u32).collect(),
        }
    }

    /// Pairs in a schedule (a program alone counts as one).
    pub(crate) fn pairs(&self) -> usize {
        self.slots / 2
    }

    /// The speedup of a schedule whose fixed-point `WS` add up to `sum`.
    fn speedup(&self, sum: i64) -> f64 {
        sum as f64 / (self.pairs() as f64 * self.scale) - 1.0
    }
}

/// A seeded stream's words read 64 at a time from an array, and bounded
/// integers drawn from half a word where that is enough: the draws' hot
/// loop then inlines its random numbers (through the generator they were
/// a call each, most of a draw's cost) and consumes half the stream.
pub(crate) struct Words {
    rng: ChaCha8Rng,
    buf: [u32; 64],
    pos: usize,
    /// The upper half of the last word, not used yet.
    half: Option<u16>,
}

impl Words {
    pub(crate) fn new(rng: ChaCha8Rng) -> Words {
        Words {
            rng,
            buf: [0; 64],
            pos: 64,
            half: None,
        }
    }

    #[inline(always)]
    fn next_u16(&mut self) -> u32 {
        match self.half.take() {
            Some(h) => u32::from(h),
            None => {
                let w = self.next_u32();
                self.half = Some((w >> 16) as u16);
                w & 0xffff
            }
        }
    }

    /// A uniform integer in `0..n`, `n > 0`: Lemire's multiply-and-reject
    /// method (as `smtlab_stats::uniform_below`, exactly unbiased) on 16
    /// bits when `n` fits them, which a slot count always does in practice
    /// (65,536 programs would be a matrix of 4 billion cells).
    #[inline(always)]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let Ok(n) = u16::try_from(n) else {
            return uniform_below(self, n);
        };
        let n = u32::from(n);
        let mut m = self.next_u16() * n;
        if m & 0xffff < n {
            // Reject the few low products that would over-represent some
            // outputs: 2^16 mod n of them.
            let threshold = (0x1_0000 - n) % n;
            while m & 0xffff < threshold {
                m = self.next_u16() * n;
            }
        }
        (m >> 16) as usize
    }

    #[cold]
    fn refill(&mut self) {
        self.rng.fill(&mut self.buf[..]);
        self.pos = 0;
    }
}

impl RngCore for Words {
    #[inline(always)]
    fn next_u32(&mut self) -> u32 {
        if self.pos == self.buf.len() {
            self.refill();
        }
        let x = self.buf[self.pos];
        self.pos += 1;
        x
    }

    fn next_u64(&mut self) -> u64 {
        u64::from(self.next_u32()) | u64::from(self.next_u32()) << 32
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for c in dst.chunks_mut(4) {
            let len = c.len();
            c.copy_from_slice(&self.next_u32().to_le_bytes()[..len]);
        }
    }
}

/// Draws uniformly random schedules from a [`Table`], [`LANES`] at a time.
pub(crate) struct Drawer<'t> {
    table: &'t Table,
    order: [Vec<u32>; LANES],
}

impl<'t> Drawer<'t> {
    pub(crate) fn new(table: &'t Table) -> Drawer<'t> {
        let identity: Vec<u32> = (0..table.slots as u32).collect();
        Drawer {
            table,
            order: std::array::from_fn(|_| identity.clone()),
        }
    }

    /// The speedups of [`LANES`] uniformly random schedules.
    pub(crate) fn draw(&mut self, rng: &mut Words) -> [f64; LANES] {
        self.draw_sums(rng).map(|x| self.table.speedup(x))
    }

    /// The fixed-point `WS` sums of [`LANES`] uniformly random schedules.
    /// Each pairs the first unpaired slot with a uniformly chosen other one,
    /// again and again: every perfect matching comes out with probability
    /// 1/(slots-1)!!, from half the random numbers a full shuffle would
    /// take. The lanes take their random numbers in turn.
    fn draw_sums(&mut self, rng: &mut Words) -> [i64; LANES] {
        let s = self.table.slots;
        let cells = &self.table.cells[..s * s];
        let [o0, o1, o2, o3] = &mut self.order;
        let (o0, o1, o2, o3) = (&mut o0[..s], &mut o1[..s], &mut o2[..s], &mut o3[..s]);
        // Slots i+1.. are the unpaired ones: slot i's partner is drawn from
        // them and its place taken by slot i+1, which leaves them. One
        // store a pair (a swap would take two, and leave an order to start
        // the next draw from, which a fresh one gives as well).
        for o in [&mut *o0, &mut *o1, &mut *o2, &mut *o3] {
            o.copy_from_slice(&self.table.identity);
        }
        let mut sum = [0i64; LANES];
        let mut i = 0;
        while i + 1 < s {
            let r = s - i - 1;
            let j = [
                i + 1 + rng.below(r),
                i + 1 + rng.below(r),
                i + 1 + rng.below(r),
                i + 1 + rng.below(r),
            ];
            let pair = |o: &mut [u32], j: usize| {
                let (a, b) = (o[i] as usize, o[j] as usize);
                o[j] = o[i + 1];
                i64::from(cells[a * s + b])
            };
            sum[0] += pair(o0, j[0]);
            sum[1] += pair(o1, j[1]);
            sum[2] += pair(o2, j[2]);
            sum[3] += pair(o3, j[3]);
            i += 2;
        }
        sum
    }
}

/// The distribution of random schedules' speedups.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomStats {
    pub trials: u64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub p05: f64,
    pub p50: f64,
    pub p95: f64,
    /// (speedup, fraction of schedules at or below it), ascending: `(lo,
    /// 0)`, then bin edges evenly spread from the lowest to the highest
    /// speedup drawn (at most 201), then `(hi, 1)`.
    pub cdf: Vec<(f64, f64)>,
}

/// The threads to use: every core this process may run on.
pub(crate) fn all_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |t| t.get())
}

/// `trials` random schedules (at least 1) of `m`, their speedup
/// distribution on a histogram over `[lo, hi]`, the exact worst and best
/// speedups; on every core.
pub fn distribution(m: &Matrix, trials: u64, seed: u64, lo: f64, hi: f64) -> RandomStats {
    distribution_on(m, trials, seed, lo, hi, all_threads())
}

/// [`distribution`] on `threads` threads (the same numbers for any count;
/// the benchmark compares one thread and all).
pub fn distribution_on(
    m: &Matrix,
    trials: u64,
    seed: u64,
    lo: f64,
    hi: f64,
    threads: usize,
) -> RandomStats {
    let table = Table::new(m);
    draw(&table, trials, 0, seed, (lo, hi), threads, &Progress::new()).0
}

/// What one thread found: its counts, extremes and exact sum, and the
/// draws it kept, by chunk.
struct Part {
    hist: Vec<u64>,
    min: f64,
    max: f64,
    sum: i128,
    kept: Vec<(u64, Vec<f64>)>,
}

/// Draws `max(trials, keep)` schedules from the one seeded stream: the
/// distribution of the first `trials` (at least 1) and the speedups of the
/// first `keep`, in order (each clamped to `[lo, hi]`, the exact worst and
/// best, which fixed-point rounding may pass by 10⁻⁹). Counts the pairs
/// drawn into `progress`.
pub(crate) fn draw(
    table: &Table,
    trials: u64,
    keep: usize,
    seed: u64,
    (lo, hi): (f64, f64),
    threads: usize,
    progress: &Progress,
) -> (RandomStats, Vec<f64>) {
    let trials = trials.max(1);
    // Exact optima found by rounded weights can be a hair out of order
    // when every schedule is within 10⁻⁹ of every other.
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    let total = trials.max(keep as u64);
    let chunks = total.div_ceil(CHUNK);
    // An all-equal matrix has lo == hi: one bin holds everything.
    let width = (hi - lo).max(f64::MIN_POSITIVE);
    let bin = |s: f64| (((s - lo) / width * BINS as f64).max(0.0) as usize).min(BINS - 1);
    let pairs = table.pairs() as u64;
    let next = AtomicU64::new(0);
    let threads = threads.clamp(1, usize::try_from(chunks).unwrap_or(usize::MAX));
    let parts: Vec<Part> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut drawer = Drawer::new(table);
                    let mut p = Part {
                        hist: vec![0; BINS],
                        min: f64::INFINITY,
                        max: f64::NEG_INFINITY,
                        sum: 0,
                        kept: Vec::new(),
                    };
                    loop {
                        let c = next.fetch_add(1, Ordering::Relaxed);
                        if c >= chunks {
                            break;
                        }
                        let mut rng = Words::new(rng_for_domain(seed, b"pairsrnd", c));
                        let first = c * CHUNK;
                        let count = CHUNK.min(total - first);
                        let mut kept = Vec::new();
                        let mut g = first;
                        while g < first + count {
                            for x in drawer.draw_sums(&mut rng) {
                                if g == first + count {
                                    break;
                                }
                                let v = table.speedup(x).clamp(lo, hi);
                                if g < trials {
                                    p.sum += i128::from(x);
                                    p.min = p.min.min(v);
                                    p.max = p.max.max(v);
                                    p.hist[bin(v)] += 1;
                                }
                                if g < keep as u64 {
                                    kept.push(v);
                                }
                                g += 1;
                            }
                        }
                        if !kept.is_empty() {
                            p.kept.push((c, kept));
                        }
                        progress.advance(count * pairs);
                    }
                    p
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a drawing thread does not panic"))
            .collect()
    });
    let mut hist = vec![0u64; BINS];
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut sum = 0i128;
    let mut kept = Vec::new();
    for p in parts {
        hist.iter_mut().zip(&p.hist).for_each(|(h, x)| *h += x);
        min = min.min(p.min);
        max = max.max(p.max);
        sum += p.sum;
        kept.extend(p.kept);
    }
    kept.sort_by_key(|&(c, _)| c);
    let kept: Vec<f64> = kept.into_iter().flat_map(|(_, v)| v).collect();
    let bin_mid = |k: usize| lo + (k as f64 + 0.5) / BINS as f64 * width;
    // The smallest value with at least a fraction q of the draws at or
    // below it (the nearest-rank percentile), to within one bin: the
    // middle of its bin, never outside what was drawn.
    let at = |q: f64| -> f64 {
        let want = ((q * trials as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (k, &c) in hist.iter().enumerate() {
            seen += c;
            if seen >= want {
                return bin_mid(k).clamp(min, max);
            }
        }
        max
    };
    // The CDF's points spread over the bins that hold draws, not over all
    // of [lo, hi]: with many programs random schedules crowd into a narrow
    // band far from the best and worst, which 200 points spread evenly over
    // [lo, hi] would cross in two or three steps.
    let mut below = Vec::with_capacity(BINS);
    let mut seen = 0u64;
    for &c in &hist {
        seen += c;
        below.push(seen);
    }
    let (first, last) = (bin(min), bin(max));
    let edge = |k: usize| lo + (k + 1) as f64 / BINS as f64 * width;
    let mut cdf = Vec::with_capacity(CDF_POINTS + 3);
    cdf.push((lo, 0.0));
    for t in 0..=CDF_POINTS {
        let k = first + (last - first) * t / CDF_POINTS;
        if cdf.last().is_some_and(|&(x, _)| x >= edge(k)) {
            continue; // fewer bins than points: each bin once
        }
        cdf.push((edge(k), below[k] as f64 / trials as f64));
    }
    if cdf.last().is_some_and(|&(x, _)| x < hi) {
        cdf.push((hi, 1.0));
    }
    // Adding up many equal values can round a hair past them.
    let mean = (sum as f64 / (trials as f64 * pairs as f64 * table.scale) - 1.0).clamp(min, max);
    let stats = RandomStats {
        trials,
        mean,
        min,
        max,
        p05: at(0.05),
        p50: at(0.50),
        p95: at(0.95),
        cdf,
    };
    (stats, kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::matching;
    use proptest::prelude::*;

    fn four() -> Matrix {
        Matrix::from_csv(include_str!("../../../../examples/pairs-4.csv")).unwrap()
    }

    #[test]
    fn every_schedule_is_equally_likely() {
        // Five programs (six slots): 15 schedules, each 1/15 of the draws.
        // Pair k of the 15 weighs 2^k, so a schedule's WS sum is the set
        // of its pairs: the speedup says which schedule was drawn.
        let pairs: Vec<(usize, usize)> = (0..6)
            .flat_map(|i| (i + 1..6).map(move |j| (i, j)))
            .collect();
        let bit = |i: usize, j: usize| {
            let (i, j) = (i.min(j), i.max(j));
            pairs.iter().position(|&p| p == (i, j)).unwrap()
        };
        let names = (0..5).map(|i| format!("p{i}")).collect();
        let ws = (0..5)
            .map(|i| {
                (0..5)
                    // The diagonal, never drawn, sets the table's scale
                    // for the largest pair, 2^14, which is alone's.
                    .map(|j| f64::from(1u32 << if i == j { 14 } else { bit(i, j) }))
                    .collect()
            })
            .collect();
        let m = Matrix::new(names, ws).unwrap();
        // The alone slot's pairs weigh 1 in a table: give them their bits
        // through the table itself instead.
        let mut table = Table::new(&m);
        for i in 0..5 {
            let v = (f64::from(1u32 << bit(i, 5)) * table.scale).round() as i32;
            table.cells[i * 6 + 5] = v;
            table.cells[5 * 6 + i] = v;
        }
        let mut d = Drawer::new(&table);
        let mut rng = Words::new(rng_for_domain(1, b"test\0\0\0\0", 0));
        let mut count = std::collections::BTreeMap::new();
        for _ in 0..150_000 / LANES {
            for speedup in d.draw(&mut rng) {
                let set = ((speedup + 1.0) * 3.0).round() as u32;
                assert_eq!(set.count_ones(), 3, "three pairs: {set:b}");
                let drawn: Vec<(usize, usize)> = (0..15)
                    .filter(|k| set >> k & 1 == 1)
                    .map(|k| pairs[k])
                    .collect();
                let mut seen = [0; 6];
                drawn.iter().for_each(|&(i, j)| {
                    seen[i] += 1;
                    seen[j] += 1;
                });
                assert_eq!(seen, [1; 6], "a perfect matching: {drawn:?}");
                *count.entry(drawn).or_insert(0u32) += 1;
            }
        }
        assert_eq!(count.len(), 15, "{count:?}");
        for (pairs, &c) in &count {
            // 10 000 expected; 5 standard deviations is about 480.
            assert!((9_500..10_500).contains(&c), "{pairs:?}: {c}");
        }
    }

    #[test]
    fn random_schedules_are_uniform_and_between_the_worst_and_the_best() {
        // Three schedules, speedups 0.45, 0.25, 0.10, each 1/3 likely.
        let m = four();
        let (b, w) = (matching::best(&m), matching::worst(&m));
        let r = distribution(&m, 300_000, 7, w.speedup, b.speedup);
        assert_eq!(r.trials, 300_000);
        assert!((r.mean - 0.8 / 3.0).abs() < 0.002, "{}", r.mean);
        assert!((r.min - 0.10).abs() < 1e-12 && (r.max - 0.45).abs() < 1e-12);
        assert!((r.p05 - 0.10).abs() < 1e-5, "{}", r.p05);
        assert!((r.p50 - 0.25).abs() < 1e-5, "{}", r.p50);
        assert!((r.p95 - 0.45).abs() < 1e-5, "{}", r.p95);
        // The CDF: 0 at the worst, a third just above it, 1 at the best.
        assert_eq!(r.cdf[0], (w.speedup, 0.0));
        assert!((r.cdf[1].1 - 1.0 / 3.0).abs() < 0.005, "{:?}", r.cdf[1]);
        let last = r.cdf.last().unwrap();
        assert!((last.0 - 0.45).abs() < 1e-12 && last.1 == 1.0, "{last:?}");
        assert!(r
            .cdf
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert!(
            (200..=CDF_POINTS + 3).contains(&r.cdf.len()),
            "{}",
            r.cdf.len()
        );
    }

    #[test]
    fn the_cdf_has_its_points_where_the_draws_are() {
        // 40 programs: random schedules fill only part of the range between
        // the exact worst and best; the CDF still has 200 points across it.
        let upper: Vec<f64> = (0..820)
            .map(|k| 0.8 + (k * 7919 % 1000) as f64 / 1000.0)
            .collect();
        let m = Matrix::from_upper(40, &upper);
        let (b, w) = (matching::best(&m), matching::worst(&m));
        let r = distribution(&m, 50_000, 1, w.speedup, b.speedup);
        // (Spread evenly over [worst, best], only about 110 would be.)
        assert!(r.max - r.min < (b.speedup - w.speedup) * 0.6, "{r:?}");
        let bin = (b.speedup - w.speedup) / BINS as f64;
        let inside = r
            .cdf
            .iter()
            .filter(|&&(x, _)| x >= r.min && x <= r.max + bin)
            .count();
        assert!(inside >= 190, "{inside} points between min and max");
        assert_eq!(r.cdf.first(), Some(&(w.speedup, 0.0)));
        assert_eq!(r.cdf.last(), Some(&(b.speedup, 1.0)));
        // At the 5th percentile, about 5% of the draws are at or below.
        let at = r.cdf.iter().find(|&&(x, _)| x >= r.p05).unwrap();
        assert!((at.1 - 0.05).abs() < 0.01, "{at:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers_on_any_number_of_threads() {
        let m = four();
        let one = distribution_on(&m, 230_001, 7, 0.10, 0.45, 1);
        for threads in [2, 3, 8] {
            assert_eq!(distribution_on(&m, 230_001, 7, 0.10, 0.45, threads), one);
        }
        assert_ne!(
            distribution_on(&m, 230_001, 8, 0.10, 0.45, 2).mean,
            one.mean
        );
        // One trial, and an all-equal matrix (lo == hi), are fine.
        let r = distribution_on(&m, 1, 7, 0.10, 0.45, 4);
        assert_eq!((r.trials, r.min, r.max, r.p50), (1, r.mean, r.mean, r.mean));
        let flat = Matrix::new(vec!["a".into(), "b".into()], vec![vec![1.2; 2]; 2]).unwrap();
        let r = distribution(&flat, 1000, 1, 0.2, 0.2);
        assert!((r.p05 - 0.2).abs() < 1e-12 && (r.p95 - 0.2).abs() < 1e-12);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        /// The exact optimum is never below the best random schedule, nor
        /// the exact worst above the worst one.
        #[test]
        fn no_random_schedule_beats_the_exact_best_or_undercuts_the_worst(
            n in 2usize..=30,
            upper in prop::collection::vec(0.0f64..3.0, 465),
            seed in 0u64..1000,
        ) {
            let m = Matrix::from_upper(n, &upper);
            let (b, w) = (matching::best(&m), matching::worst(&m));
            let r = distribution(&m, 20_000, seed, w.speedup, b.speedup);
            prop_assert!(r.max <= b.speedup + 1e-9, "random {} above the best {}", r.max, b.speedup);
            prop_assert!(r.min >= w.speedup - 1e-9, "random {} below the worst {}", r.min, w.speedup);
            prop_assert!(r.min <= r.p05 && r.p05 <= r.p50 && r.p50 <= r.p95 && r.p95 <= r.max);
            prop_assert!(r.min <= r.mean && r.mean <= r.max);
        }
    }
}
