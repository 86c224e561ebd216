//! Red-black successive over-relaxation (SOR) on an `(n+2) x (n+2)` grid
//! whose outer ring is a fixed boundary ([`boundary`]) and whose `n x n`
//! interior starts at zero.
//!
//! One iteration updates the red points (`(i + j)` even), then the black
//! points. A red point's neighbours are all black and a black point's all
//! red, so within a half-sweep no update reads another of the same
//! half-sweep: the result does not depend on the order of the updates or
//! on how the rows are split, and the parallel run equals the sequential
//! one bit for bit.
//!
//! Parallel: the grid is one allocation homed [`Home::Blocked`]; rank k
//! owns interior rows `1 + k*n/ranks .. 1 + (k+1)*n/ranks` (nearly its
//! pages) and reads one row of each neighbour. Each half-sweep ends with a
//! barrier, which is what makes a neighbour's boundary row visible under
//! scope consistency.

use std::ops::Range;

use crate::outcome::{Matrix, Outcome};
use crate::params::SorParams;
use crate::shared::{Home, Shared, Words};

/// The over-relaxation factor.
pub const OMEGA: f64 = 1.25;

/// The fixed value of boundary point `(i, j)` of a grid with `n` interior
/// points per side: a ramp from 0 at the top-left corner to 1 at the
/// bottom-right, so the solution is non-trivial everywhere.
pub fn boundary(n: usize, i: usize, j: usize) -> f64 {
    (i + j) as f64 / (2 * (n + 1)) as f64
}

/// The new value of a point from its old value and its four neighbours,
/// in this order. Both implementations call it, so they round alike.
fn relax(old: f64, up: f64, down: f64, left: f64, right: f64) -> f64 {
    let average = (up + down + left + right) * 0.25;
    old + OMEGA * (average - old)
}

/// The first column of row `i` of the given colour (`0` red, `1` black)
/// in the interior: red points have `i + j` even.
fn first_column(i: usize, colour: usize) -> usize {
    if (i + 1 + colour) % 2 == 0 {
        1
    } else {
        2
    }
}

/// The interior rows rank `rank` of `ranks` updates.
pub fn rows_of(n: usize, rank: usize, ranks: usize) -> Range<usize> {
    1 + rank * n / ranks..1 + (rank + 1) * n / ranks
}

/// The words of the one allocation [`run`] makes: the whole grid,
/// boundary included.
pub fn allocations(p: &SorParams) -> Vec<usize> {
    vec![(p.n + 2) * (p.n + 2)]
}

/// One rank's part of the run: every rank calls it. Rank 0 returns the
/// final grid and its checksum; the other ranks return NaN and no grid.
pub fn run(sh: &dyn Shared, p: &SorParams) -> Outcome {
    let (n, side) = (p.n, p.n + 2);
    let (rank, ranks) = (sh.rank(), sh.ranks());
    let g = sh.words(sh.alloc(side * side, Home::Blocked));
    let mine = rows_of(n, rank, ranks);

    // Each rank writes the boundary of its own rows (the left and right
    // columns), rank 0 the top row and the last rank the bottom row: the
    // interior starts at zero as allocated.
    for i in mine.clone() {
        g.set_f64(i * side, boundary(n, i, 0));
        g.set_f64(i * side + n + 1, boundary(n, i, n + 1));
    }
    let mut edge_rows = Vec::new();
    if rank == 0 {
        edge_rows.push(0);
    }
    if rank == ranks - 1 {
        edge_rows.push(n + 1);
    }
    for i in edge_rows {
        for j in 0..side {
            g.set_f64(i * side + j, boundary(n, i, j));
        }
    }
    sh.barrier();

    let mut work = 0u64;
    for _ in 0..p.iterations {
        for colour in 0..2 {
            for i in mine.clone() {
                let mut j = first_column(i, colour);
                while j <= n {
                    let c = i * side + j;
                    let v = relax(
                        g.f64_at(c),
                        g.f64_at(c - side),
                        g.f64_at(c + side),
                        g.f64_at(c - 1),
                        g.f64_at(c + 1),
                    );
                    g.set_f64(c, v);
                    work += 1;
                    j += 2;
                }
                sh.poll();
            }
            // Neighbours read this half-sweep's edge rows in the next one.
            sh.barrier();
        }
    }
    sh.section_end();

    let detail = format!(
        "sor n={n} iterations={}: rank {rank} of {ranks} updated rows {}..{}",
        p.iterations, mine.start, mine.end
    );
    if rank != 0 {
        return Outcome {
            checksum: f64::NAN,
            work,
            detail,
            result: None,
        };
    }
    // After the last barrier every rank's rows are visible to rank 0.
    let grid = Matrix {
        rows: side,
        cols: side,
        data: (0..side * side).map(|k| g.f64_at(k)).collect(),
    };
    Outcome {
        checksum: grid.sum(),
        work,
        detail,
        result: Some(grid),
    }
}

/// The same computation on a plain vector, sweeping all rows in order.
pub fn sequential(p: &SorParams) -> Outcome {
    let (n, side) = (p.n, p.n + 2);
    let mut g = vec![0.0f64; side * side];
    for i in 0..side {
        for j in 0..side {
            if i == 0 || j == 0 || i == n + 1 || j == n + 1 {
                g[i * side + j] = boundary(n, i, j);
            }
        }
    }
    let mut work = 0u64;
    for _ in 0..p.iterations {
        for colour in 0..2 {
            for i in 1..=n {
                let mut j = first_column(i, colour);
                while j <= n {
                    let c = i * side + j;
                    g[c] = relax(g[c], g[c - side], g[c + side], g[c - 1], g[c + 1]);
                    work += 1;
                    j += 2;
                }
            }
        }
    }
    let grid = Matrix {
        rows: side,
        cols: side,
        data: g,
    };
    Outcome {
        checksum: grid.sum(),
        work,
        detail: format!("sor n={n} iterations={} sequential", p.iterations),
        result: Some(grid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_alternate_and_cover_the_interior() {
        let n = 5;
        let mut seen = vec![0u32; (n + 2) * (n + 2)];
        for colour in 0..2 {
            for i in 1..=n {
                for j in (first_column(i, colour)..=n).step_by(2) {
                    assert_eq!((i + j) % 2, colour, "({i}, {j}) in half-sweep {colour}");
                    seen[i * (n + 2) + j] += 1;
                }
            }
        }
        let interior = (1..=n).flat_map(|i| (1..=n).map(move |j| i * (n + 2) + j));
        assert!(interior.into_iter().all(|c| seen[c] == 1));
    }

    #[test]
    fn rows_partition_the_interior() {
        for ranks in 1..=7 {
            let mut next = 1;
            for rank in 0..ranks {
                let r = rows_of(64, rank, ranks);
                assert_eq!(r.start, next);
                next = r.end;
            }
            assert_eq!(next, 65);
        }
    }

    #[test]
    fn sequential_converges_towards_the_harmonic_ramp() {
        // The ramp (i + j) / (2(n+1)) is harmonic, so it is the fixed
        // point: many sweeps must approach it.
        let p = SorParams {
            n: 8,
            iterations: 200,
        };
        let out = sequential(&p);
        let g = out.result.unwrap();
        for i in 1..=8 {
            for j in 1..=8 {
                let want = boundary(8, i, j);
                assert!((g.data[i * 10 + j] - want).abs() < 1e-9, "({i}, {j})");
            }
        }
        assert_eq!(out.work, 200 * 64);
    }
}
