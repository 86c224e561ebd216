//! The travelling salesman problem by branch and bound, as in the
//! TreadMarks/JIAJIA TSP: a shared queue of jobs (tours fixed up to a
//! prefix), a shared best length, and each rank searching whole subtrees
//! privately.
//!
//! Cities `0..cities` with a seeded symmetric integer distance matrix
//! ([`distances`]); a tour starts and ends at city 0. A job fixes the
//! `depth` cities after city 0 (packed 4 bits per city in one word). The
//! search prunes a partial tour when its length plus a lower bound on the
//! edges still to come ([`min_edges`]) reaches the best length known.
//! The bound starts at the nearest-neighbour tour's length, so the search
//! prunes from the first job.
//!
//! Shared memory, all homed at rank 0, each its own allocation so that
//! the words behind different locks share no page:
//! * the queue head `[next job, job count]`, under lock [`QUEUE_LOCK`];
//! * the jobs, written by rank 0 before the first barrier, read-only after;
//! * the best length, under lock [`BEST_LOCK`].
//!
//! Each rank takes a job under the queue lock, reads the best length under
//! the best lock, searches against its private copy of it, and publishes a
//! shorter tour under the best lock (re-reading the shared value after
//! acquiring: it writes only if it is still better). The queue empty, a
//! final barrier makes the best length visible to every rank.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::outcome::Outcome;
use crate::params::TspParams;
use crate::shared::{Home, Shared, Words};

/// The lock of the job queue's head.
pub const QUEUE_LOCK: usize = 0;
/// The lock of the best tour length.
pub const BEST_LOCK: usize = 1;

/// Search-tree nodes between two [`Shared::poll`] calls.
const POLL_EVERY: u64 = 1024;

/// The distance matrix (row-major, `cities x cities`): symmetric, zero on
/// the diagonal, 1 to 1000 elsewhere, from a ChaCha8 stream of `seed`.
pub fn distances(cities: usize, seed: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut d = vec![0u64; cities * cities];
    for i in 0..cities {
        for j in i + 1..cities {
            let v = rng.random_range(1..=1000u64);
            d[i * cities + j] = v;
            d[j * cities + i] = v;
        }
    }
    d
}

/// Each city's shortest edge. Every city still to visit leaves through
/// one edge of the rest of the tour, as does the current city, so the sum
/// of their shortest edges is a lower bound on what the tour still costs.
pub fn min_edges(d: &[u64], cities: usize) -> Vec<u64> {
    (0..cities)
        .map(|i| {
            (0..cities)
                .filter(|&j| j != i)
                .map(|j| d[i * cities + j])
                .min()
                .unwrap_or(0)
        })
        .collect()
}

/// The length of the nearest-neighbour tour from city 0 (ties to the
/// lower city): the first bound, an upper bound on the optimum.
pub fn nearest_neighbour(d: &[u64], cities: usize) -> u64 {
    let mut visited = vec![false; cities];
    visited[0] = true;
    let (mut at, mut len) = (0, 0);
    for _ in 1..cities {
        let next = (0..cities)
            .filter(|&j| !visited[j])
            .min_by_key(|&j| (d[at * cities + j], j))
            .expect("a city is left");
        visited[next] = true;
        len += d[at * cities + next];
        at = next;
    }
    len + d[at * cities]
}

/// Every job: each sequence of `depth` distinct cities from `1..cities`,
/// in lexicographic order, city t of the sequence in bits `4t..4t+4`.
pub fn jobs(cities: usize, depth: usize) -> Vec<u64> {
    fn extend(cities: usize, depth: usize, prefix: &mut Vec<usize>, out: &mut Vec<u64>) {
        if prefix.len() == depth {
            let packed = prefix
                .iter()
                .enumerate()
                .fold(0u64, |acc, (t, &c)| acc | (c as u64) << (4 * t));
            out.push(packed);
            return;
        }
        for c in 1..cities {
            if !prefix.contains(&c) {
                prefix.push(c);
                extend(cities, depth, prefix, out);
                prefix.pop();
            }
        }
    }
    let mut out = Vec::new();
    extend(cities, depth, &mut Vec::new(), &mut out);
    out
}

/// How many jobs [`jobs`] makes: `(cities-1) (cities-2) ...`, `depth`
/// factors.
pub fn job_count(cities: usize, depth: usize) -> usize {
    (0..depth).map(|t| cities - 1 - t).product()
}

/// The words of each allocation [`run`] makes, in order: the queue's head
/// (next job, job count), the queue, the best length.
pub fn allocations(p: &TspParams) -> Vec<usize> {
    vec![2, job_count(p.cities, p.depth), 1]
}

/// One rank's depth-first search of job subtrees.
struct Search<'a> {
    sh: &'a dyn Shared,
    best: &'a [std::sync::atomic::AtomicU64],
    d: &'a [u64],
    cities: usize,
    min_edge: Vec<u64>,
    /// This rank's copy of the best length: refreshed per job and when it
    /// publishes, never read from shared memory without the lock.
    bound: u64,
    nodes: u64,
}

impl Search<'_> {
    fn job(&mut self, packed: u64, depth: usize) {
        let (mut at, mut len, mut visited) = (0usize, 0u64, 1u32);
        for t in 0..depth {
            let c = ((packed >> (4 * t)) & 0xf) as usize;
            len += self.d[at * self.cities + c];
            visited |= 1 << c;
            at = c;
        }
        let rest: u64 = (0..self.cities)
            .filter(|&c| visited & (1 << c) == 0)
            .map(|c| self.min_edge[c])
            .sum();
        self.visit(at, visited, len, rest);
    }

    /// Node: the tour so far ends at `at`, has visited the cities in
    /// `visited` and costs `len`; `rest` is the sum of the shortest edges
    /// of the cities not visited.
    fn visit(&mut self, at: usize, visited: u32, len: u64, rest: u64) {
        self.nodes += 1;
        if self.nodes % POLL_EVERY == 0 {
            self.sh.poll();
        }
        let n = self.cities;
        if visited == (1u32 << n) - 1 {
            let tour = len + self.d[at * n];
            if tour < self.bound {
                self.publish(tour);
            }
            return;
        }
        if len + self.min_edge[at] + rest >= self.bound {
            return;
        }
        for next in 1..n {
            if visited & (1 << next) == 0 {
                self.visit(
                    next,
                    visited | 1 << next,
                    len + self.d[at * n + next],
                    rest - self.min_edge[next],
                );
            }
        }
    }

    /// Make `tour` the shared best unless another rank found a shorter one
    /// meanwhile; either way take the shorter as this rank's bound.
    fn publish(&mut self, tour: u64) {
        self.sh.lock(BEST_LOCK);
        let shared = self.best.u64_at(0);
        if tour < shared {
            self.best.set_u64(0, tour);
        }
        self.sh.unlock(BEST_LOCK);
        self.bound = tour.min(shared);
    }
}

/// One rank's part of the search: every rank calls it, and every rank
/// returns the optimal tour length as its checksum.
pub fn run(sh: &dyn Shared, p: &TspParams) -> Outcome {
    let (n, depth) = (p.cities, p.depth);
    let (rank, ranks) = (sh.rank(), sh.ranks());
    let d = distances(n, p.seed);
    let all_jobs = jobs(n, depth);
    let head = sh.words(sh.alloc(2, Home::Rank(0)));
    let queue = sh.words(sh.alloc(all_jobs.len(), Home::Rank(0)));
    let best = sh.words(sh.alloc(1, Home::Rank(0)));
    if rank == 0 {
        for (k, &job) in all_jobs.iter().enumerate() {
            queue.set_u64(k, job);
        }
        head.set_u64(0, 0);
        head.set_u64(1, all_jobs.len() as u64);
        best.set_u64(0, nearest_neighbour(&d, n));
    }
    sh.barrier();

    let mut search = Search {
        sh,
        best,
        d: &d,
        cities: n,
        min_edge: min_edges(&d, n),
        bound: u64::MAX,
        nodes: 0,
    };
    let mut taken = 0u64;
    loop {
        sh.lock(QUEUE_LOCK);
        let (next, count) = (head.u64_at(0), head.u64_at(1));
        let job = (next < count).then(|| {
            head.set_u64(0, next + 1);
            queue.u64_at(next as usize)
        });
        sh.unlock(QUEUE_LOCK);
        let Some(job) = job else { break };
        taken += 1;
        sh.lock(BEST_LOCK);
        search.bound = best.u64_at(0);
        sh.unlock(BEST_LOCK);
        search.job(job, depth);
        sh.poll();
    }
    sh.barrier();
    sh.section_end();
    // After the barrier every published length is visible to every rank.
    let optimal = best.u64_at(0);
    Outcome {
        checksum: optimal as f64,
        work: search.nodes,
        detail: format!(
            "tsp cities={n} seed={} depth={depth}: rank {rank} of {ranks} took {taken} of {} \
             jobs, visited {} nodes; optimal tour {optimal}",
            p.seed,
            all_jobs.len(),
            search.nodes
        ),
        result: None,
    }
}

/// The same branch and bound as one plain recursion from city 0, without
/// jobs or shared memory.
pub fn sequential(p: &TspParams) -> Outcome {
    let n = p.cities;
    let d = distances(n, p.seed);
    let min_edge = min_edges(&d, n);
    let mut best = nearest_neighbour(&d, n);
    let mut nodes = 0u64;
    let mut path = vec![0usize];
    let rest: u64 = min_edge[1..].iter().sum();
    extend(&d, &min_edge, &mut path, 0, rest, &mut best, &mut nodes);
    Outcome {
        checksum: best as f64,
        work: nodes,
        detail: format!(
            "tsp cities={n} seed={} sequential: visited {nodes} nodes; optimal tour {best}",
            p.seed
        ),
        result: None,
    }
}

/// Extend `path` (costing `len`; `rest` = shortest edges of the cities not
/// on it) by every city not on it, keeping the shortest tour in `best`.
fn extend(
    d: &[u64],
    min_edge: &[u64],
    path: &mut Vec<usize>,
    len: u64,
    rest: u64,
    best: &mut u64,
    nodes: &mut u64,
) {
    *nodes += 1;
    let n = min_edge.len();
    let last = *path.last().expect("the path starts at city 0");
    if path.len() == n {
        *best = (*best).min(len + d[last * n]);
        return;
    }
    if len + min_edge[last] + rest >= *best {
        return;
    }
    for c in 1..n {
        if !path.contains(&c) {
            path.push(c);
            let step = d[last * n + c];
            extend(
                d,
                min_edge,
                path,
                len + step,
                rest - min_edge[c],
                best,
                nodes,
            );
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held-Karp dynamic programming: the optimum by a different method.
    fn held_karp(d: &[u64], n: usize) -> u64 {
        let full = 1usize << n;
        let mut cost = vec![u64::MAX; full * n];
        cost[n] = 0; // set {0}, ending at city 0
        for set in 1..full {
            if set & 1 == 0 {
                continue;
            }
            for end in 0..n {
                let c = cost[set * n + end];
                if c == u64::MAX {
                    continue;
                }
                for next in 1..n {
                    if set & (1 << next) == 0 {
                        let s = (set | 1 << next) * n + next;
                        cost[s] = cost[s].min(c + d[end * n + next]);
                    }
                }
            }
        }
        (1..n)
            .map(|end| cost[(full - 1) * n + end] + d[end * n])
            .min()
            .unwrap()
    }

    #[test]
    fn sequential_finds_the_optimum() {
        for seed in 0..6 {
            for cities in [4, 5, 8, 10] {
                let p = TspParams {
                    cities,
                    seed,
                    depth: 2,
                };
                let d = distances(cities, seed);
                assert_eq!(
                    sequential(&p).checksum,
                    held_karp(&d, cities) as f64,
                    "cities={cities} seed={seed}"
                );
            }
        }
    }

    #[test]
    fn jobs_are_all_prefixes() {
        let j = jobs(6, 3);
        assert_eq!(j.len(), 5 * 4 * 3);
        for (cities, depth) in [(4, 1), (4, 2), (9, 3), (12, 5)] {
            assert_eq!(job_count(cities, depth), jobs(cities, depth).len());
        }
        assert_eq!(j[0], 1 | 2 << 4 | 3 << 8);
        let mut sorted = j.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), j.len());
    }

    #[test]
    fn distances_are_symmetric_and_seeded() {
        let d = distances(9, 4);
        for i in 0..9 {
            assert_eq!(d[i * 9 + i], 0);
            for j in 0..9 {
                assert_eq!(d[i * 9 + j], d[j * 9 + i]);
            }
        }
        assert_eq!(d, distances(9, 4));
        assert_ne!(d, distances(9, 5));
    }
}
