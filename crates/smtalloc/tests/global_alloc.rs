//! smtalloc as this test binary's #[global_allocator]: threads pinned to
//! different CPUs allocate, and every block's 2 MiB frame must belong to
//! the arena of the core of the CPU it was allocated on.

mod common;

use std::collections::HashMap;

use common::{allowed_cpus, pin};

#[global_allocator]
static ALLOC: smtalloc::SmtAlloc = smtalloc::SmtAlloc;

const FRAME: usize = 2 << 20;

#[test]
fn pinned_threads_allocate_from_their_cores_arena() {
    let cpus = allowed_cpus();
    let handles: Vec<_> = cpus
        .iter()
        .map(|&cpu| {
            std::thread::spawn(move || {
                pin(cpu);
                // Keep the blocks alive until checked; return addresses.
                let blocks: Vec<Vec<u8>> = (0..3000)
                    .map(|i| vec![i as u8; 16 + (i * 37) % 60_000])
                    .collect();
                let addrs: Vec<usize> = blocks.iter().map(|b| b.as_ptr() as usize).collect();
                let owners: Vec<Option<usize>> = addrs
                    .iter()
                    .map(|&a| smtalloc::owner_core(a as *const u8))
                    .collect();
                drop(blocks);
                (cpu, addrs, owners)
            })
        })
        .collect();
    let mut frame_owner: HashMap<usize, usize> = HashMap::new();
    for h in handles {
        let (cpu, addrs, owners) = h.join().unwrap();
        let core = smtalloc::core_of_cpu(cpu).expect("cpu mapped");
        for (a, o) in addrs.iter().zip(owners) {
            assert_eq!(
                o,
                Some(core),
                "block {a:#x} allocated on cpu {cpu} (core {core})"
            );
            let prev = frame_owner.insert(a / FRAME, core);
            assert!(
                prev.is_none() || prev == Some(core),
                "frame {:#x} used by two cores",
                a / FRAME
            );
        }
    }
    let stats = smtalloc::stats();
    assert!(stats.initialized);
    assert_eq!(stats.shared_frames, 0);
    assert_eq!(stats.fallbacks, 0);
    let with_arena = stats.cores.iter().filter(|c| c.arena_bytes > 0).count();
    let distinct_cores: std::collections::HashSet<_> = cpus
        .iter()
        .filter_map(|&c| smtalloc::core_of_cpu(c))
        .collect();
    assert!(with_arena >= distinct_cores.len(), "{stats:#?}");
    for c in &stats.cores {
        for &(start, len) in &c.regions {
            assert_eq!(start % FRAME, 0, "region start not 2 MiB-aligned");
            assert_eq!(len % FRAME, 0, "region length not whole frames");
        }
    }
}

#[test]
fn large_blocks_are_whole_aligned_frames_outside_core_arenas() {
    let v: Vec<u8> = vec![7u8; 3 << 20];
    let p = v.as_ptr() as usize;
    assert_eq!(p % FRAME, 0);
    assert_eq!(smtalloc::owner_core(v.as_ptr()), None);
    assert!(v.iter().all(|&b| b == 7));
    // Grow through realloc (mremap) and check the contents moved along.
    let mut v = v;
    v.resize(9 << 20, 9);
    assert_eq!(v.as_ptr() as usize % FRAME, 0);
    assert!(v[..3 << 20].iter().all(|&b| b == 7));
    assert!(v[3 << 20..].iter().all(|&b| b == 9));
    let s = smtalloc::stats();
    assert!(s.large_blocks_total >= 1);
    drop(v);
    // Over-aligned small blocks: <= 64 KiB alignment stays in the core
    // arena, larger alignment gets a large block of its own.
    #[repr(align(65536))]
    struct A64K([u8; 100]);
    #[repr(align(131072))]
    struct A128K([u8; 100]);
    let a = Box::new(A64K([1; 100]));
    let b = Box::new(A128K([2; 100]));
    assert_eq!(&*a as *const A64K as usize % 65536, 0);
    assert_eq!(&*b as *const A128K as usize % FRAME, 0);
    assert!(smtalloc::owner_core(&*a as *const A64K as *const u8).is_some());
    assert_eq!(smtalloc::owner_core(&*b as *const A128K as *const u8), None);
    assert_eq!(a.0[99] + b.0[99], 3);
}

#[test]
fn many_threads_churn_and_cross_thread_free() {
    let (tx, rx) = std::sync::mpsc::channel::<Vec<String>>();
    let producers: Vec<_> = (0..4)
        .map(|t| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..200 {
                    tx.send((0..50).map(|k| format!("{t}-{i}-{k}")).collect())
                        .unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let consumer = std::thread::spawn(move || rx.iter().map(|v| v.len()).sum::<usize>());
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(consumer.join().unwrap(), 4 * 200 * 50);
    assert_eq!(smtalloc::stats().shared_frames, 0);
}
