//! The receiving half of one channel (one peer → us): which datagrams have
//! arrived, the ones that came early, the message being reassembled, and
//! whether the peer is owed an ack.
//!
//! Datagrams are taken in sequence order only, so every message comes out
//! whole, once, and in the order it was sent. One that arrives early
//! (within the window past the next expected one) waits in the slot
//! `seq % window` of a buffer made up front until the gap before it fills.

use crate::counters::Counters;
use crate::wire::{unwrap_seq, Header, MAX_FRAGMENT};

/// What became of an arriving data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// New data: taken in order, or kept until the gap before it fills.
    New,
    /// Seen before; dropped.
    Duplicate,
    /// A sequence number no correct peer sends (zero, or beyond the
    /// window); dropped.
    Bogus,
}

/// An early datagram waiting in its slot.
#[derive(Debug, Clone, Copy, Default)]
struct Early {
    present: bool,
    len: usize,
    frag_index: u16,
    frag_count: u16,
}

/// A message whose fragments are arriving in order.
#[derive(Debug)]
struct Reassembly {
    /// `max_message` bytes.
    bytes: Vec<u8>,
    /// Bytes gathered so far.
    len: usize,
    /// The fragment expected next (0: no message under way).
    next_frag: u16,
    /// Fragments of the message under way.
    frag_count: u16,
}

/// The receiving half of one channel.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The next sequence number to take; every one below it is taken, so
    /// it is also the cumulative ack for the peer.
    expected: u64,
    early: Vec<Early>,
    /// Slot `i`'s payload is at `i * MAX_FRAGMENT`.
    early_bytes: Vec<u8>,
    reassembly: Reassembly,
    /// Since when the peer has been owed an ack: data arrived that no
    /// datagram to the peer has acknowledged yet.
    owed_since: Option<u64>,
    /// When the last ack of any kind went to the peer.
    last_ack_at: Option<u64>,
}

impl Incoming {
    /// A channel with a receive window of `window` datagrams and messages
    /// of up to `max_message` bytes (both 0 for the channel from ourselves,
    /// which is never used).
    pub(crate) fn new(window: usize, max_message: usize) -> Incoming {
        Incoming {
            expected: 1,
            early: vec![Early::default(); window],
            early_bytes: vec![0; window * MAX_FRAGMENT],
            reassembly: Reassembly {
                bytes: vec![0; max_message],
                len: 0,
                next_frag: 0,
                frag_count: 0,
            },
            owed_since: None,
            last_ack_at: None,
        }
    }

    /// The cumulative ack for the peer: we have every datagram below it.
    pub(crate) fn ack(&self) -> u64 {
        self.expected
    }

    /// Since when an ack has been owed, if one is.
    pub(crate) fn owed_since(&self) -> Option<u64> {
        self.owed_since
    }

    /// Records that a datagram carrying [`Incoming::ack`] went to the peer
    /// at `now`: nothing is owed any more.
    pub(crate) fn ack_sent(&mut self, now: u64) {
        self.owed_since = None;
        self.last_ack_at = Some(now);
    }

    /// Whether an ack went to the peer less than `within` ns before `now`.
    pub(crate) fn acked_within(&self, now: u64, within: u64) -> bool {
        self.last_ack_at
            .is_some_and(|at| now.saturating_sub(at) < within)
    }

    /// Takes one data datagram from rank `from`, arriving at `now`, and
    /// delivers through `deliver` every message it completes (its own, and
    /// those of early datagrams it unblocks), in sequence order.
    pub(crate) fn accept(
        &mut self,
        from: usize,
        header: &Header,
        payload: &[u8],
        now: u64,
        counters: &mut Counters,
        deliver: &mut dyn FnMut(usize, &[u8]),
    ) -> Arrival {
        let window = self.early.len() as u64;
        let seq = match unwrap_seq(self.expected, header.seq) {
            Some(seq) if seq > 0 => seq,
            _ => return Arrival::Bogus,
        };
        if seq < self.expected {
            return Arrival::Duplicate;
        }
        if seq >= self.expected + window {
            return Arrival::Bogus;
        }
        self.owed_since.get_or_insert(now);
        if seq > self.expected {
            let i = (seq % window) as usize;
            if self.early[i].present {
                return Arrival::Duplicate;
            }
            self.early[i] = Early {
                present: true,
                len: payload.len(),
                frag_index: header.frag_index,
                frag_count: header.frag_count,
            };
            let at = i * MAX_FRAGMENT;
            self.early_bytes[at..at + payload.len()].copy_from_slice(payload);
            return Arrival::New;
        }
        self.expected += 1;
        let (index, count) = (header.frag_index, header.frag_count);
        self.reassembly
            .take(from, index, count, payload, counters, deliver);
        // The gap is filled: take the early datagrams that follow it.
        loop {
            let i = (self.expected % window) as usize;
            let early = self.early[i];
            if !early.present {
                break;
            }
            self.early[i].present = false;
            self.expected += 1;
            let at = i * MAX_FRAGMENT;
            let payload = &self.early_bytes[at..at + early.len];
            self.reassembly.take(
                from,
                early.frag_index,
                early.frag_count,
                payload,
                counters,
                deliver,
            );
        }
        Arrival::New
    }
}

impl Reassembly {
    /// Takes the next fragment in sequence order and delivers the message
    /// once it is whole. A one-fragment message is delivered straight from
    /// `payload`, without a copy. Fragments that do not fit together (only
    /// a broken peer sends them) discard the message under way and are
    /// counted with the strangers.
    fn take(
        &mut self,
        from: usize,
        index: u16,
        count: u16,
        payload: &[u8],
        counters: &mut Counters,
        deliver: &mut dyn FnMut(usize, &[u8]),
    ) {
        if index == 0 && self.next_frag != 0 {
            // A new message began before the last one ended.
            counters.strangers_dropped += 1;
            self.reset();
        }
        if index != self.next_frag || (index > 0 && count != self.frag_count) {
            counters.strangers_dropped += 1;
            self.reset();
            return;
        }
        if count == 1 {
            if payload.len() > self.bytes.len() {
                counters.strangers_dropped += 1;
                return;
            }
            counters.messages_received += 1;
            counters.bytes_received += payload.len() as u64;
            deliver(from, payload);
            return;
        }
        let end = self.len + payload.len();
        if end > self.bytes.len() {
            counters.strangers_dropped += 1;
            self.reset();
            return;
        }
        self.bytes[self.len..end].copy_from_slice(payload);
        self.len = end;
        self.frag_count = count;
        self.next_frag += 1;
        if self.next_frag == count {
            counters.messages_received += 1;
            counters.bytes_received += self.len as u64;
            deliver(from, &self.bytes[..self.len]);
            self.reset();
        }
    }

    fn reset(&mut self) {
        self.len = 0;
        self.next_frag = 0;
        self.frag_count = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Kind;

    fn header(seq: u32, frag_index: u16, frag_count: u16) -> Header {
        Header {
            kind: Kind::Data,
            src: 1,
            dst: 0,
            seq,
            ack: 1,
            frag_index,
            frag_count,
            len: 0,
        }
    }

    /// Feeds `(seq, index, count, payload)` datagrams; returns each arrival
    /// and the delivered messages.
    fn feed(rx: &mut Incoming, items: &[(u32, u16, u16, &[u8])]) -> (Vec<Arrival>, Vec<Vec<u8>>) {
        let mut counters = Counters::default();
        let mut got = Vec::new();
        let arrivals = items
            .iter()
            .map(|&(seq, i, n, p)| {
                rx.accept(
                    1,
                    &header(seq, i, n),
                    p,
                    0,
                    &mut counters,
                    &mut |from, m| {
                        assert_eq!(from, 1);
                        got.push(m.to_vec());
                    },
                )
            })
            .collect();
        (arrivals, got)
    }

    #[test]
    fn early_datagrams_wait_for_the_gap_and_duplicates_are_seen() {
        let mut rx = Incoming::new(4, 100);
        let (arrivals, got) = feed(
            &mut rx,
            &[
                (2, 0, 1, b"b"),
                (3, 0, 1, b"c"),
                (3, 0, 1, b"c"),
                (1, 0, 1, b"a"),
                (2, 0, 1, b"b"),
            ],
        );
        use Arrival::*;
        assert_eq!(arrivals, [New, New, Duplicate, New, Duplicate]);
        assert_eq!(got, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(rx.ack(), 4);
    }

    #[test]
    fn beyond_the_window_and_zero_are_bogus() {
        let mut rx = Incoming::new(4, 100);
        let (arrivals, got) = feed(
            &mut rx,
            &[(5, 0, 1, b"x"), (0, 0, 1, b"x"), (u32::MAX, 0, 1, b"x")],
        );
        assert_eq!(arrivals, [Arrival::Bogus; 3]);
        assert!(got.is_empty());
        assert_eq!(rx.ack(), 1);
    }

    #[test]
    fn fragments_are_joined_in_order() {
        let mut rx = Incoming::new(8, 100);
        let (_, got) = feed(
            &mut rx,
            &[
                (3, 2, 3, b"ghi"),
                (1, 0, 3, b"abc"),
                (2, 1, 3, b"def"),
                (4, 0, 1, b""),
            ],
        );
        assert_eq!(got, [b"abcdefghi".to_vec(), Vec::new()]);
    }

    #[test]
    fn fragments_that_do_not_fit_together_are_dropped_not_delivered() {
        let mut rx = Incoming::new(8, 5);
        let mut counters = Counters::default();
        let mut got = Vec::new();
        let mut deliver = |_: usize, m: &[u8]| got.push(m.to_vec());
        // Too long for max_message = 5.
        for (seq, i, p) in [(1, 0, b"abc"), (2, 1, b"def")] {
            rx.accept(1, &header(seq, i, 2), p, 0, &mut counters, &mut deliver);
        }
        // Fragment 1 without fragment 0; then a good message.
        rx.accept(1, &header(3, 1, 2), b"x", 0, &mut counters, &mut deliver);
        rx.accept(1, &header(4, 0, 1), b"ok", 0, &mut counters, &mut deliver);
        assert_eq!(got, [b"ok".to_vec()]);
        assert_eq!(counters.strangers_dropped, 2);
        assert_eq!(counters.messages_received, 1);
    }
}
