//! Each thread's own outbox for its cross-core frees, with smtalloc as this
//! test binary's #[global_allocator]: a thread's last parked frees go home
//! when it exits (nothing stranded in a dead thread's slot), and threads
//! past the slots share their CPU's outbox without losing a block. One
//! test in this binary, so no other test's frees move the counters.

mod common;

use std::sync::{Arc, Barrier};

use common::{allowed_cpus, pin};

#[global_allocator]
static ALLOC: smtalloc::SmtAlloc = smtalloc::SmtAlloc;

const SIZE: usize = 64;

type Blocks = Vec<Box<[u8; SIZE]>>;

/// Two CPUs of different cores, and the first one's core.
fn two_cores() -> Option<(usize, usize, usize)> {
    let cpus = allowed_cpus();
    cpus.iter().find_map(|&a| {
        let ca = smtalloc::core_of_cpu(a)?;
        cpus.iter()
            .find(|&&b| smtalloc::core_of_cpu(b).is_some_and(|cb| cb != ca))
            .map(|&b| (a, b, ca))
    })
}

/// `n` separate blocks allocated on `cpu` (each Box is one malloc).
#[allow(clippy::vec_box)]
fn blocks_on(cpu: usize, n: usize) -> Blocks {
    std::thread::spawn(move || {
        pin(cpu);
        (0..n).map(|i| Box::new([i as u8; SIZE])).collect()
    })
    .join()
    .unwrap()
}

/// Blocks of core `core` received back (freed from its inbox) after one
/// allocation on `cpu`, which empties the inbox.
fn received_after_alloc_on(cpu: usize, core: usize) -> u64 {
    std::thread::spawn(move || {
        pin(cpu);
        let x = std::hint::black_box(Box::new([1u8; SIZE]));
        drop(x);
        smtalloc::cross_core_frees_received(core).0
    })
    .join()
    .unwrap()
}

#[test]
fn a_threads_parked_frees_go_home_when_it_exits_and_past_the_slots_none_are_lost() {
    drop(Box::new(0u8)); // initialize smtalloc
    let Some((a, b, core_a)) = two_cores() else {
        common::skip("needs two CPUs of different cores (this process may use one core)");
        return;
    };
    // The test thread stays off core a, so that its own allocations do not
    // empty core a's inbox at moments the test does not choose.
    pin(b);
    let (node, min_send) = smtalloc::OUTBOX_NODE;

    // 1. Fewer blocks than a node holds (but enough to be sent): they wait
    // in the freeing thread's open node until it exits, then go home.
    let n = (node / 2).max(min_send as usize);
    let blocks = blocks_on(a, n);
    let r0 = received_after_alloc_on(a, core_a);
    std::thread::spawn(move || {
        pin(b);
        drop(blocks);
    })
    .join()
    .unwrap();
    let r1 = received_after_alloc_on(a, core_a);
    assert!(
        r1 - r0 >= n as u64,
        "core {core_a} got back {} of the {n} blocks an exited thread freed",
        r1 - r0
    );
    let direct0 = smtalloc::stats().remote_direct_frees;

    // 2. More threads than slots, all alive at once, each freeing blocks of
    // core a on b: the slots fill up, the rest park in CPU b's outbox, and
    // every block comes back; the slots are free again afterwards.
    let threads = smtalloc::THREAD_OUTBOXES + 40;
    let per = 4;
    let mut all = blocks_on(a, threads * per);
    let in_use_full = smtalloc::stats().cores[core_a].in_use_bytes;
    let freed_all = Arc::new(Barrier::new(threads + 1));
    let counted = Arc::new(Barrier::new(threads + 1));
    let r2 = received_after_alloc_on(a, core_a);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let mine: Blocks = all.drain(..per).collect();
            let (freed_all, counted) = (freed_all.clone(), counted.clone());
            std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn(move || {
                    pin(b);
                    drop(mine);
                    freed_all.wait();
                    counted.wait();
                })
                .unwrap()
        })
        .collect();
    freed_all.wait();
    let holding = smtalloc::stats().thread_outboxes;
    counted.wait();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(
        holding,
        smtalloc::THREAD_OUTBOXES as u64,
        "with {threads} threads alive after a cross-core free, every slot should be held"
    );
    let after = smtalloc::stats();
    let r3 = received_after_alloc_on(a, core_a);
    let back = r3 - r2 + (after.remote_direct_frees - direct0);
    let total = (threads * per) as u64;
    assert!(
        back >= total,
        "{back} of {total} cross-core frees came back"
    );
    assert_eq!(
        after.thread_outboxes, 0,
        "slots still held after every thread exited"
    );
    let in_use = smtalloc::stats().cores[core_a].in_use_bytes;
    assert!(
        in_use + total * SIZE as u64 <= in_use_full + (64 << 10),
        "core {core_a} still holds {in_use} bytes in use (had {in_use_full} with the blocks)"
    );
    assert_eq!(after.shared_frames, 0);
}
