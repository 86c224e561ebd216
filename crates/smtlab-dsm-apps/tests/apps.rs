//! Every application run in parallel over both in-process DSMs at 1 to 4
//! ranks and verified against its sequential reference; plus what a wrong
//! result, a page-placement regression and the default sizes look like.

use std::time::Instant;

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use smtlab_dsm_apps::{
    app_allocations, run_app, run_ranks, run_ranks_scoped, run_ranks_scoped_traffic,
    sequential_app, verify_app, App, AppParams, Home, LuParams, Outcome, Region, Shared, SorParams,
    TspParams,
};

/// Which in-process DSM a test runs on.
#[derive(Debug, Clone, Copy)]
enum Dsm {
    /// Plain shared memory: checks arithmetic and partitioning.
    Local,
    /// Private copies per rank: also checks the synchronisation.
    Scoped,
}

fn run(dsm: Dsm, ranks: usize, app: &AppParams) -> Vec<Outcome> {
    match dsm {
        Dsm::Local => run_ranks(ranks, |sh| run_app(app, sh)),
        Dsm::Scoped => run_ranks_scoped(ranks, |sh| run_app(app, sh)),
    }
}

/// Run `app` at 1..=4 ranks on both DSMs and verify rank 0 against the
/// sequential reference; return the outcomes for further checks.
fn check_all_rank_counts(app: AppParams) -> Vec<(Dsm, usize, Vec<Outcome>, Outcome)> {
    let seq = sequential_app(&app);
    let mut all = Vec::new();
    for dsm in [Dsm::Local, Dsm::Scoped] {
        for ranks in 1..=4 {
            let outs = run(dsm, ranks, &app);
            assert_eq!(outs.len(), ranks);
            if let Err(e) = verify_app(&app, &outs[0], &seq) {
                panic!("{app} on {dsm:?} with {ranks} ranks: {e}");
            }
            all.push((dsm, ranks, outs, seq.clone()));
        }
    }
    all
}

#[test]
fn sor_matches_sequential_bit_for_bit() {
    let app = AppParams::Sor(SorParams {
        n: 64,
        iterations: 5,
    });
    for (dsm, ranks, outs, seq) in check_all_rank_counts(app) {
        // Every point of every half-sweep updated exactly once.
        let work: u64 = outs.iter().map(|o| o.work).sum();
        assert_eq!(work, seq.work, "{dsm:?} {ranks} ranks");
        assert_eq!(outs[0].checksum.to_bits(), seq.checksum.to_bits());
        for o in &outs[1..] {
            assert!(o.checksum.is_nan() && o.result.is_none());
        }
    }
}

#[test]
fn sor_with_uneven_rows_matches() {
    // 3 and 4 ranks do not divide 37 rows, and 37 is odd (red and black
    // rows differ in length).
    let app = AppParams::Sor(SorParams {
        n: 37,
        iterations: 3,
    });
    check_all_rank_counts(app);
}

#[test]
fn lu_matches_sequential_element_for_element() {
    let app = AppParams::Lu(LuParams {
        n: 64,
        block: 16,
        seed: 1,
    });
    for (dsm, ranks, outs, seq) in check_all_rank_counts(app) {
        // The blocked kernels do exactly the unblocked loop's operations.
        let work: u64 = outs.iter().map(|o| o.work).sum();
        assert_eq!(work, seq.work, "{dsm:?} {ranks} ranks");
    }
}

#[test]
fn lu_with_other_blocks_and_seeds_matches() {
    for (n, block, seed) in [(48, 8, 2), (32, 32, 3), (40, 4, 4)] {
        let app = AppParams::Lu(LuParams { n, block, seed });
        let seq = sequential_app(&app);
        for ranks in [2, 3] {
            let outs = run(Dsm::Scoped, ranks, &app);
            if let Err(e) = verify_app(&app, &outs[0], &seq) {
                panic!("{app} with {ranks} ranks: {e}");
            }
        }
    }
}

#[test]
fn tsp_finds_the_sequential_optimum_on_every_rank() {
    for seed in [1, 2, 3] {
        let app = AppParams::Tsp(TspParams {
            cities: 9,
            seed,
            depth: 3,
        });
        for (dsm, ranks, outs, seq) in check_all_rank_counts(app) {
            for o in &outs {
                assert_eq!(
                    o.checksum, seq.checksum,
                    "{dsm:?} {ranks} ranks: {}",
                    o.detail
                );
            }
            // Every job was searched by some rank: at least its root node.
            let work: u64 = outs.iter().map(|o| o.work).sum();
            assert!(work >= 8 * 7 * 6, "{dsm:?} {ranks} ranks: {work} nodes");
        }
    }
}

#[test]
fn tsp_at_other_depths_matches() {
    for depth in [1, 2, 5] {
        let app = AppParams::Tsp(TspParams {
            cities: 8,
            seed: 7,
            depth,
        });
        let seq = sequential_app(&app);
        let outs = run(Dsm::Scoped, 3, &app);
        for o in &outs {
            assert_eq!(o.checksum, seq.checksum, "depth {depth}: {}", o.detail);
        }
    }
}

#[test]
fn a_corrupted_outcome_fails_with_a_readable_reason() {
    let app = AppParams::Sor(SorParams {
        n: 16,
        iterations: 2,
    });
    let seq = sequential_app(&app);
    let mut par = run(Dsm::Local, 2, &app).swap_remove(0);
    assert_eq!(verify_app(&app, &par, &seq), Ok(()));
    let grid = par.result.as_mut().unwrap();
    grid.data[5 * grid.cols + 7] += 1e-12;
    let e = verify_app(&app, &par, &seq).unwrap_err().to_string();
    assert!(
        e.starts_with("sor: 1 of 324 grid elements differ; first at row 5 column 7:"),
        "{e}"
    );
    assert!(!e.contains('\n'));

    let app = AppParams::Tsp(TspParams {
        cities: 6,
        seed: 1,
        depth: 2,
    });
    let seq = sequential_app(&app);
    let mut par = run(Dsm::Local, 2, &app).swap_remove(1);
    par.checksum += 1.0;
    let e = verify_app(&app, &par, &seq).unwrap_err().to_string();
    assert!(e.starts_with("tsp: tour length "), "{e}");
}

#[test]
fn a_non_root_outcome_cannot_pass_for_a_result() {
    let app = AppParams::Lu(LuParams {
        n: 32,
        block: 8,
        seed: 1,
    });
    let seq = sequential_app(&app);
    let outs = run(Dsm::Local, 2, &app);
    let e = verify_app(&app, &outs[1], &seq).unwrap_err().to_string();
    assert!(e.contains("rank 0"), "{e}");
}

#[test]
fn lu_writes_only_pages_its_rank_is_home_of() {
    let app = AppParams::Lu(LuParams {
        n: 64,
        block: 16,
        seed: 1,
    });
    for ranks in 2..=4 {
        let traffic = run_ranks_scoped_traffic(ranks, |sh| run_app(&app, sh));
        for (rank, (_, t)) in traffic.iter().enumerate() {
            assert_eq!(t.remote_diffs, 0, "{ranks} ranks, rank {rank}: {t:?}");
            assert!(t.home_diffs > 0, "{ranks} ranks, rank {rank}: {t:?}");
        }
    }
}

#[test]
fn sor_writes_remote_pages_only_at_block_edges() {
    // With 512-word rows every row is one page, so a rank's rows are its
    // pages but for the one row where the split of rows and of pages
    // disagree: at most one remote diff per release.
    let iterations = 2;
    let app = AppParams::Sor(SorParams { n: 510, iterations });
    let releases = 1 + 2 * iterations as u64;
    for ranks in [2, 4] {
        let traffic = run_ranks_scoped_traffic(ranks, |sh| run_app(&app, sh));
        for (rank, (_, t)) in traffic.iter().enumerate() {
            assert!(
                t.remote_diffs <= releases,
                "{ranks} ranks, rank {rank}: {t:?}"
            );
            assert!(
                t.home_diffs >= 100 * releases,
                "{ranks} ranks, rank {rank}: {t:?}"
            );
        }
    }
}

/// The default sizes' cost: the sequential references, and the parallel
/// code on 2 in-process ranks (its arithmetic cost, without a DSM's
/// messages). Meaningful in release builds only.
#[test]
fn default_sizes_timing() {
    if cfg!(debug_assertions) {
        println!("default_sizes_timing: skipped in a debug build (run with --release)");
        return;
    }
    for name in ["sor", "lu", "tsp"] {
        let app = AppParams::defaults(name.parse::<App>().unwrap());
        let start = Instant::now();
        let seq = sequential_app(&app);
        let seq_time = start.elapsed();
        let start = Instant::now();
        let outs = run(Dsm::Local, 2, &app);
        let par_time = start.elapsed();
        verify_app(&app, &outs[0], &seq).unwrap();
        println!(
            "{app}: sequential {:.3} s ({} ops), 2 local ranks {:.3} s ({} + {} ops)",
            seq_time.as_secs_f64(),
            seq.work,
            par_time.as_secs_f64(),
            outs[0].work,
            outs[1].work
        );
    }
}

/// A rank's DSM that notes the size of every allocation it is asked for.
struct Recording<'a> {
    inner: &'a dyn Shared,
    words: Mutex<Vec<usize>>,
}

impl Shared for Recording<'_> {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn ranks(&self) -> usize {
        self.inner.ranks()
    }
    fn alloc(&self, words: usize, home: Home) -> Region {
        self.words.lock().unwrap().push(words);
        self.inner.alloc(words, home)
    }
    fn words(&self, region: Region) -> &[AtomicU64] {
        self.inner.words(region)
    }
    fn lock(&self, id: usize) {
        self.inner.lock(id)
    }
    fn unlock(&self, id: usize) {
        self.inner.unlock(id)
    }
    fn barrier(&self) {
        self.inner.barrier()
    }
    fn poll(&self) {
        self.inner.poll()
    }
}

/// The DSM sizes its region from `app_allocations` before the application
/// runs: they must be exactly the allocations it then makes, on every
/// rank, at every rank count (else a size `smtlab list` calls valid fills
/// the region and every rank panics).
#[test]
fn declared_allocations_are_the_ones_each_app_makes() {
    let apps = [
        AppParams::Sor(SorParams {
            n: 37,
            iterations: 1,
        }),
        AppParams::Lu(LuParams {
            n: 48,
            block: 8,
            seed: 1,
        }),
        // Fewer blocks (4) than ranks at 5: a rank with none.
        AppParams::Lu(LuParams {
            n: 32,
            block: 16,
            seed: 1,
        }),
        AppParams::Tsp(TspParams {
            cities: 7,
            seed: 1,
            depth: 2,
        }),
    ];
    for app in apps {
        for ranks in 1..=5 {
            let made = run_ranks(ranks, |sh| {
                let rec = Recording {
                    inner: sh,
                    words: Mutex::new(Vec::new()),
                };
                run_app(&app, &rec);
                rec.words.into_inner().unwrap()
            });
            let declared = app_allocations(&app, ranks);
            for (rank, words) in made.iter().enumerate() {
                assert_eq!(words, &declared, "{app}, rank {rank} of {ranks}");
            }
        }
    }
}
