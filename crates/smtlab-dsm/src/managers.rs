//! The managers a rank runs for everybody: the locks whose id maps to it
//! (`lock % ranks`), each with its holder, its queue of waiting ranks and
//! the pages written under it (the write notices a grant carries, JIAJIA's
//! lock-based scope consistency), and at rank 0 the barrier, which collects
//! every rank's written pages and tells each rank which pages another rank
//! wrote. Everything is sized at start: a manager runs in the `sigio`
//! handler, where nothing may allocate.

use crate::protocol;

/// Locks an application may use (`Shared::lock` ids).
pub const LOCKS: usize = 64;

/// One lock at its manager.
struct Lock {
    holder: Option<usize>,
    /// Ranks waiting, first come first served.
    queue: Vec<usize>,
    /// Pages written under this lock in barrier epoch `epoch` (a bitset).
    /// Writes of earlier epochs need no notice: the barrier that ended
    /// them invalidated them everywhere. (Clearing at the barrier itself
    /// would race: a rank already past it may release before this
    /// manager hears of the barrier.)
    written: Vec<u64>,
    epoch: u32,
}

/// The managers at one rank.
pub struct Managers {
    ranks: usize,
    locks: Vec<Lock>,
    arrived: usize,
    /// The ranks that arrived at the current barrier (bit r).
    arrived_from: u64,
    /// Per page, the ranks that wrote it since the last barrier (bit r).
    writers: Vec<u64>,
    touched: Vec<u32>,
    touched_seen: Vec<u64>,
}

/// Where a manager's messages go (the network, or this rank's own waits),
/// with a buffer to build them in.
pub trait Emit {
    /// The buffer to build a message in (large enough for a notice list of
    /// every page).
    fn scratch(&mut self) -> &mut [u8];
    /// Send the first `len` bytes of the scratch buffer to `to`.
    fn emit_scratch(&mut self, to: usize, len: usize);
}

impl Managers {
    pub fn new(ranks: usize, pages: usize) -> Managers {
        let bits = pages.div_ceil(64);
        Managers {
            ranks,
            locks: (0..LOCKS)
                .map(|_| Lock {
                    holder: None,
                    queue: Vec::with_capacity(ranks),
                    written: vec![0; bits],
                    epoch: 0,
                })
                .collect(),
            arrived: 0,
            arrived_from: 0,
            writers: vec![0; pages],
            touched: Vec::with_capacity(pages),
            touched_seen: vec![0; bits],
        }
    }

    /// The rank that manages `lock`.
    pub fn manager_of(lock: usize, ranks: usize) -> usize {
        lock % ranks
    }

    /// `from` asks for `lock`.
    pub fn acquire(&mut self, from: usize, lock: usize, out: &mut dyn Emit) {
        let Some(l) = self.locks.get_mut(lock) else {
            return;
        };
        if l.holder.is_none() {
            l.holder = Some(from);
            grant(lock, &l.written, from, out);
        } else if l.queue.len() < l.queue.capacity() {
            l.queue.push(from);
        }
    }

    /// `from`, in barrier epoch `epoch`, releases `lock`, having written
    /// `pages` under it.
    pub fn release(
        &mut self,
        from: usize,
        lock: usize,
        epoch: u32,
        pages: &[u8],
        out: &mut dyn Emit,
    ) {
        let Some(l) = self.locks.get_mut(lock) else {
            return;
        };
        if epoch > l.epoch {
            l.written.iter_mut().for_each(|w| *w = 0);
            l.epoch = epoch;
        }
        for p in protocol::pages(pages).filter(|_| epoch == l.epoch) {
            if let Some(w) = l.written.get_mut(p as usize / 64) {
                *w |= 1 << (p % 64);
            }
        }
        if l.holder != Some(from) {
            return;
        }
        l.holder = None;
        if !l.queue.is_empty() {
            let next = l.queue.remove(0);
            l.holder = Some(next);
            grant(lock, &l.written, next, out);
        }
    }

    /// `from` arrived at the barrier having written `pages` since the last
    /// one. At the last arrival every rank is sent the pages some other
    /// rank wrote.
    pub fn arrive(&mut self, from: usize, pages: &[u8], out: &mut dyn Emit) {
        for p in protocol::pages(pages) {
            let p = p as usize;
            if p >= self.writers.len() {
                continue;
            }
            self.writers[p] |= 1 << from;
            if self.touched_seen[p / 64] & (1 << (p % 64)) == 0 {
                self.touched_seen[p / 64] |= 1 << (p % 64);
                self.touched.push(p as u32);
            }
        }
        self.arrived += 1;
        self.arrived_from |= 1 << from;
        if self.arrived < self.ranks {
            return;
        }
        for r in 0..self.ranks {
            let buf = out.scratch();
            let mut len = protocol::bare(buf, protocol::BARR_GO);
            let writers = &self.writers;
            len = protocol::put_pages(
                buf,
                len,
                self.touched
                    .iter()
                    .copied()
                    .filter(|&p| writers[p as usize] & !(1u64 << r) != 0),
            );
            out.emit_scratch(r, len);
        }
        for &p in &self.touched {
            self.writers[p as usize] = 0;
        }
        self.touched.clear();
        self.touched_seen.iter_mut().for_each(|w| *w = 0);
        self.arrived = 0;
        self.arrived_from = 0;
    }

    /// The ranks that have not arrived at the current barrier (bit r), for
    /// a barrier that waited too long to name them.
    pub fn missing_arrivals(&self) -> u64 {
        let all = u64::MAX >> (64 - self.ranks.clamp(1, 64));
        all & !self.arrived_from
    }
}

fn grant(lock: usize, written: &[u64], to: usize, out: &mut dyn Emit) {
    let buf = out.scratch();
    let len = protocol::start(buf, protocol::GRANT, lock as u32);
    let len = protocol::put_pages(
        buf,
        len,
        written.iter().enumerate().flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| (i * 64 + b) as u32)
        }),
    );
    out.emit_scratch(to, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages the managers sent, decoded.
    #[derive(Default)]
    struct Sent {
        buf: Vec<u8>,
        out: Vec<(usize, u8, Vec<u32>)>,
    }

    impl Emit for Sent {
        fn scratch(&mut self) -> &mut [u8] {
            if self.buf.is_empty() {
                self.buf = vec![0; 1 << 16];
            }
            &mut self.buf
        }
        fn emit_scratch(&mut self, to: usize, len: usize) {
            let (kind, body) = protocol::split(&self.buf[..len]).unwrap();
            let list = if kind == protocol::GRANT {
                protocol::u32_head(body).unwrap().1
            } else {
                body
            };
            self.out.push((to, kind, protocol::pages(list).collect()));
        }
    }

    fn pages(list: &[u32]) -> Vec<u8> {
        let mut b = vec![0; list.len() * 4];
        protocol::put_pages(&mut b, 0, list.iter().copied());
        b
    }

    #[test]
    fn a_lock_is_granted_first_come_first_served_with_its_write_notices() {
        let mut m = Managers::new(3, 128);
        let mut s = Sent::default();
        m.acquire(1, 5, &mut s);
        m.acquire(2, 5, &mut s);
        assert_eq!(s.out, vec![(1, protocol::GRANT, vec![])]);
        m.release(1, 5, 0, &pages(&[7, 70]), &mut s);
        assert_eq!(s.out[1], (2, protocol::GRANT, vec![7, 70]));
        // A release of a later epoch starts the notices afresh; a stale
        // one (from before the barrier) adds nothing.
        m.release(2, 5, 1, &pages(&[9]), &mut s);
        m.release(0, 5, 0, &pages(&[11]), &mut s);
        m.acquire(0, 5, &mut s);
        assert_eq!(s.out[2], (0, protocol::GRANT, vec![9]));
    }

    #[test]
    fn the_barrier_tells_each_rank_only_what_others_wrote() {
        let mut m = Managers::new(3, 128);
        let mut s = Sent::default();
        assert_eq!(m.missing_arrivals(), 0b111);
        m.arrive(0, &pages(&[1, 2]), &mut s);
        m.arrive(1, &pages(&[2, 3]), &mut s);
        assert!(s.out.is_empty(), "no go before the last arrival");
        // Who a barrier that waits too long is waiting for.
        assert_eq!(m.missing_arrivals(), 0b100);
        m.arrive(2, &pages(&[]), &mut s);
        assert_eq!(m.missing_arrivals(), 0b111, "the next barrier's");
        let mut got = s.out.clone();
        got.sort();
        assert_eq!(
            got,
            vec![
                (0, protocol::BARR_GO, vec![2, 3]),
                (1, protocol::BARR_GO, vec![1, 2]),
                (2, protocol::BARR_GO, vec![1, 2, 3]),
            ]
        );
        // The next barrier starts empty.
        s.out.clear();
        for r in 0..3 {
            m.arrive(r, &[], &mut s);
        }
        assert!(s.out.iter().all(|(_, _, l)| l.is_empty()));
    }
}
