//! Exactly once and in order, for one (receiver, sender) pair: which of
//! the sender's messages the receiver has had, in 16 bytes, so that a run
//! of 10,000 clients in rooms of 20 keeps 200,000 of them (3.2 MB).
//!
//! A pair keeps the first sequence number it has not had (`next`) and a
//! 64-bit map of the 64 numbers from there on. A message that arrives after
//! a later one of the same sender is out of order (counted when it
//! arrives); one that arrives again is a duplicate. A message more than 63
//! numbers past the first missing one moves the window on: the missing
//! ones it passes are given up (lost, unless they arrive later, when they
//! count as duplicates: no pair can tell a message 64 of its sender's
//! messages late from one it already had without keeping every number).

/// Width of the window of numbers a pair tells apart past the first gap.
const WINDOW: u32 = 64;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrivals {
    /// Every number below this has arrived or been given up.
    next: u32,
    /// Bit i: number `next + i` has arrived (bit 0 is always clear between
    /// calls).
    ahead: u64,
    /// How many distinct messages arrived.
    received: u32,
}

/// What one arrival was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The first arrival of this message; `out_of_order` when a later
    /// message of the same sender arrived before it.
    First {
        out_of_order: bool,
    },
    Duplicate,
}

impl Arrivals {
    /// Message `seq` of the sender arrives.
    pub fn receive(&mut self, seq: u32) -> Arrival {
        if seq < self.next {
            return Arrival::Duplicate;
        }
        if seq - self.next >= WINDOW {
            // Give up the oldest missing numbers so that `seq` fits.
            let shift = seq - self.next - (WINDOW - 1);
            self.ahead = if shift >= WINDOW {
                0
            } else {
                self.ahead >> shift
            };
            self.next += shift;
            self.normalise();
        }
        let bit = seq - self.next;
        if self.ahead & (1 << bit) != 0 {
            return Arrival::Duplicate;
        }
        // A later number already here: this one is late.
        let out_of_order = bit + 1 < WINDOW && self.ahead >> (bit + 1) != 0;
        self.ahead |= 1 << bit;
        self.received += 1;
        self.normalise();
        Arrival::First { out_of_order }
    }

    /// Whether message `seq` has arrived (or been given up).
    pub fn has(&self, seq: u32) -> bool {
        seq < self.next || (seq - self.next < WINDOW && self.ahead & (1 << (seq - self.next)) != 0)
    }

    /// Distinct messages arrived.
    pub fn received(&self) -> u32 {
        self.received
    }

    /// Move `next` past the numbers that have arrived.
    fn normalise(&mut self) {
        let run = self.ahead.trailing_ones();
        if run > 0 {
            self.ahead = if run >= WINDOW { 0 } else { self.ahead >> run };
            self.next += run;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIRST: Arrival = Arrival::First {
        out_of_order: false,
    };
    const LATE: Arrival = Arrival::First { out_of_order: true };

    #[test]
    fn in_order_arrivals_are_firsts() {
        let mut a = Arrivals::default();
        for seq in 0..200 {
            assert_eq!(a.receive(seq), FIRST);
        }
        assert_eq!(a.received(), 200);
        assert!(a.has(199));
        assert!(!a.has(200));
        assert_eq!(a.receive(150), Arrival::Duplicate);
        assert_eq!(a.receive(199), Arrival::Duplicate);
    }

    #[test]
    fn a_swap_is_one_out_of_order_and_a_gap_is_not() {
        let mut a = Arrivals::default();
        assert_eq!(a.receive(0), FIRST);
        assert_eq!(a.receive(2), FIRST);
        assert_eq!(a.receive(3), FIRST);
        assert!(!a.has(1));
        assert_eq!(a.receive(1), LATE);
        assert_eq!(a.receive(2), Arrival::Duplicate);
        assert_eq!(a.receive(4), FIRST);
        assert_eq!(a.received(), 5);
        // A gap that never fills: no out-of-order, one fewer received.
        let mut b = Arrivals::default();
        for seq in (0..10).filter(|&s| s != 4) {
            assert_eq!(b.receive(seq), FIRST);
        }
        assert_eq!(b.received(), 9);
        assert!(!b.has(4));
    }

    #[test]
    fn a_gap_past_the_window_is_given_up() {
        let mut a = Arrivals::default();
        assert_eq!(a.receive(0), FIRST);
        // 1 is missing; 2..=200 arrive.
        for seq in 2..=200 {
            assert_eq!(a.receive(seq), FIRST, "{seq}");
        }
        assert_eq!(a.received(), 200);
        assert!(a.has(1), "given up");
        assert_eq!(a.receive(1), Arrival::Duplicate);
        assert_eq!(a.receive(201), FIRST);
        // A jump far ahead.
        let mut b = Arrivals::default();
        assert_eq!(b.receive(1_000_000), FIRST);
        assert_eq!(b.receive(1_000_001), FIRST);
        assert_eq!(b.receive(999_999), LATE);
        assert_eq!(b.received(), 3);
    }

    proptest! {
        /// Any order of a set of distinct numbers within the window: each
        /// is a first arrival exactly once, and out of order exactly when a
        /// larger one came before it.
        #[test]
        fn firsts_and_lates_match_a_set(order in Just((0u32..60).collect::<Vec<_>>()).prop_shuffle()) {
            let mut a = Arrivals::default();
            let mut seen = std::collections::BTreeSet::new();
            for &seq in &order {
                let late = seen.iter().any(|&s| s > seq);
                prop_assert_eq!(a.receive(seq), Arrival::First { out_of_order: late });
                seen.insert(seq);
                prop_assert_eq!(a.receive(seq), Arrival::Duplicate);
            }
            prop_assert_eq!(a.received(), 60);
            prop_assert!((0..60).all(|s| a.has(s)));
            prop_assert!(!a.has(60));
        }
    }
}
