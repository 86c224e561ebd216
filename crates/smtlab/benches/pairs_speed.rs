//! Benchmark: the pairs analysis against its targets, side by side in one
//! run (`cargo bench -p smtlab --bench pairs_speed`): the exact best
//! schedule for 26 programs (target < 10 ms) and for 500 (< 5 s), and 10
//! million random pairings of 26 programs (< 2 s on 2 cores), with the
//! machine's own ceiling for the parallel part: the same draws on one
//! thread, in the same run, so the 2-thread speedup is printed beside it.
//! Matrices are random (seeded), WS in 0.8..2.0.

mod common;

use std::time::Instant;

use smtlab_analyse::pairs::{matching, random, Matrix};

fn matrix(n: usize, seed: u64) -> Matrix {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        0.8 + (x % 1_000_000) as f64 / 1_000_000.0 * 1.2
    };
    let upper: Vec<f64> = (0..n * n).map(|_| next()).collect();
    let ws = (0..n)
        .map(|i| (0..n).map(|j| upper[i.min(j) * n + i.max(j)]).collect())
        .collect();
    Matrix::new((0..n).map(|i| format!("p{i}")).collect(), ws).expect("a valid matrix")
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "PASS"
    } else {
        "FAIL"
    }
}

fn main() {
    println!("pairs_speed: the pairs analysis against its targets");
    println!("machine: {}", common::machine());
    let m26 = matrix(26, 1);
    // Best of 5 for the small one: it is over in microseconds.
    let t26 = (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(matching::best(&m26));
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    println!(
        "exact best, 26 programs:  {:>9.3} ms (target < 10 ms)  {}",
        t26 * 1e3,
        verdict(t26 < 0.010)
    );
    let m500 = matrix(500, 2);
    let t = Instant::now();
    let b = matching::best(&m500);
    let t500 = t.elapsed().as_secs_f64();
    println!(
        "exact best, 500 programs: {:>9.3} s  (target < 5 s)    {}  (speedup {:.1}%)",
        t500,
        verdict(t500 < 5.0),
        b.speedup * 100.0
    );
    let (lo, hi) = (matching::worst(&m26).speedup, matching::best(&m26).speedup);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    // Interleaved: one thread, all threads, one thread again.
    let mut one = Vec::new();
    let mut all = Vec::new();
    for _ in 0..2 {
        let t = Instant::now();
        let r1 = random::distribution_on(&m26, 10_000_000, 3, lo, hi, 1);
        one.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let rn = random::distribution_on(&m26, 10_000_000, 3, lo, hi, threads);
        all.push(t.elapsed().as_secs_f64());
        assert_eq!(r1, rn, "the same draws on any number of threads");
    }
    let (t1, tn) = (common::median(one), common::median(all));
    println!(
        "10M random pairings, 26 programs: {tn:.3} s on {threads} threads (target < 2 s)  {}",
        verdict(tn < 2.0)
    );
    println!(
        "  the same on 1 thread: {t1:.3} s; {threads}-thread speedup {:.2}x (the machine's ceiling for {threads} threads: {threads}.00x at best)",
        t1 / tn
    );
    common::write_results(
        "pairs_speed",
        &serde_json::json!({
            "exact_26_s": t26, "exact_500_s": t500,
            "random_10m_s": tn, "random_10m_one_thread_s": t1, "threads": threads,
        }),
    );
}
