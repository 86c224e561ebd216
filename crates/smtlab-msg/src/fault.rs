//! Fault injection on the send side: drop, hold back or duplicate
//! datagrams on purpose, with seeded, repeatable randomness.
//!
//! It is part of the normal build, not of the tests only, because the DSM
//! benchmark runs applications over a lossy network on purpose (5% loss):
//! a run picks its [`Fault`] from its configuration. The injector sits
//! between the endpoint and the caller's sink, so everything above it —
//! acks, retransmissions, reassembly — sees what a bad network would do.
//! Its random numbers come from a splitmix64 state inside it and its
//! held-back datagrams from buffers made up front: no allocation per
//! datagram.

use crate::counters::Counters;
use crate::wire::MAX_DATAGRAM;

/// How much to disturb outgoing datagrams (data and acks alike). Each
/// probability is in `0.0..=1.0`; `Config` validation checks it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    /// Probability a datagram is dropped.
    pub loss: f64,
    /// Probability a datagram is held back and sent right after the next
    /// datagram to the same peer (or at the next `tick`, if none follows).
    pub reorder: f64,
    /// Probability a datagram is sent twice.
    pub duplicate: f64,
    /// Seed of the random choices; each rank mixes in its own number, so
    /// ranks sharing one configuration do not drop in lockstep.
    pub seed: u64,
}

impl Fault {
    /// No faults: every datagram is sent once, in order, and no random
    /// number is drawn.
    pub const fn none() -> Fault {
        Fault {
            loss: 0.0,
            reorder: 0.0,
            duplicate: 0.0,
            seed: 0,
        }
    }

    /// Whether any datagram may be disturbed.
    pub fn is_active(&self) -> bool {
        self.loss > 0.0 || self.reorder > 0.0 || self.duplicate > 0.0
    }
}

impl Default for Fault {
    fn default() -> Fault {
        Fault::none()
    }
}

/// A datagram held back for reordering.
#[derive(Debug, Clone, Copy)]
struct Held {
    len: usize,
    since: u64,
}

/// The running injector of one endpoint: the [`Fault`] plus its random
/// state and one held-back datagram slot per peer.
#[derive(Debug)]
pub(crate) struct Injector {
    fault: Fault,
    rng: u64,
    /// Per rank: the datagram held back for it, if any.
    held: Vec<Option<Held>>,
    /// Rank `r`'s held datagram is at `r * MAX_DATAGRAM`; empty when
    /// reordering is off.
    held_bytes: Vec<u8>,
    held_count: usize,
}

impl Injector {
    /// An injector for rank `rank` of `ranks`, with every buffer it will
    /// need.
    pub(crate) fn new(fault: Fault, rank: usize, ranks: usize) -> Injector {
        let held_bytes = if fault.reorder > 0.0 {
            vec![0; ranks * MAX_DATAGRAM]
        } else {
            Vec::new()
        };
        Injector {
            fault,
            // Distinct streams per rank from one seed.
            rng: fault.seed ^ (rank as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            held: vec![None; ranks],
            held_bytes,
            held_count: 0,
        }
    }

    /// Sends `datagram` to rank `to` through `out`, or drops, holds back or
    /// duplicates it as the fault says; then releases a datagram held back
    /// for `to`, since the next one has now gone.
    pub(crate) fn emit(
        &mut self,
        to: usize,
        datagram: &[u8],
        now: u64,
        counters: &mut Counters,
        out: &mut dyn FnMut(usize, &[u8]),
    ) {
        if self.chance(self.fault.loss) {
            counters.injected_drops += 1;
        } else if self.held[to].is_none() && self.chance(self.fault.reorder) {
            let at = to * MAX_DATAGRAM;
            self.held_bytes[at..at + datagram.len()].copy_from_slice(datagram);
            self.held[to] = Some(Held {
                len: datagram.len(),
                since: now,
            });
            self.held_count += 1;
            counters.injected_reorders += 1;
            return;
        } else {
            counters.datagrams_sent += 1;
            out(to, datagram);
            if self.chance(self.fault.duplicate) {
                counters.injected_duplicates += 1;
                counters.datagrams_sent += 1;
                out(to, datagram);
            }
        }
        self.release(to, counters, out);
    }

    /// Sends every held-back datagram, so none waits longer than until the
    /// next tick.
    pub(crate) fn release_all(
        &mut self,
        counters: &mut Counters,
        out: &mut dyn FnMut(usize, &[u8]),
    ) {
        if self.held_count == 0 {
            return;
        }
        for to in 0..self.held.len() {
            self.release(to, counters, out);
        }
    }

    /// When the oldest held-back datagram was held, if any: the endpoint's
    /// `tick` has work from then on.
    pub(crate) fn held_since(&self) -> Option<u64> {
        if self.held_count == 0 {
            return None;
        }
        self.held.iter().flatten().map(|h| h.since).min()
    }

    fn release(&mut self, to: usize, counters: &mut Counters, out: &mut dyn FnMut(usize, &[u8])) {
        if let Some(held) = self.held[to].take() {
            self.held_count -= 1;
            let at = to * MAX_DATAGRAM;
            counters.datagrams_sent += 1;
            out(to, &self.held_bytes[at..at + held.len]);
        }
    }

    /// True with probability `p`; draws a number only when `p` is strictly
    /// between 0 and 1, so a fault-free run is unaffected by the seed.
    fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        // splitmix64: tiny, fast, and good enough for picking victims.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // The top 53 bits as a float in [0, 1).
        ((z >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fault: Fault, n: usize) -> (Vec<(usize, Vec<u8>)>, Counters) {
        let mut inj = Injector::new(fault, 0, 2);
        let mut counters = Counters::default();
        let mut sent = Vec::new();
        for i in 0..n {
            let d = (i as u32).to_be_bytes();
            inj.emit(1, &d, i as u64, &mut counters, &mut |to, d| {
                sent.push((to, d.to_vec()))
            });
        }
        inj.release_all(&mut counters, &mut |to, d| sent.push((to, d.to_vec())));
        (sent, counters)
    }

    #[test]
    fn none_passes_everything_through_in_order() {
        let (sent, c) = run(Fault::none(), 100);
        let expect: Vec<_> = (0..100u32).map(|i| (1, i.to_be_bytes().to_vec())).collect();
        assert_eq!(sent, expect);
        assert_eq!(c.datagrams_sent, 100);
        assert_eq!(
            c.injected_drops + c.injected_reorders + c.injected_duplicates,
            0
        );
    }

    #[test]
    fn rates_are_near_the_probabilities_and_repeatable() {
        let fault = Fault {
            loss: 0.05,
            reorder: 0.1,
            duplicate: 0.02,
            seed: 7,
        };
        let (sent, c) = run(fault, 100_000);
        let rate = |n: u64| n as f64 / 100_000.0;
        assert!((rate(c.injected_drops) - 0.05).abs() < 0.005, "{c:?}");
        // Reordering is drawn only for datagrams not dropped and when no
        // datagram is held already: q = 0.95 * 0.1 * (1 - q), q = 0.0868.
        assert!((rate(c.injected_reorders) - 0.0868).abs() < 0.006, "{c:?}");
        // Duplication is drawn for the datagrams sent at once: 0.95 - q.
        assert!(
            (rate(c.injected_duplicates) - 0.0173).abs() < 0.003,
            "{c:?}"
        );
        assert_eq!(
            sent.len() as u64,
            100_000 - c.injected_drops + c.injected_duplicates
        );
        assert_eq!(c.datagrams_sent, sent.len() as u64);
        // Same seed, same choices.
        assert_eq!(run(fault, 100_000).0, sent);
    }

    #[test]
    fn a_held_datagram_follows_the_next_one() {
        let fault = Fault {
            reorder: 1.0,
            ..Fault::none()
        };
        // Every datagram is held if the slot is free: 0 held, 1 sent then
        // 0 released, 2 held, 3 sent then 2, ...
        let (sent, _) = run(fault, 5);
        let order: Vec<u32> = sent
            .iter()
            .map(|(_, d)| u32::from_be_bytes(d[..4].try_into().unwrap()))
            .collect();
        assert_eq!(order, [1, 0, 3, 2, 4]);
    }
}
