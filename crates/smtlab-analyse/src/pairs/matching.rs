//! Schedules: a perfect matching of the programs (each runs with exactly
//! one other; with an odd count one runs alone, `WS = 1`), its speedup (the
//! mean `WS` of its pairs minus 1), and the exact best and worst ones.
//!
//! The best schedule is a maximum-weight perfect matching of the complete
//! graph on the programs, weights `WS(i,j)` — Edmonds' blossom algorithm,
//! from `rustworkx-core` (O(n³): 500 programs in about a second), not
//! written here. The worst is the same on weights `C - WS(i,j)`: every
//! perfect matching has the same number of pairs, so maximizing the sum of
//! `C - WS` minimizes the sum of `WS`. An odd count adds an "alone" vertex
//! joined to every program with `WS = 1`.

use petgraph::graph::UnGraph;

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

/// Integer weights for the matching (rustworkx-core's blossom algorithm
/// takes integers, which keeps it exact: no comparison of sums of floats):
/// `WS` scaled by 10⁹ and rounded. Rounding moves each pair's weight by at
/// most 0.5·10⁻⁹, so the sum of the schedule found is within
/// (pairs)·10⁻⁹ of the optimum's and its mean `WS` within 10⁻⁹ — far below
/// any measured difference (a matrix holds a few significant digits).
/// Larger values than `WS` ≤ 10⁶ scale down so that no weight passes
/// 10¹⁵ (sums of 500 of them stay far inside `i128`); the bound is then
/// relative, 10⁻¹⁵ of the largest `WS`.
const SCALE: f64 = 1e9;
const LARGEST_WEIGHT: f64 = 1e15;

/// The best schedule (highest mean WS).
pub fn best(m: &Matrix) -> Schedule {
    optimum(m, true)
}

/// The worst schedule (lowest mean WS).
pub fn worst(m: &Matrix) -> Schedule {
    optimum(m, false)
}

fn optimum(m: &Matrix, maximize: bool) -> Schedule {
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
    let ws = |i: usize, j: usize| if j == alone { 1.0 } else { m.ws[i][j] };
    // Every weight is positive (C - WS for the worst, with C above every
    // WS), so the optimum is also a maximum-weight matching; asking for
    // maximum cardinality on the complete graph makes it perfect.
    let top = m.ws.iter().flatten().copied().fold(1.0f64, f64::max) + 1.0;
    let scale = SCALE.min(LARGEST_WEIGHT / top);
    let weight = |ws: f64| -> i128 {
        let w = if maximize { ws } else { top - ws };
        (w * scale).round() as i128
    };
    let mut g: UnGraph<(), i128> = UnGraph::with_capacity(nodes, nodes * (nodes - 1) / 2);
    for _ in 0..nodes {
        g.add_node(());
    }
    for i in 0..nodes {
        for j in i + 1..nodes {
            g.add_edge((i as u32).into(), (j as u32).into(), weight(ws(i, j)));
        }
    }
    let matched = rustworkx_core::max_weight_matching::max_weight_matching(
        &g,
        true,
        |e| Ok::<i128, std::convert::Infallible>(*e.weight()),
        // Its own check of the optimum is O(n³) again; the property test
        // checks against brute force instead.
        false,
    );
    let matched = match matched {
        Ok(set) => set,
        Err(never) => match never {},
    };
    let mut pairs: Vec<(usize, usize)> = matched
        .into_iter()
        .map(|(a, b)| {
            let (a, b) = (a.min(b), a.max(b));
            if b == alone {
                (a, a)
            } else {
                (a, b)
            }
        })
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
