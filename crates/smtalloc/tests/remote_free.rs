//! Cross-core frees with smtalloc as this test binary's #[global_allocator]:
//! blocks allocated by a thread pinned on one core and freed by a thread
//! pinned on another are sent back in batches and freed by their own core
//! (at its next allocation, or when the statistics are read), and nothing
//! is lost on the way. One test in this binary, so no other test's frees
//! move the counters.

mod common;

use common::{allowed_cpus, pin};

#[global_allocator]
static ALLOC: smtalloc::SmtAlloc = smtalloc::SmtAlloc;

const N: usize = 5000;
const SIZE: usize = 64;

/// Runs `f` on a thread pinned to `cpu`.
fn on_cpu<T: Send + 'static>(cpu: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        pin(cpu);
        f()
    })
    .join()
    .unwrap()
}

/// N separate blocks (a Vec of Boxes on purpose: each is one malloc).
#[allow(clippy::vec_box)]
fn blocks_on(cpu: usize, tag: u8) -> Vec<Box<[u8; SIZE]>> {
    on_cpu(cpu, move || (0..N).map(|_| Box::new([tag; SIZE])).collect())
}

#[test]
fn cross_core_frees_are_batched_back_to_the_owning_core() {
    drop(Box::new(0u8)); // initialize smtalloc
    let cpus = allowed_cpus();
    let pair = cpus.iter().find_map(|&a| {
        let ca = smtalloc::core_of_cpu(a)?;
        cpus.iter()
            .find(|&&b| smtalloc::core_of_cpu(b).is_some_and(|cb| cb != ca))
            .map(|&b| (a, b, ca))
    });
    let Some((a, b, core_a)) = pair else {
        common::skip("needs two CPUs of different cores (this process may use one core)");
        return;
    };

    // Phase 1: b frees a's blocks; reading the statistics flushes what is
    // parked, after which every block is back in core a's heap.
    let blocks = blocks_on(a, 0xa5);
    for bl in &blocks {
        assert_eq!(smtalloc::owner_core(bl.as_ptr()), Some(core_a));
    }
    let before = smtalloc::stats();
    let in_use_full = before.cores[core_a].in_use_bytes;
    on_cpu(b, move || {
        for bl in blocks {
            assert!(bl.iter().all(|&x| x == 0xa5));
        }
    });
    let after = smtalloc::stats();
    let received =
        after.cores[core_a].remote_freed_blocks - before.cores[core_a].remote_freed_blocks;
    let batches = after.cores[core_a].remote_batches - before.cores[core_a].remote_batches;
    let direct = after.remote_direct_frees - before.remote_direct_frees;
    assert!(
        received + direct >= N as u64,
        "{received} received + {direct} direct < {N} cross-core frees"
    );
    assert!(
        batches >= 1 && received >= 8,
        "no batch sent: {received} blocks in {batches}"
    );
    let in_use = after.cores[core_a].in_use_bytes;
    assert!(
        in_use + (N * SIZE) as u64 <= in_use_full + (64 << 10),
        "core {core_a} still holds {in_use} bytes in use (had {in_use_full} with the {N} blocks)"
    );
    assert_eq!(after.shared_frames, 0);

    // Phase 2: with a idle, b's batches wait in core a's inbox; a's next
    // allocation on its own core frees them. This thread moves to b first,
    // so that its own allocations (spawning threads) do not run on core a
    // and empty the inbox before the thread pinned there does.
    let blocks = blocks_on(a, 0x5a);
    pin(b);
    on_cpu(b, move || drop(blocks));
    let (r0, r1) = on_cpu(a, move || {
        let (r0, _) = smtalloc::cross_core_frees_received(core_a);
        // black_box: an unused Box may be optimized away with its malloc.
        let x = std::hint::black_box(Box::new([1u8; SIZE]));
        let (r1, _) = smtalloc::cross_core_frees_received(core_a);
        drop(x);
        (r0, r1)
    });
    assert!(
        r1 - r0 >= 8,
        "core {core_a}'s allocation freed {} waiting blocks, expected its inbox's batches",
        r1 - r0
    );

    // Blocks b allocates after all this are still from b's own core.
    let core_b = smtalloc::core_of_cpu(b).unwrap();
    let mine = blocks_on(b, 1);
    assert!(mine
        .iter()
        .all(|bl| smtalloc::owner_core(bl.as_ptr()) == Some(core_b)));
}
