//! The computation's page table: the state of each page of the region at
//! this rank, its home, its twin, and what the computation wrote since the
//! last release and the last barrier, with the counters of what it did.
//! Only data: the transitions between the states are `coherence`'s.

use crate::protocol::PAGE_WORDS;

/// A page's state at this rank (see `coherence` for the transitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageState {
    Unallocated,
    Invalid,
    ReadOnly,
    Dirty,
    HomeClean,
    HomeDirty,
}

/// The computation's side: only its thread (and its own SIGSEGV handler)
/// touch it.
pub(crate) struct Main {
    pub(crate) pages: Vec<PageState>,
    pub(crate) homes: Vec<u16>,
    pub(crate) next_page: usize,
    /// Twins of dirty pages, one page of words per region page (a calloc'd
    /// mapping: only the pages used are ever touched).
    pub(crate) twins: Vec<u64>,
    pub(crate) dirty: Vec<u32>,
    /// Written since the last release (notices for the next one).
    pub(crate) interval: Bits,
    /// Written since the last barrier.
    pub(crate) since_barrier: Bits,
    pub(crate) epoch: u32,
    pub(crate) msg: Vec<u8>,
    pub(crate) getp: u64,
    pub(crate) diffs: u64,
    pub(crate) locks: u64,
    pub(crate) barriers: u64,
    pub(crate) fault_ns: u64,
    pub(crate) sync_ns: u64,
    pub(crate) wait_ns: u64,
}

/// A set of pages, with its members listed in the order they joined.
pub(crate) struct Bits {
    bits: Vec<u64>,
    pub(crate) list: Vec<u32>,
}

impl Bits {
    fn new(pages: usize) -> Bits {
        Bits {
            bits: vec![0; pages.div_ceil(64)],
            list: Vec::with_capacity(pages),
        }
    }
    pub(crate) fn insert(&mut self, p: u32) {
        let (w, b) = (p as usize / 64, p % 64);
        if self.bits[w] & (1 << b) == 0 {
            self.bits[w] |= 1 << b;
            self.list.push(p);
        }
    }
    pub(crate) fn clear(&mut self) {
        for &p in &self.list {
            self.bits[p as usize / 64] = 0;
        }
        self.list.clear();
    }
}

impl Main {
    /// The table of a region of `pages` pages, every page unallocated, with
    /// a message buffer of `scratch` bytes.
    pub(crate) fn new(pages: usize, scratch: usize) -> Main {
        Main {
            pages: vec![PageState::Unallocated; pages],
            homes: vec![u16::MAX; pages],
            next_page: 0,
            twins: vec![0; pages * PAGE_WORDS],
            dirty: Vec::with_capacity(pages),
            interval: Bits::new(pages),
            since_barrier: Bits::new(pages),
            epoch: 0,
            msg: vec![0; scratch],
            getp: 0,
            diffs: 0,
            locks: 0,
            barriers: 0,
            fault_ns: 0,
            sync_ns: 0,
            wait_ns: 0,
        }
    }
}
