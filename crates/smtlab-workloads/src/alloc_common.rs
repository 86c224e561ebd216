//! What the allocation workloads share: a seeded generator, heap blocks
//! that carry a tag to check, and a ledger that proves no block was lost,
//! duplicated or scribbled on.
//!
//! Every block comes from the process's own `malloc` (Rust's System
//! allocator, which smtlab's binary uses): a `Vec<u8>` sized exactly and
//! turned into a `Box<[u8]>`, so an allocator under test put in with
//! `LD_PRELOAD` serves every allocation these workloads measure. (Not
//! `vec![0; n]`, which calls `calloc`, a different entry point.)
//!
//! **Verification by conservation.** A block is born with a tag (a hash of
//! its worker and sequence number) written into its first 8 bytes, and the
//! tag's low byte written over the rest of what the workload touches (every
//! byte, or only the first `touch` bytes: the originals of larson and
//! xmalloc write only the start of a block, and writing more would measure
//! `memset` rather than the allocator). The [`Tally`] of whoever
//! allocates adds the tag to a sum; whoever frees it — possibly another
//! thread, or a later thread — reads the tag back *from the block* and adds
//! it to its freed sum, and checks the pattern. After the window, blocks
//! still alive are read the same way. Over the whole process
//! `allocated = freed + live`, both as counts and as tag sums, and no block
//! may have lost its pattern: a block freed twice, lost, or overwritten
//! shows up as a mismatch. The worker's reported operations must also match
//! what it counted itself.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::error::{WorkloadError, WrongResult};
use crate::{param_u64, ParamSpec, Params, WorkerResult, WorkerSlot};

/// splitmix64: a fast, well-mixed seeded generator; workloads need
/// reproducible size and victim choices, not cryptographic quality.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-high (no division).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// The splitmix64 finaliser.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A worker's generator seed: the run's seed mixed with its number, so
/// workers make different choices.
pub(crate) fn worker_seed(seed: u64, worker: usize) -> u64 {
    mix(seed ^ (worker as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03))
}

/// The tag of block `seq` of `worker`.
pub(crate) fn tag_of(worker: usize, seq: u64) -> u64 {
    mix(((worker as u64) << 44) ^ seq ^ 0x5EED)
}

/// Smallest block: room for the 8-byte tag.
pub(crate) const MIN_BLOCK: u64 = 8;
/// Largest block a size parameter may ask for: these workloads are about
/// small objects, and a bound keeps memory use predictable.
pub(crate) const MAX_BLOCK: u64 = 1 << 20;

pub(crate) use crate::config::Sizes;

impl Sizes {
    /// `min_size` and `max_size` from the parameters, checked.
    pub(crate) fn from_params(params: &Params) -> Result<Sizes, WorkloadError> {
        let min = param_u64(params, "min_size")?;
        let max = param_u64(params, "max_size")?;
        if !(MIN_BLOCK..=MAX_BLOCK).contains(&min) {
            return Err(WorkloadError::param(
                "min_size",
                min,
                format!("expected {MIN_BLOCK}..={MAX_BLOCK} bytes"),
            ));
        }
        if max < min || max > MAX_BLOCK {
            return Err(WorkloadError::param(
                "max_size",
                max,
                format!("expected min_size ({min})..={MAX_BLOCK} bytes"),
            ));
        }
        Ok(Sizes {
            min: min as usize,
            max: max as usize,
        })
    }

    pub(crate) fn draw(&self, rng: &mut Rng) -> usize {
        self.min + rng.below((self.max - self.min + 1) as u64) as usize
    }
}

/// `touch`: bytes written at the start of every new block, at least the
/// 8-byte tag; a value of `max_size` or more writes every byte.
pub(crate) fn param_touch(params: &Params) -> Result<usize, WorkloadError> {
    let v = param_u64(params, "touch")?;
    if v < MIN_BLOCK {
        return Err(WorkloadError::param(
            "touch",
            v,
            format!("expected at least {MIN_BLOCK} (the block's tag)"),
        ));
    }
    Ok(v.min(MAX_BLOCK) as usize)
}

/// A parameter that must be at least 1 (and at most `max`).
pub(crate) fn param_count(params: &Params, name: &str, max: u64) -> Result<u64, WorkloadError> {
    let v = param_u64(params, name)?;
    if v == 0 || v > max {
        return Err(WorkloadError::param(name, v, format!("expected 1..={max}")));
    }
    Ok(v)
}

/// A heap block holding its tag in its first 8 bytes and the tag's low
/// byte in the rest of its first `touched` bytes (all of them, unless the
/// workload touches less: the block is really used).
///
/// A `Vec<u8>` whose capacity is the block's size (`with_capacity(n)` of
/// bytes allocates exactly `n` with `malloc`) and whose length is the part
/// written: the untouched rest stays unwritten without any `unsafe`.
pub(crate) struct Block(Vec<u8>);

impl Block {
    /// Allocate `size` (>= 8) bytes with the process's malloc and write them.
    pub fn new(size: usize, tag: u64) -> Block {
        Block::touching(size, tag, size)
    }

    /// Allocate `size` (>= 8) bytes and write only the first `touch`
    /// (at least 8, at most `size`) of them: the tag, then the pattern.
    pub fn touching(size: usize, tag: u64, touch: usize) -> Block {
        let mut v: Vec<u8> = Vec::with_capacity(size);
        v.resize(touch.clamp(8, size), tag as u8);
        v[..8].copy_from_slice(&tag.to_le_bytes());
        // Within capacity: no reallocation happened.
        Block(v)
    }

    /// A placeholder that owns no memory (an empty Vec allocates nothing),
    /// for a slot between a free and the next allocation.
    pub fn empty() -> Block {
        Block(Vec::new())
    }

    pub fn tag(&self) -> u64 {
        u64::from_le_bytes(self.0[..8].try_into().expect("8 bytes"))
    }

    /// The pattern is still there: the fill bytes after the tag (middle
    /// and last of the touched part) equal the tag's low byte. A block
    /// touched only in its 8 tag bytes is all tag: a change to it shows in
    /// the tag sums instead.
    pub fn intact(&self) -> bool {
        let b = &self.0;
        let n = b.len();
        n <= 8 || (b[n - 1] == b[0] && b[8.max(n / 2)] == b[0])
    }

    pub fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }

    /// The block's size (what was asked of malloc).
    pub fn len(&self) -> usize {
        self.0.capacity()
    }

    /// Scribble on the last touched byte (the `corrupt=1` test switch).
    fn damage(&mut self) {
        let n = self.0.len();
        self.0[n - 1] ^= 0xff;
    }
}

/// Counts and tag sums of the blocks one party allocated, freed, or holds
/// at the end; added up over a process they must balance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub allocs: u64,
    pub frees: u64,
    pub live: u64,
    pub alloc_tags: u64,
    pub freed_tags: u64,
    pub live_tags: u64,
    /// Blocks found without their pattern (when freed or at the end).
    pub broken: u64,
}

impl Tally {
    pub fn alloc(&mut self, size: usize, tag: u64) -> Block {
        self.count_alloc(tag);
        Block::new(size, tag)
    }

    /// [`Tally::alloc`] writing only the block's first `touch` bytes.
    pub fn alloc_touching(&mut self, size: usize, tag: u64, touch: usize) -> Block {
        self.count_alloc(tag);
        Block::touching(size, tag, touch)
    }

    fn count_alloc(&mut self, tag: u64) {
        self.allocs += 1;
        self.alloc_tags = self.alloc_tags.wrapping_add(tag);
    }

    /// Check and free a block (whoever allocated it).
    pub fn free(&mut self, b: Block) {
        self.frees += 1;
        self.freed_tags = self.freed_tags.wrapping_add(b.tag());
        self.broken += u64::from(!b.intact());
        drop(b);
    }

    /// Count a block still alive after the window.
    pub fn keep(&mut self, b: &Block) {
        self.live += 1;
        self.live_tags = self.live_tags.wrapping_add(b.tag());
        self.broken += u64::from(!b.intact());
    }

    pub fn add(&mut self, o: &Tally) {
        self.allocs += o.allocs;
        self.frees += o.frees;
        self.live += o.live;
        self.alloc_tags = self.alloc_tags.wrapping_add(o.alloc_tags);
        self.freed_tags = self.freed_tags.wrapping_add(o.freed_tags);
        self.live_tags = self.live_tags.wrapping_add(o.live_tags);
        self.broken += o.broken;
    }

    /// The `corrupt=1` test switch: a block allocated and scribbled on, for
    /// the caller to hold with its other blocks (and count with
    /// [`Tally::keep`]), so the ordinary check finds it broken.
    pub fn corrupt(&mut self) -> Block {
        let mut b = self.alloc(16, tag_of(usize::MAX >> 20, 0));
        b.damage();
        b
    }

    /// Whether a process's total balances; `Err` says how it does not.
    pub fn balance(&self, name: &str) -> Result<(), WrongResult> {
        if self.broken > 0 {
            return Err(format!(
                "{name}: {} block(s) did not hold the pattern written into them",
                self.broken
            )
            .into());
        }
        if self.allocs != self.frees + self.live {
            return Err(format!(
                "{name}: {} blocks allocated but {} freed + {} alive at the end",
                self.allocs, self.frees, self.live
            )
            .into());
        }
        if self.alloc_tags != self.freed_tags.wrapping_add(self.live_tags) {
            return Err(format!(
                "{name}: the tags read back from freed and live blocks do not add up to \
                 the tags allocated ({:#018x} != {:#018x} + {:#018x})",
                self.alloc_tags, self.freed_tags, self.live_tags
            )
            .into());
        }
        Ok(())
    }
}

/// Per process: what each worker counted (published in `finish`), plus
/// blocks no worker accounts for (allocated at set-up, or left in a
/// hand-off when the window closed).
pub(crate) struct Ledger {
    name: &'static str,
    workers: Mutex<BTreeMap<usize, (Tally, u64)>>,
    other: Mutex<Tally>,
}

impl Ledger {
    pub fn new(name: &'static str) -> Ledger {
        Ledger {
            name,
            workers: Mutex::new(BTreeMap::new()),
            other: Mutex::new(Tally::default()),
        }
    }

    /// A worker's tally and the operations it counted itself.
    pub fn publish(&self, worker: usize, tally: Tally, ops: u64) {
        self.workers
            .lock()
            .expect("not poisoned")
            .insert(worker, (tally, ops));
    }

    /// Blocks counted outside any worker.
    pub fn add_other(&self, tally: &Tally) {
        self.other.lock().expect("not poisoned").add(tally);
    }

    /// A worker's end: publish its tally and operations, and return its
    /// result ([`Ledger::result`]).
    pub fn finish(&self, worker: usize, tally: Tally, ops: u64) -> WorkerResult {
        self.publish(worker, tally, ops);
        Ledger::result(&tally, ops)
    }

    /// The result a worker returns: its own count of operations, and its
    /// allocated tag sum (checked against what it published).
    pub fn result(tally: &Tally, ops: u64) -> WorkerResult {
        WorkerResult {
            ops,
            checksum: tally.alloc_tags,
        }
    }

    /// Every worker published, reported the operations it counted (and its
    /// quota, in fixed-work mode), and the process's blocks balance;
    /// `leftover` holds blocks the caller found still alive elsewhere.
    pub fn verify(
        &self,
        results: &[(WorkerSlot, WorkerResult)],
        leftover: &Tally,
    ) -> Result<(), WrongResult> {
        let name = self.name;
        let workers = self.workers.lock().expect("not poisoned");
        let mut total = *self.other.lock().expect("not poisoned");
        total.add(leftover);
        for (slot, r) in results {
            let Some((tally, ops)) = workers.get(&slot.worker) else {
                return Err(format!("{name} worker {}: published no counts", slot.worker).into());
            };
            if r.ops != *ops || r.checksum != tally.alloc_tags {
                return Err(format!(
                    "{name} worker {}: reported {} ops (checksum {:#x}) but counted {ops} \
                     (checksum {:#x})",
                    slot.worker, r.ops, r.checksum, tally.alloc_tags
                )
                .into());
            }
            if let Some(q) = slot.quota {
                if r.ops != q {
                    return Err(format!(
                        "{name} worker {}: did {} ops, its quota was {q}",
                        slot.worker, r.ops
                    )
                    .into());
                }
            }
        }
        for (tally, _) in workers.values() {
            total.add(tally);
        }
        total.balance(name)
    }
}

/// The `min_size` and `max_size` parameters of a workload of blocks (read
/// by [`Sizes::from_params`]), the largest `max_default` bytes by default.
pub(crate) fn block_size_params(max_default: &'static str) -> [ParamSpec; 2] {
    [
        ParamSpec {
            name: "min_size",
            default: "16",
            help: "smallest block, bytes (at least 8)",
        },
        ParamSpec {
            name: "max_size",
            default: max_default,
            help: "largest block, bytes (sizes are uniform in between)",
        },
    ]
}

/// A worker's new blocks, one per operation: a size drawn from the
/// worker's own generator, a tag naming the worker and the operation, the
/// first `touch` bytes written; every allocation and free counted in its
/// tally. What `larson` and `xmalloc` workers do alike.
pub(crate) struct NewBlocks {
    pub sizes: Sizes,
    pub touch: usize,
    pub rng: Rng,
    pub tally: Tally,
    /// Operations so far (blocks made by [`NewBlocks::next`]).
    pub ops: u64,
    pub worker: usize,
}

impl NewBlocks {
    /// The next operation's block.
    pub fn next(&mut self) -> Block {
        let size = self.sizes.draw(&mut self.rng);
        let b = self
            .tally
            .alloc_touching(size, tag_of(self.worker, self.ops), self.touch);
        self.ops += 1;
        b
    }

    /// Free `b`, counted.
    pub fn free(&mut self, b: Block) {
        self.tally.free(b);
    }

    /// The worker's end: its tally and operations published to `ledger`,
    /// its result returned.
    pub fn finish(&self, ledger: &Ledger) -> WorkerResult {
        ledger.finish(self.worker, self.tally, self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_carry_their_tag_and_pattern() {
        for size in [8usize, 9, 16, 100, 4096] {
            let mut b = Block::new(size, 0xABCD_EF01_2345_6789);
            assert_eq!(b.len(), size);
            assert_eq!(b.tag(), 0xABCD_EF01_2345_6789);
            assert!(b.intact(), "{size}");
            assert_eq!(b.0.len(), size, "every byte written");
            b.damage();
            if size > 8 {
                assert!(!b.intact(), "{size}");
            } else {
                // All tag: the damage changes the tag itself.
                assert_ne!(b.tag(), 0xABCD_EF01_2345_6789);
            }
        }
    }

    /// A block touched in part has the size asked for, the tag and pattern
    /// in its touched part only, and damage to that part is found.
    #[test]
    fn partly_touched_blocks_keep_their_size_and_check_the_touched_part() {
        for (size, touch, touched) in [
            (1000, 16, 16),
            (1000, 128, 128),
            (100, 128, 100),
            (20, 4, 8),
        ] {
            let mut b = Block::touching(size, 0x1122_3344_5566_7788, touch);
            assert_eq!((b.len(), b.0.len()), (size, touched), "{size}/{touch}");
            assert!(b.0.capacity() == size);
            assert_eq!(b.tag(), 0x1122_3344_5566_7788);
            assert!(b.intact());
            b.damage();
            if touched > 8 {
                assert!(!b.intact(), "{size}/{touch}");
            } else {
                // All tag: the damage changes the tag itself.
                assert_ne!(b.tag(), 0x1122_3344_5566_7788);
            }
        }
        let mut p = Params::new();
        for (v, ok) in [
            ("8", Some(8)),
            ("16", Some(16)),
            ("7", None),
            ("9999999999", Some(MAX_BLOCK as usize)),
        ] {
            p.insert("touch".into(), v.into());
            let r = param_touch(&p);
            assert_eq!(r.as_ref().ok().copied(), ok, "touch={v}");
            if ok.is_none() {
                assert!(r.unwrap_err().to_string().contains("--param touch=7"));
            }
        }
    }

    #[test]
    fn tallies_balance_only_when_every_block_is_accounted_for() {
        let mut a = Tally::default();
        let mut b = Tally::default();
        let blocks: Vec<Block> = (0..10).map(|i| a.alloc(24, tag_of(0, i))).collect();
        let mut it = blocks.into_iter();
        // Three freed by another party, the rest alive at the end.
        for blk in it.by_ref().take(3) {
            b.free(blk);
        }
        let rest: Vec<Block> = it.collect();
        let mut live = Tally::default();
        for blk in &rest {
            live.keep(blk);
        }
        let mut total = a;
        total.add(&b);
        total.add(&live);
        assert_eq!(total.balance("t"), Ok(()));

        // One live block not counted: the counts no longer add up.
        let mut short = a;
        short.add(&b);
        let mut partial = Tally::default();
        for blk in &rest[1..] {
            partial.keep(blk);
        }
        short.add(&partial);
        assert!(short.balance("t").unwrap_err().contains("allocated"));

        // A damaged block is found.
        let mut c = total;
        let kept = c.corrupt();
        c.keep(&kept);
        assert!(c.balance("t").unwrap_err().contains("pattern"));
    }

    #[test]
    fn sizes_and_draws_stay_in_range() {
        let mut rng = Rng::new(3);
        let s = Sizes { min: 16, max: 20 };
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = s.draw(&mut rng);
            assert!((16..=20).contains(&v));
            seen[v - 16] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }
}
