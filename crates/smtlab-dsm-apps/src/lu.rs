//! Blocked right-looking LU factorisation without pivoting, SPLASH-2 LU
//! style, of a seeded diagonally dominant matrix ([`element`]), in place:
//! afterwards the strict lower triangle holds L (unit diagonal implied)
//! and the upper triangle U.
//!
//! The `n x n` matrix is cut into `b x b` blocks, `nb = n / b` per side.
//! Step k of `nb`: the owner of diagonal block (k,k) factors it; barrier;
//! the owners of the perimeter blocks (k,J) and (I,k), I,J > k, solve them
//! against it; barrier; the owners of the interior blocks (I,J), I,J > k,
//! subtract (I,k) x (k,J); barrier.
//!
//! Ownership is 2-D cyclic over a `pr x pc` grid of ranks ([`rank_grid`]):
//! block (I,J) belongs to rank `(I mod pr) * pc + (J mod pc)`, which
//! spreads every step's work over all ranks. Storage matches ownership:
//! each block is `b*b` contiguous words (whole pages when `b*b` is a
//! multiple of 512), and rank r's blocks, in row-major block order, form
//! one allocation homed at r ([`Home::Rank`]); so a rank writes only pages
//! it is home of and fetches just the diagonal and perimeter blocks it
//! reads.
//!
//! Every element sees the same floating-point operations in the same order
//! as in the unblocked textbook loop ([`sequential`]): updates by pivot
//! m = 0, 1, ... one multiply-subtract at a time, then the division by the
//! pivot for an element of L. So the parallel result equals the sequential
//! one exactly.

use crate::outcome::{Matrix, Outcome};
use crate::params::LuParams;
use crate::shared::{Home, Shared, Words};

/// Element (i, j) of the input matrix of order `n` for `seed`: uniform in
/// [-1, 1) off the diagonal, `n + [0, 1)` on it, so the matrix is strictly
/// diagonally dominant and LU without pivoting is stable. A hash of the
/// position, so each rank makes its own blocks without a shared stream.
pub fn element(seed: u64, n: usize, i: usize, j: usize) -> f64 {
    let x = splitmix(splitmix(seed) ^ (i * n + j) as u64);
    let unit = (x >> 11) as f64 / (1u64 << 53) as f64;
    if i == j {
        n as f64 + unit
    } else {
        2.0 * unit - 1.0
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `pr x pc` grid of ranks (`pr * pc = ranks`, `pr <= pc`, as square
/// as the divisors of `ranks` allow).
pub fn rank_grid(ranks: usize) -> (usize, usize) {
    let pr = (1..=ranks)
        .take_while(|d| d * d <= ranks)
        .filter(|d| ranks % d == 0)
        .last()
        .unwrap_or(1);
    (pr, ranks / pr)
}

/// Where every block lives: its owner and its slot in the owner's
/// allocation. The same on every rank.
struct Layout {
    nb: usize,
    b: usize,
    owner: Vec<usize>,
    slot: Vec<usize>,
    /// Blocks per rank.
    count: Vec<usize>,
}

impl Layout {
    fn new(nb: usize, b: usize, ranks: usize) -> Layout {
        let (pr, pc) = rank_grid(ranks);
        let mut owner = Vec::with_capacity(nb * nb);
        let mut slot = Vec::with_capacity(nb * nb);
        let mut count = vec![0; ranks];
        for bi in 0..nb {
            for bj in 0..nb {
                let r = (bi % pr) * pc + bj % pc;
                owner.push(r);
                slot.push(count[r]);
                count[r] += 1;
            }
        }
        Layout {
            nb,
            b,
            owner,
            slot,
            count,
        }
    }

    fn owner(&self, bi: usize, bj: usize) -> usize {
        self.owner[bi * self.nb + bj]
    }

    /// The first word of block (bi, bj) in its owner's allocation.
    fn start(&self, bi: usize, bj: usize) -> usize {
        self.slot[bi * self.nb + bj] * self.b * self.b
    }
}

/// The words of each rank's allocation, in rank order, as [`run`] makes
/// them (a rank without blocks still gets one word). Counted without the
/// layout's tables: the plan sizes every point's region with it, up to
/// 64 ranks of a million blocks.
pub fn allocations(p: &LuParams, ranks: usize) -> Vec<usize> {
    let nb = p.n / p.block;
    let (pr, pc) = rank_grid(ranks);
    // Rank r owns the blocks of rows I = r / pc (mod pr) and columns
    // J = r % pc (mod pc).
    let of = |k: usize, every: usize| nb.saturating_sub(k).div_ceil(every);
    (0..ranks)
        .map(|r| (of(r / pc, pr) * of(r % pc, pc) * p.block * p.block).max(1))
        .collect()
}

/// The shared blocks: one allocation per rank.
struct Blocks<'a> {
    layout: Layout,
    parts: Vec<&'a [std::sync::atomic::AtomicU64]>,
}

impl Blocks<'_> {
    fn words(&self, bi: usize, bj: usize) -> &[std::sync::atomic::AtomicU64] {
        let bb = self.layout.b * self.layout.b;
        let start = self.layout.start(bi, bj);
        &self.parts[self.layout.owner(bi, bj)][start..start + bb]
    }

    /// A private copy of a block, so the kernels run on plain `f64`s.
    fn read(&self, bi: usize, bj: usize) -> Vec<f64> {
        let w = self.words(bi, bj);
        (0..w.len()).map(|k| w.f64_at(k)).collect()
    }

    fn write(&self, bi: usize, bj: usize, data: &[f64]) {
        let w = self.words(bi, bj);
        for (k, &v) in data.iter().enumerate() {
            w.set_f64(k, v);
        }
    }
}

/// Factor a diagonal block in place: unit-lower L below, U on and above
/// the diagonal. Returns the operations done.
fn factor_diagonal(a: &mut [f64], b: usize) -> u64 {
    let mut ops = 0;
    for m in 0..b {
        let pivot = a[m * b + m];
        for i in m + 1..b {
            a[i * b + m] /= pivot;
            let l = a[i * b + m];
            for j in m + 1..b {
                a[i * b + j] -= l * a[m * b + j];
            }
            ops += 1 + (b - m - 1) as u64;
        }
    }
    ops
}

/// A perimeter block right of the diagonal, (k, J): A := L⁻¹ A with the
/// unit-lower L of the factored diagonal block `d`.
fn solve_right(d: &[f64], a: &mut [f64], b: usize) -> u64 {
    let mut ops = 0;
    for m in 0..b {
        for i in m + 1..b {
            let l = d[i * b + m];
            for j in 0..b {
                a[i * b + j] -= l * a[m * b + j];
            }
            ops += b as u64;
        }
    }
    ops
}

/// A perimeter block below the diagonal, (I, k): A := A U⁻¹ with the
/// upper U of the factored diagonal block `d`.
fn solve_below(d: &[f64], a: &mut [f64], b: usize) -> u64 {
    let mut ops = 0;
    for m in 0..b {
        let pivot = d[m * b + m];
        for i in 0..b {
            a[i * b + m] /= pivot;
            let l = a[i * b + m];
            for j in m + 1..b {
                a[i * b + j] -= l * d[m * b + j];
            }
            ops += 1 + (b - m - 1) as u64;
        }
    }
    ops
}

/// An interior block: A -= L U, each element's products subtracted one by
/// one in order of m.
fn update_interior(l: &[f64], u: &[f64], a: &mut [f64], b: usize) -> u64 {
    for (i, row) in a.chunks_exact_mut(b).enumerate() {
        for (m, u_row) in u.chunks_exact(b).enumerate() {
            let lim = l[i * b + m];
            for (x, &y) in row.iter_mut().zip(u_row) {
                *x -= lim * y;
            }
        }
    }
    (b * b * b) as u64
}

/// One rank's part of the factorisation: every rank calls it. Rank 0
/// returns the factored matrix (row-major) and its checksum; the other
/// ranks return NaN and no matrix.
pub fn run(sh: &dyn Shared, p: &LuParams) -> Outcome {
    let (n, b) = (p.n, p.block);
    let nb = n / b;
    let (rank, ranks) = (sh.rank(), sh.ranks());
    let layout = Layout::new(nb, b, ranks);
    // An empty allocation would be odd for a DSM: a rank without blocks
    // (more ranks than blocks) still gets one word (`allocations`).
    let parts: Vec<_> = allocations(p, ranks)
        .into_iter()
        .enumerate()
        .map(|(r, words)| sh.alloc(words, Home::Rank(r)))
        .map(|region| sh.words(region))
        .collect();
    let m = Blocks { layout, parts };
    let mine = |bi: usize, bj: usize| m.layout.owner(bi, bj) == rank;

    for bi in 0..nb {
        for bj in 0..nb {
            if mine(bi, bj) {
                let block: Vec<f64> = (0..b * b)
                    .map(|k| element(p.seed, n, bi * b + k / b, bj * b + k % b))
                    .collect();
                m.write(bi, bj, &block);
            }
        }
        sh.poll();
    }
    sh.barrier();

    let mut work = 0u64;
    for k in 0..nb {
        if mine(k, k) {
            let mut d = m.read(k, k);
            work += factor_diagonal(&mut d, b);
            m.write(k, k, &d);
            sh.poll();
        }
        sh.barrier();

        let perimeter: Vec<(usize, usize)> = (k + 1..nb)
            .flat_map(|x| [(k, x), (x, k)])
            .filter(|&(bi, bj)| mine(bi, bj))
            .collect();
        if !perimeter.is_empty() {
            let d = m.read(k, k);
            for (bi, bj) in perimeter {
                let mut a = m.read(bi, bj);
                work += if bi == k {
                    solve_right(&d, &mut a, b)
                } else {
                    solve_below(&d, &mut a, b)
                };
                m.write(bi, bj, &a);
                sh.poll();
            }
        }
        sh.barrier();

        // Read each perimeter block this rank needs once per step: block
        // (I,k) serves a whole block-row of interior updates.
        let mut left: Vec<Option<Vec<f64>>> = vec![None; nb];
        let mut top: Vec<Option<Vec<f64>>> = vec![None; nb];
        let interior = (k + 1..nb)
            .flat_map(|bi| (k + 1..nb).map(move |bj| (bi, bj)))
            .filter(|&(bi, bj)| mine(bi, bj));
        for (bi, bj) in interior {
            let l = left[bi].get_or_insert_with(|| m.read(bi, k));
            let u = top[bj].get_or_insert_with(|| m.read(k, bj));
            let mut a = m.read(bi, bj);
            work += update_interior(l, u, &mut a, b);
            m.write(bi, bj, &a);
            sh.poll();
        }
        sh.barrier();
    }
    sh.section_end();

    let owned = m.layout.count[rank];
    let detail = format!(
        "lu n={n} block={b} seed={}: rank {rank} of {ranks} owns {owned} of {} blocks",
        p.seed,
        nb * nb
    );
    if rank != 0 {
        return Outcome {
            checksum: f64::NAN,
            work,
            detail,
            result: None,
        };
    }
    // After the last barrier every block is visible to rank 0.
    let mut data = vec![0.0; n * n];
    for bi in 0..nb {
        for bj in 0..nb {
            let block = m.read(bi, bj);
            for i in 0..b {
                let row = (bi * b + i) * n + bj * b;
                data[row..row + b].copy_from_slice(&block[i * b..(i + 1) * b]);
            }
        }
        sh.poll();
    }
    let matrix = Matrix {
        rows: n,
        cols: n,
        data,
    };
    Outcome {
        checksum: matrix.sum(),
        work,
        detail,
        result: Some(matrix),
    }
}

/// The textbook unblocked right-looking LU (kij order) on a row-major
/// vector: the same operations on every element in the same order as the
/// blocked parallel code, written without blocks.
pub fn sequential(p: &LuParams) -> Outcome {
    let n = p.n;
    let mut a: Vec<f64> = (0..n * n)
        .map(|k| element(p.seed, n, k / n, k % n))
        .collect();
    let mut work = 0u64;
    for m in 0..n {
        // Row m is final once pivot m is reached; split it off so the
        // update of each row below is a loop over two slices.
        let (upper, lower) = a.split_at_mut((m + 1) * n);
        let pivot_row = &upper[m * n..];
        for row in lower.chunks_exact_mut(n) {
            row[m] /= pivot_row[m];
            let l = row[m];
            for (x, &u) in row[m + 1..].iter_mut().zip(&pivot_row[m + 1..]) {
                *x -= l * u;
            }
            work += (n - m) as u64;
        }
    }
    let matrix = Matrix {
        rows: n,
        cols: n,
        data: a,
    };
    Outcome {
        checksum: matrix.sum(),
        work,
        detail: format!("lu n={n} seed={} sequential (unblocked)", p.seed),
        result: Some(matrix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_grids_are_as_square_as_possible() {
        assert_eq!(rank_grid(1), (1, 1));
        assert_eq!(rank_grid(2), (1, 2));
        assert_eq!(rank_grid(3), (1, 3));
        assert_eq!(rank_grid(4), (2, 2));
        assert_eq!(rank_grid(6), (2, 3));
        assert_eq!(rank_grid(8), (2, 4));
    }

    #[test]
    fn every_rank_owns_blocks_and_slots_are_dense() {
        let layout = Layout::new(4, 16, 4);
        assert_eq!(layout.count, vec![4; 4]);
        for r in 0..4 {
            let mut slots: Vec<usize> = (0..16)
                .filter(|&k| layout.owner[k] == r)
                .map(|k| layout.slot[k])
                .collect();
            slots.sort();
            assert_eq!(slots, (0..4).collect::<Vec<_>>());
        }
    }

    #[test]
    fn factors_multiply_back_to_the_input() {
        let p = LuParams {
            n: 24,
            block: 8,
            seed: 3,
        };
        let lu = sequential(&p).result.unwrap().data;
        let n = p.n;
        for i in 0..n {
            for j in 0..n {
                let mut sum = 0.0;
                for m in 0..=i.min(j) {
                    let l = if m == i { 1.0 } else { lu[i * n + m] };
                    sum += l * lu[m * n + j];
                }
                let want = element(p.seed, n, i, j);
                assert!((sum - want).abs() < 1e-12 * n as f64, "({i}, {j})");
            }
        }
    }

    #[test]
    fn the_matrix_is_diagonally_dominant() {
        let n = 32;
        for i in 0..n {
            let off: f64 = (0..n)
                .filter(|&j| j != i)
                .map(|j| element(7, n, i, j).abs())
                .sum();
            assert!(element(7, n, i, i) > off);
        }
    }
}
