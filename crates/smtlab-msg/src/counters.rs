//! What an endpoint did, counted: the numbers a DSM study reports next to
//! its run times (how much traffic, how much of it was repair).

/// Event counts of one endpoint since it was made. Plain `u64`s, bumped in
/// place, so counting costs nothing and never allocates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Messages accepted by `send` (each counted once, however many
    /// fragments and retransmissions it took).
    pub messages_sent: u64,
    /// Messages delivered to the caller, whole and exactly once.
    pub messages_received: u64,
    /// Payload bytes of the messages sent (headers and retransmissions
    /// excluded).
    pub bytes_sent: u64,
    /// Payload bytes of the messages delivered.
    pub bytes_received: u64,
    /// Datagrams handed to the network: data, retransmissions and acks,
    /// after fault injection (injected drops excluded, injected duplicates
    /// included), so over a loss-free network between correct peers the
    /// receivers' `datagrams_received` add up to it.
    pub datagrams_sent: u64,
    /// Well-formed datagrams addressed to us from a known rank.
    pub datagrams_received: u64,
    /// Data datagrams sent again because their ack did not come in time.
    pub retransmissions: u64,
    /// Data datagrams received a second time (a retransmission whose
    /// original, or whose ack, had got through; or a network duplicate).
    pub duplicates_dropped: u64,
    /// Ack-only datagrams sent (acks riding on data are free and not
    /// counted).
    pub acks_sent: u64,
    /// Datagrams the fault injector dropped.
    pub injected_drops: u64,
    /// Datagrams the fault injector held back behind the next one.
    pub injected_reorders: u64,
    /// Datagrams the fault injector sent twice.
    pub injected_duplicates: u64,
    /// Datagrams dropped unread: malformed, of another format version, not
    /// addressed to us, claiming a rank that does not exist or that their
    /// sender's address does not have, or breaking the protocol (data
    /// beyond the receive window, fragments that do not fit together).
    pub strangers_dropped: u64,
}

impl Counters {
    /// Adds `other` into `self`, field by field, to total several
    /// endpoints (the ranks of one run).
    pub fn add(&mut self, other: &Counters) {
        let Counters {
            messages_sent,
            messages_received,
            bytes_sent,
            bytes_received,
            datagrams_sent,
            datagrams_received,
            retransmissions,
            duplicates_dropped,
            acks_sent,
            injected_drops,
            injected_reorders,
            injected_duplicates,
            strangers_dropped,
        } = other;
        // Destructured, so a new field cannot be forgotten here.
        self.messages_sent += messages_sent;
        self.messages_received += messages_received;
        self.bytes_sent += bytes_sent;
        self.bytes_received += bytes_received;
        self.datagrams_sent += datagrams_sent;
        self.datagrams_received += datagrams_received;
        self.retransmissions += retransmissions;
        self.duplicates_dropped += duplicates_dropped;
        self.acks_sent += acks_sent;
        self.injected_drops += injected_drops;
        self.injected_reorders += injected_reorders;
        self.injected_duplicates += injected_duplicates;
        self.strangers_dropped += strangers_dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_sums_every_field() {
        let one = Counters {
            messages_sent: 1,
            messages_received: 2,
            bytes_sent: 3,
            bytes_received: 4,
            datagrams_sent: 5,
            datagrams_received: 6,
            retransmissions: 7,
            duplicates_dropped: 8,
            acks_sent: 9,
            injected_drops: 10,
            injected_reorders: 11,
            injected_duplicates: 12,
            strangers_dropped: 13,
        };
        let mut total = one.clone();
        total.add(&one);
        assert_eq!(total.messages_sent, 2);
        assert_eq!(total.strangers_dropped, 26);
        assert_eq!(total.injected_reorders, 22);
        let mut zero = Counters::default();
        zero.add(&one);
        assert_eq!(zero, one);
    }
}
