//! The sending half of one channel (us → one peer): the datagrams in
//! flight, kept until acknowledged, and their retransmission timers.
//!
//! Datagrams in flight have sequence numbers `acked..next_seq`, at most a
//! window of them, each stored encoded in a slot of one buffer made up
//! front; `slot_of[seq % window]` says which. An ack is cumulative, so
//! acknowledging is moving `acked` forward and handing the freed slots
//! back. Free slots are reused last freed first: in a request/reply
//! exchange the next datagram lands where the last one was, in memory still
//! in the cache, rather than in the next of `window` page-sized slots
//! (every one of them cold by the time the ring comes round).

use crate::wire::{low32, unwrap_seq, Header, HEADER_LEN, MAX_DATAGRAM};

/// Timer and length of one datagram in flight.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Bytes of the encoded datagram.
    len: usize,
    /// When it was last transmitted.
    sent_at: u64,
    /// Its current timeout: retransmitted at `sent_at + rto`.
    rto: u64,
}

/// The sending half of one channel.
#[derive(Debug)]
pub(crate) struct Outgoing {
    /// Sequence number of the next new datagram (the first is 1).
    next_seq: u64,
    /// Every datagram below this is acknowledged.
    acked: u64,
    slots: Vec<Slot>,
    /// The slot of datagram `seq`, at `seq % window` (while in flight).
    slot_of: Vec<u16>,
    /// Free slots; the last one pushed is taken first.
    free: Vec<u16>,
    /// Slot `i`'s datagram is at `i * MAX_DATAGRAM`.
    bytes: Vec<u8>,
}

impl Outgoing {
    /// A channel that can have `window` datagrams in flight (0 for the
    /// channel to ourselves, which is never used).
    pub(crate) fn new(window: usize) -> Outgoing {
        // MAX_WINDOW (4096) slots fit in u16.
        Outgoing {
            next_seq: 1,
            acked: 1,
            slots: vec![Slot::default(); window],
            slot_of: vec![0; window],
            free: (0..window as u16).rev().collect(),
            bytes: vec![0; window * MAX_DATAGRAM],
        }
    }

    /// Datagrams sent and not yet acknowledged.
    pub(crate) fn in_flight(&self) -> usize {
        // At most the window, so it fits.
        (self.next_seq - self.acked) as usize
    }

    /// Datagrams that may be sent before the window is full.
    pub(crate) fn room(&self) -> usize {
        self.slots.len() - self.in_flight()
    }

    /// Stores a new datagram — `header` with the next sequence number, then
    /// `payload` — as sent at `now` with timeout `rto`, and returns it
    /// encoded for transmission. The caller has checked [`Outgoing::room`].
    pub(crate) fn push(&mut self, header: Header, payload: &[u8], now: u64, rto: u64) -> &[u8] {
        debug_assert!(self.room() > 0, "push beyond the window");
        let seq = self.next_seq;
        self.next_seq += 1;
        let i = usize::from(self.free.pop().expect("room was checked"));
        let at_seq = self.position(seq);
        self.slot_of[at_seq] = i as u16;
        let header = Header {
            seq: low32(seq),
            ..header
        };
        let len = HEADER_LEN + payload.len();
        let at = i * MAX_DATAGRAM;
        let datagram = &mut self.bytes[at..at + len];
        header.encode(datagram);
        datagram[HEADER_LEN..].copy_from_slice(payload);
        self.slots[i] = Slot {
            len,
            sent_at: now,
            rto,
        };
        &self.bytes[at..at + len]
    }

    /// Takes in a cumulative ack (its 32 wire bits) from the peer: every
    /// datagram below it is delivered, so its slot is free. Returns whether
    /// anything was newly acknowledged. On progress the remaining
    /// datagrams' timeouts go back to `rto`, since the peer is evidently
    /// alive and a backed-off timer would only delay the repair of the
    /// next gap. Stale or impossible acks (a delayed datagram, a confused
    /// peer) change nothing.
    pub(crate) fn acknowledge(&mut self, ack: u32, rto: u64) -> bool {
        let Some(ack) = unwrap_seq(self.acked, ack) else {
            return false;
        };
        if ack <= self.acked || ack > self.next_seq {
            return false;
        }
        for seq in self.acked..ack {
            let i = self.slot_of[self.position(seq)];
            self.free.push(i);
        }
        self.acked = ack;
        for seq in self.acked..self.next_seq {
            let i = self.index(seq);
            self.slots[i].rto = rto;
        }
        true
    }

    /// When the earliest retransmission is due, if anything is in flight.
    pub(crate) fn deadline(&self) -> Option<u64> {
        (self.acked..self.next_seq)
            .map(|seq| {
                let s = &self.slots[self.index(seq)];
                s.sent_at.saturating_add(s.rto)
            })
            .min()
    }

    /// Hands every datagram whose timeout has passed at `now` to `send`
    /// (which may rewrite it, e.g. its ack, before transmitting it), and
    /// doubles its timeout up to `max_rto`. Returns how many were due.
    pub(crate) fn retransmit_due(
        &mut self,
        now: u64,
        max_rto: u64,
        send: &mut dyn FnMut(&mut [u8]),
    ) -> usize {
        let mut due = 0;
        for seq in self.acked..self.next_seq {
            let i = self.index(seq);
            let slot = &mut self.slots[i];
            if now < slot.sent_at.saturating_add(slot.rto) {
                continue;
            }
            slot.sent_at = now;
            slot.rto = slot.rto.saturating_mul(2).min(max_rto);
            let at = i * MAX_DATAGRAM;
            send(&mut self.bytes[at..at + slot.len]);
            due += 1;
        }
        due
    }

    /// The slot holding datagram `seq` (in flight).
    fn index(&self, seq: u64) -> usize {
        usize::from(self.slot_of[self.position(seq)])
    }

    fn position(&self, seq: u64) -> usize {
        (seq % self.slots.len() as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Kind;

    fn header() -> Header {
        Header {
            kind: Kind::Data,
            src: 0,
            dst: 1,
            seq: 0,
            ack: 1,
            frag_index: 0,
            frag_count: 1,
            len: 0,
        }
    }

    fn push(o: &mut Outgoing, now: u64) -> u32 {
        let d = o.push(header(), &[], now, 10);
        Header::decode(d).unwrap().0.seq
    }

    #[test]
    fn sequence_numbers_start_at_1_and_acks_free_the_window() {
        let mut o = Outgoing::new(4);
        assert_eq!((o.in_flight(), o.room()), (0, 4));
        let seqs: Vec<u32> = (0..4).map(|_| push(&mut o, 0)).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        assert_eq!(o.room(), 0);
        // Stale (1), impossible (6) and real (3) acks.
        assert!(!o.acknowledge(1, 10));
        assert!(!o.acknowledge(6, 10));
        assert!(o.acknowledge(3, 10));
        assert_eq!(o.in_flight(), 2);
        assert!(!o.acknowledge(2, 10));
        assert!(o.acknowledge(5, 10));
        assert_eq!(o.in_flight(), 0);
        assert_eq!(o.deadline(), None);
    }

    #[test]
    fn the_last_freed_slot_is_taken_first_and_each_datagram_keeps_its_own() {
        let mut o = Outgoing::new(8);
        push(&mut o, 0);
        let first = o.index(1);
        assert!(o.acknowledge(2, 10));
        // A request/reply exchange: each new datagram where the last was.
        for seq in 2..20u64 {
            assert_eq!(push(&mut o, 0) as u64, seq);
            assert_eq!(o.index(seq), first, "datagram {seq}");
            assert!(o.acknowledge(seq as u32 + 1, 10));
        }
        // Several in flight: distinct slots, each retransmitted as sent.
        let seqs: Vec<u32> = (0..8).map(|_| push(&mut o, 0)).collect();
        let mut slots: Vec<usize> = seqs.iter().map(|&q| o.index(u64::from(q))).collect();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), 8);
        let freed_last = o.index(u64::from(seqs[3]));
        assert!(o.acknowledge(seqs[3] + 1, 10));
        let mut again = Vec::new();
        o.retransmit_due(100, 1000, &mut |d| {
            again.push(Header::decode(d).unwrap().0.seq)
        });
        assert_eq!(again, seqs[4..]);
        // The freed slots come back, the most recently freed first.
        assert_eq!(o.room(), 4);
        let next = push(&mut o, 0);
        assert_eq!(o.index(u64::from(next)), freed_last);
    }

    #[test]
    fn timeouts_double_up_to_the_cap_and_reset_on_progress() {
        let mut o = Outgoing::new(4);
        push(&mut o, 0);
        push(&mut o, 0);
        assert_eq!(o.deadline(), Some(10));
        let mut sent = 0;
        assert_eq!(o.retransmit_due(9, 35, &mut |_| sent += 1), 0);
        assert_eq!(o.retransmit_due(10, 35, &mut |_| sent += 1), 2);
        assert_eq!(o.deadline(), Some(30));
        assert_eq!(o.retransmit_due(30, 35, &mut |_| sent += 1), 2);
        // 40 would exceed the cap of 35.
        assert_eq!(o.deadline(), Some(65));
        assert_eq!(sent, 4);
        // Progress: the second datagram's timeout is 10 again, counted from
        // its last transmission at 30.
        assert!(o.acknowledge(2, 10));
        assert_eq!(o.deadline(), Some(40));
    }
}
