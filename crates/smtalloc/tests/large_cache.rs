//! Freed large blocks (>= 1 MiB) are kept for reuse (`SMTALLOC_LARGE_CACHE`,
//! default 32 MiB), with smtalloc as this test binary's #[global_allocator]:
//! the next large block of the same or a smaller size reuses the mapping
//! (trimmed by whole 2 MiB frames), a zeroed request gets zeroes, and the
//! cache never keeps more than its capacity. One test in this binary, so
//! no other test's large blocks use the cache meanwhile.

#[global_allocator]
static ALLOC: smtalloc::SmtAlloc = smtalloc::SmtAlloc;

const MIB: usize = 1 << 20;
const FRAME: usize = 2 * MIB;

/// Whether `addr` lies in a mapping of this process (/proc/self/maps).
fn mapped(addr: usize) -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let range = l.split(' ').next()?;
            let (s, e) = range.split_once('-')?;
            Some((
                usize::from_str_radix(s, 16).ok()?,
                usize::from_str_radix(e, 16).ok()?,
            ))
        })
        .any(|(s, e)| addr >= s && addr < e)
}

#[test]
fn freed_large_blocks_are_reused_trimmed_and_zeroed() {
    let s0 = smtalloc::stats();
    // Same size: the same mapping comes back, zeroed for a zeroed request
    // (`vec![0; n]` is alloc_zeroed, i.e. calloc).
    let a = vec![0xabu8; 3 * MIB];
    let addr = a.as_ptr() as usize;
    assert_eq!(addr % FRAME, 0);
    drop(a);
    let b = vec![0u8; 3 * MIB];
    assert_eq!(
        b.as_ptr() as usize,
        addr,
        "a freed 3 MiB block's mapping was not reused"
    );
    assert!(b.iter().all(|&x| x == 0), "reused block not zeroed");
    // (The kernel may hand out the same address again anyway: the counter
    // says whether the mapping was kept.)
    let reused = smtalloc::stats().large_blocks_reused - s0.large_blocks_reused;
    assert_eq!(
        reused, 1,
        "the zeroed 3 MiB block did not reuse a kept mapping"
    );
    drop(b);

    // Smaller: the 8 MiB mapping serves a 3 MiB block (2 frames) and its
    // last 2 frames are unmapped.
    let big = vec![1u8; 8 * MIB];
    let big_addr = big.as_ptr() as usize;
    drop(big);
    let s1 = smtalloc::stats();
    let c: Vec<u8> = Vec::with_capacity(3 * MIB);
    let reused = smtalloc::stats().large_blocks_reused - s1.large_blocks_reused;
    assert_eq!(reused, 1, "the 3 MiB block did not reuse a kept mapping");
    if c.as_ptr() as usize == big_addr {
        assert!(mapped(big_addr + 3 * MIB));
        assert!(!mapped(big_addr + 4 * MIB), "tail frames still mapped");
    }
    drop(c);

    // The cache never holds more than its capacity (32 MiB by default): of
    // twenty 4 MiB blocks freed, at most 8 are kept.
    let blocks: Vec<Vec<u8>> = (0..20).map(|i| vec![i as u8; 4 * MIB]).collect();
    drop(blocks);
    let s2 = smtalloc::stats();
    assert!(s2.large_kept_bytes <= 32 * MIB as u64, "{s2:#?}");
    assert!(s2.large_kept_blocks >= 1, "{s2:#?}");
    let reused = s2.large_blocks_reused - s0.large_blocks_reused;
    assert!(reused >= 2, "{reused} large blocks reused");
}
