//! Schedules: a perfect matching of the programs (each runs with exactly
//! one other; with an odd count one runs alone, `WS = 1`), its speedup (the
//! mean `WS` of its pairs minus 1), and the exact best and worst ones.
//!
//! The best schedule is a maximum-weight perfect matching of the complete
//! graph on the programs, weights `WS(i,j)`: Edmonds' blossom algorithm
//! (`blossom`, O(n³), on the matrix itself). The worst is the same on
//! weights `-WS(i,j)`: every perfect matching has the same number of pairs,
//! so the heaviest on `-WS` is the lightest on `WS`. An odd count adds an
//! "alone" vertex joined to every program with `WS = 1`. Uses `matrix` and
//! `blossom`.

use super::blossom::max_weight_perfect_matching;
use super::matrix::Matrix;

/// A schedule: its pairs (`(i, i)`: program `i` alone) and its speedup.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub pairs: Vec<(usize, usize)>,
    pub speedup: f64,
}

/// The speedup of `pairs`: mean `WS` (alone: 1) minus 1.
pub fn speedup(m: &Matrix, pairs: &[(usize, usize)]) -> f64 {
    if pairs.is_empty() {
        return 0.0;
    }
    let sum: f64 = pairs
        .iter()
        .map(|&(i, j)| if i == j { 1.0 } else { m.ws[i][j] })
        .sum();
    sum / pairs.len() as f64 - 1.0
}

/// Integer weights for the matching (integers keep it exact: no
/// comparison of sums of floats): `WS` scaled by 10⁹ and rounded. Rounding
/// moves each pair's weight by at most 0.5·10⁻⁹, so the sum of the schedule
/// found is within (pairs)·10⁻⁹ of the optimum's and its mean `WS` within
/// 10⁻⁹: far below any measured difference (a matrix holds a few
/// significant digits). A matrix with a `WS` above 4.29 (none read from a
/// file: see `matrix.rs`) scales down so that no weight passes 2³², which
/// keeps every dual far inside `i64`; the bound is then relative, 2⁻³³ of
/// the largest `WS`.
const SCALE: f64 = 1e9;
const LARGEST_WEIGHT: f64 = 4_294_967_296.0;

/// The best schedule (highest mean WS).
pub fn best(m: &Matrix) -> Schedule {
    optimum(m, true, &mut |_| {})
}

/// The worst schedule (lowest mean WS).
pub fn worst(m: &Matrix) -> Schedule {
    optimum(m, false, &mut |_| {})
}

/// The best (`maximize`) or worst schedule; `stage` hears how many
/// programs are still unpaired after each step of the matching.
pub(crate) fn optimum(m: &Matrix, maximize: bool, stage: &mut dyn FnMut(usize)) -> Schedule {
    let n = m.len();
    if n <= 1 {
        let pairs: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
        return Schedule {
            speedup: speedup(m, &pairs),
            pairs,
        };
    }
    // An odd count gets one more vertex, "alone", joined to every program
    // with WS = 1: a perfect matching of n + 1 vertices is a schedule.
    let alone = n;
    let nodes = n + n % 2;
    let top = m.ws.iter().flatten().copied().fold(1.0f64, f64::max);
    let scale = SCALE.min(LARGEST_WEIGHT / top);
    let sign = if maximize { 1.0 } else { -1.0 };
    let mut w = vec![0i64; nodes * nodes];
    for i in 0..nodes {
        for j in 0..nodes {
            if i != j {
                let ws = if i == alone || j == alone {
                    1.0
                } else {
                    m.ws[i][j]
                };
                w[i * nodes + j] = (sign * ws * scale).round() as i64;
            }
        }
    }
    let mate = max_weight_perfect_matching(nodes, &w, stage);
    drop(w);
    let mut pairs: Vec<(usize, usize)> = mate
        .iter()
        .enumerate()
        .filter(|&(a, &b)| a < b)
        .map(|(a, &b)| if b == alone { (a, a) } else { (a, b) })
        .collect();
    pairs.sort_unstable();
    debug_assert_eq!(pairs.len(), nodes / 2, "a perfect matching");
    Schedule {
        speedup: speedup(m, &pairs),
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every perfect matching of `0..n` (an odd count: one alone), by
    /// recursion on the lowest unmatched program.
    fn all_schedules(n: usize) -> Vec<Vec<(usize, usize)>> {
        fn go(
            left: &[usize],
            odd_left: bool,
            out: &mut Vec<Vec<(usize, usize)>>,
            cur: &mut Vec<(usize, usize)>,
        ) {
            let Some((&first, rest)) = left.split_first() else {
                out.push(cur.clone());
                return;
            };
            if odd_left {
                cur.push((first, first));
                go(rest, false, out, cur);
                cur.pop();
            }
            for k in 0..rest.len() {
                let mut others = rest.to_vec();
                let partner = others.remove(k);
                cur.push((first, partner));
                go(&others, odd_left, out, cur);
                cur.pop();
            }
        }
        let mut out = Vec::new();
        let all: Vec<usize> = (0..n).collect();
        go(&all, n % 2 == 1, &mut out, &mut Vec::new());
        out
    }

    fn matrix(n: usize, upper: &[f64]) -> Matrix {
        Matrix::from_upper(n, upper)
    }

    /// Every program exactly once; with an odd count, one alone.
    fn is_a_schedule(n: usize, pairs: &[(usize, usize)]) -> bool {
        let mut seen = vec![0; n];
        for &(i, j) in pairs {
            seen[i] += 1;
            if i != j {
                seen[j] += 1;
            }
        }
        seen.iter().all(|&c| c == 1) && pairs.iter().filter(|(i, j)| i == j).count() == n % 2
    }

    #[test]
    fn a_four_program_matrix_has_the_optimum_a_person_checks_by_hand() {
        // examples/pairs-4.csv. Four programs have three schedules:
        //   a+b (1.5) with c+d (1.4): mean WS 1.45, speedup 45%, the best;
        //   a+c (1.2) with b+d (1.3): 1.25, 25%;
        //   a+d (1.1) with b+c (1.1): 1.10, 10%, the worst.
        let m = Matrix::from_csv(include_str!("../../../../examples/pairs-4.csv")).unwrap();
        let b = best(&m);
        assert_eq!(b.pairs, [(0, 1), (2, 3)]);
        assert!((b.speedup - 0.45).abs() < 1e-12, "{}", b.speedup);
        let w = worst(&m);
        assert_eq!(w.pairs, [(0, 3), (1, 2)]);
        assert!((w.speedup - 0.10).abs() < 1e-12, "{}", w.speedup);
    }

    #[test]
    fn an_odd_count_leaves_the_program_alone_that_costs_least() {
        // x+y gain a lot; z gains nothing with anyone (WS 0.9 < 1): alone.
        let m = matrix(3, &[1.0, 1.6, 0.9, 1.0, 0.9, 1.0]);
        assert_eq!(best(&m).pairs, [(0, 1), (2, 2)]);
        assert!((best(&m).speedup - 0.3).abs() < 1e-12);
        // The worst pairs z with one of them: (0.9 + 1) / 2 - 1.
        assert!((worst(&m).speedup - -0.05).abs() < 1e-12);
        let one = matrix(1, &[1.7]);
        assert_eq!(best(&one).pairs, [(0, 0)]);
        assert_eq!(best(&one).speedup, 0.0);
    }

    #[test]
    fn huge_values_do_not_overflow_the_integer_weights() {
        let m = matrix(4, &[1.0, 1e300, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0]);
        assert_eq!(best(&m).pairs, [(0, 1), (2, 3)]);
        assert_eq!(worst(&m).pairs.len(), 2);
    }

    /// The optimum by rustworkx-core's general-graph blossom algorithm
    /// (what this module used before its own): on `C - WS` for the worst,
    /// an "alone" vertex for an odd count.
    fn rustworkx_optimum(m: &Matrix, maximize: bool) -> f64 {
        use petgraph::graph::UnGraph;
        let n = m.len();
        let nodes = n + n % 2;
        let top = m.ws.iter().flatten().copied().fold(1.0f64, f64::max) + 1.0;
        let ws = |i: usize, j: usize| if j == n { 1.0 } else { m.ws[i][j] };
        let mut g: UnGraph<(), i128> = UnGraph::default();
        for _ in 0..nodes {
            g.add_node(());
        }
        for i in 0..nodes {
            for j in i + 1..nodes {
                let w = if maximize { ws(i, j) } else { top - ws(i, j) };
                g.add_edge(
                    (i as u32).into(),
                    (j as u32).into(),
                    (w * 1e9).round() as i128,
                );
            }
        }
        let matched = rustworkx_core::max_weight_matching::max_weight_matching(
            &g,
            true,
            |e| Ok::<i128, std::convert::Infallible>(*e.weight()),
            false,
        )
        .unwrap_or_else(|never| match never {});
        let pairs: Vec<(usize, usize)> = matched
            .into_iter()
            .map(|(a, b)| {
                let (a, b) = (a.min(b), a.max(b));
                if b == n {
                    (a, a)
                } else {
                    (a, b)
                }
            })
            .collect();
        assert!(is_a_schedule(n, &pairs));
        speedup(m, &pairs)
    }

    #[test]
    fn the_optimum_agrees_with_rustworkx_beyond_brute_force() {
        // Too many programs for brute force: an independent implementation
        // instead, on tenths (many ties, many blossoms) and on thousandths,
        // even and odd counts.
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for (n, levels) in [(40, 31), (41, 31), (90, 1201), (121, 31), (150, 1201)] {
            let upper: Vec<f64> = (0..n * (n + 1) / 2)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let step = if levels == 31 { 10.0 } else { 1000.0 };
                    (x % levels) as f64 / step
                })
                .collect();
            let m = matrix(n, &upper);
            for maximize in [true, false] {
                let ours = optimum(&m, maximize, &mut |_| {});
                let theirs = rustworkx_optimum(&m, maximize);
                assert!(
                    (ours.speedup - theirs).abs() < 1e-9,
                    "n {n}, maximize {maximize}: {} against rustworkx's {theirs}",
                    ours.speedup
                );
                assert!(is_a_schedule(n, &ours.pairs), "n {n}: {:?}", ours.pairs);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]
        /// Every n from 1 to 12 in each case, on values with many ties
        /// (tenths) and on values with none.
        #[test]
        fn the_optimum_is_brute_force_for_every_n_up_to_12(
            tenths in prop::collection::vec(0u32..=30, 78),
            reals in prop::collection::vec(0.0f64..3.0, 78),
        ) {
            let tenths: Vec<f64> = tenths.iter().map(|&t| f64::from(t) / 10.0).collect();
            for upper in [&tenths, &reals] {
                for n in 1..=12 {
                    let m = matrix(n, upper);
                    let sp: Vec<f64> = all_schedules(n).iter().map(|s| speedup(&m, s)).collect();
                    let hi = sp.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let lo = sp.iter().copied().fold(f64::INFINITY, f64::min);
                    let (b, w) = (best(&m), worst(&m));
                    prop_assert!((b.speedup - hi).abs() < 1e-9, "n {n}: best {} vs brute force {hi}", b.speedup);
                    prop_assert!((w.speedup - lo).abs() < 1e-9, "n {n}: worst {} vs brute force {lo}", w.speedup);
                    prop_assert!(is_a_schedule(n, &b.pairs), "n {n}: {:?}", b.pairs);
                    prop_assert!(is_a_schedule(n, &w.pairs), "n {n}: {:?}", w.pairs);
                    prop_assert_eq!(b.speedup, speedup(&m, &b.pairs));
                }
            }
        }
    }
}
