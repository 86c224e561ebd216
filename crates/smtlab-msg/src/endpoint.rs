//! [`Endpoint`]: the protocol state machine of one rank.
//!
//! It owns no socket and reads no clock. The caller passes in the time
//! (`now`, monotonic nanoseconds), each datagram that arrived, and a sink
//! `out(to_rank, datagram)` through which the endpoint transmits; messages
//! come out through `deliver(from_rank, message)`. That keeps it
//! deterministic under test and lets any driver — a SIGIO handler,
//! communication threads, polling from the computation — use it, wrapped
//! in the driver's own lock (it has none).
//!
//! Everything is allocated in [`Endpoint::new`]: after that `send`,
//! `receive`, `tick` and `flush_acks` only move bytes between buffers that
//! exist already (`tests/no_alloc.rs` checks it).
//!
//! The protocol, per directed channel: data datagrams are numbered from 1;
//! every datagram back carries the cumulative ack (the receiver has every
//! number below it), so request/reply traffic needs no separate acks; an
//! ack owed for `ack_delay_ns` without data to carry it goes alone. A
//! datagram not acknowledged within its timeout is sent again, the timeout
//! doubling up to `max_rto_ns`. Acks are cumulative only, so a timeout
//! resends everything in flight that has timed out, even datagrams that
//! arrived and wait behind a lost one (go-back-N): simple, and the window
//! bounds the waste.

use thiserror::Error;

use crate::config::{Config, ConfigError};
use crate::counters::Counters;
use crate::fault::Injector;
use crate::incoming::{Arrival, Incoming};
use crate::outgoing::Outgoing;
use crate::wire::{low32, set_ack, Header, Kind, HEADER_LEN, MAX_FRAGMENT};

/// Why a message was not sent. Nothing was queued or transmitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SendError {
    /// The peer's window cannot take all of the message's fragments now.
    /// Serve incoming datagrams (they bring the acks that open the window)
    /// and try again.
    #[error("the window to the peer is full: serve incoming datagrams and retry")]
    WindowFull,
    /// The message is longer than `Config::max_message`.
    #[error("message of {len} bytes exceeds max_message = {max}")]
    TooLarge {
        /// The message's length.
        len: usize,
        /// The configured limit.
        max: usize,
    },
    /// No such rank in the run.
    #[error("no rank {to}: ranks are 0..{ranks}")]
    NoSuchRank {
        /// The rank asked for.
        to: usize,
        /// Ranks in the run.
        ranks: usize,
    },
    /// A rank sending to itself (the DSM handles local requests without
    /// the network).
    #[error("rank {0} cannot send to itself")]
    ToSelf(usize),
}

/// Both halves of the channels with one peer.
#[derive(Debug)]
struct Peer {
    tx: Outgoing,
    rx: Incoming,
}

/// The reliable-message state machine of one rank: exactly-once, in-order
/// delivery per sender over a network that loses, reorders and duplicates
/// datagrams. See the module documentation for how it is driven.
///
/// It is `Send` (plain data) and has no interior locking: drivers on
/// several threads share it behind their own `Mutex`.
#[derive(Debug)]
pub struct Endpoint {
    rank: usize,
    config: Config,
    /// Indexed by rank; our own entry has empty buffers and stays unused.
    peers: Vec<Peer>,
    injector: Injector,
    counters: Counters,
}

impl Endpoint {
    /// The endpoint of rank `rank`, with every buffer it will ever use:
    /// per peer, `window` datagrams to send and `window` early datagrams
    /// plus one message of `max_message` bytes to receive (about
    /// `window × 8.7 KB + max_message`; large buffers are zero pages until
    /// touched).
    pub fn new(rank: usize, config: Config) -> Result<Endpoint, ConfigError> {
        config.validate()?;
        if rank >= config.ranks {
            return Err(ConfigError::Rank {
                rank,
                ranks: config.ranks,
            });
        }
        let peers = (0..config.ranks)
            .map(|r| {
                let (window, max_message) = if r == rank {
                    (0, 0)
                } else {
                    (config.window, config.max_message)
                };
                Peer {
                    tx: Outgoing::new(window),
                    rx: Incoming::new(window, max_message),
                }
            })
            .collect();
        Ok(Endpoint {
            rank,
            injector: Injector::new(config.fault, rank, config.ranks),
            config,
            peers,
            counters: Counters::default(),
        })
    }

    /// This endpoint's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Queues `msg` for rank `to` and transmits it through `out` now: one
    /// datagram, or consecutive fragments of at most `MAX_FRAGMENT` bytes
    /// if it is longer. Each carries our ack for `to`, so no ack is owed to
    /// it afterwards.
    ///
    /// All or nothing: [`SendError::WindowFull`] if the window to `to`
    /// cannot take every fragment now (serve incoming traffic, which
    /// brings acks, and retry); [`SendError::TooLarge`],
    /// [`SendError::NoSuchRank`] and [`SendError::ToSelf`] are the caller's
    /// bugs. Does not allocate.
    pub fn send(
        &mut self,
        to: usize,
        msg: &[u8],
        now: u64,
        out: &mut dyn FnMut(usize, &[u8]),
    ) -> Result<(), SendError> {
        let ranks = self.config.ranks;
        if to >= ranks {
            return Err(SendError::NoSuchRank { to, ranks });
        }
        if to == self.rank {
            return Err(SendError::ToSelf(to));
        }
        if msg.len() > self.config.max_message {
            return Err(SendError::TooLarge {
                len: msg.len(),
                max: self.config.max_message,
            });
        }
        let fragments = Config::fragments(msg.len());
        let peer = &mut self.peers[to];
        if peer.tx.room() < fragments {
            return Err(SendError::WindowFull);
        }
        let ack = low32(peer.rx.ack());
        for i in 0..fragments {
            let start = i * MAX_FRAGMENT;
            let payload = &msg[start..msg.len().min(start + MAX_FRAGMENT)];
            // Validation keeps ranks, fragments and lengths within u16.
            let header = Header {
                kind: Kind::Data,
                src: self.rank as u16,
                dst: to as u16,
                seq: 0,
                ack,
                frag_index: i as u16,
                frag_count: fragments as u16,
                len: payload.len() as u16,
            };
            let datagram = peer.tx.push(header, payload, now, self.config.rto_ns);
            self.injector
                .emit(to, datagram, now, &mut self.counters, out);
        }
        peer.rx.ack_sent(now);
        self.counters.messages_sent += 1;
        self.counters.bytes_sent += msg.len() as u64;
        Ok(())
    }

    /// Takes one datagram that arrived at `now`. Its ack frees our window
    /// to the sender. Its data, if new, is delivered through
    /// `deliver(from, message)` as soon as it completes a message in
    /// sequence order — whole messages only, each exactly once, in the
    /// order the sender sent them, interleaved across senders in arrival
    /// order (first come, first served); data that arrives early waits
    /// until the gap before it fills. A duplicate is dropped and answered
    /// at once with a standalone ack through `out` (its sender evidently
    /// missed our ack; repeated within half a timeout, e.g. for a burst of
    /// retransmissions, only once). Malformed datagrams, datagrams for
    /// another rank and from unknown ranks are counted as strangers and
    /// dropped; nothing a peer sends can make this panic. Does not
    /// allocate.
    ///
    /// `deliver` cannot call back into the endpoint (it is borrowed): a
    /// reply is sent after `receive` returns.
    pub fn receive(
        &mut self,
        datagram: &[u8],
        now: u64,
        out: &mut dyn FnMut(usize, &[u8]),
        deliver: &mut dyn FnMut(usize, &[u8]),
    ) {
        let Ok((header, payload)) = Header::decode(datagram) else {
            self.counters.strangers_dropped += 1;
            return;
        };
        let from = usize::from(header.src);
        if usize::from(header.dst) != self.rank || from >= self.config.ranks || from == self.rank {
            self.counters.strangers_dropped += 1;
            return;
        }
        self.counters.datagrams_received += 1;
        let peer = &mut self.peers[from];
        peer.tx.acknowledge(header.ack, self.config.rto_ns);
        if header.kind == Kind::Ack {
            return;
        }
        match peer
            .rx
            .accept(from, &header, payload, now, &mut self.counters, deliver)
        {
            Arrival::New => {}
            Arrival::Duplicate => {
                self.counters.duplicates_dropped += 1;
                // A retransmission comes a whole timeout after the
                // datagram it repeats, so half a timeout tells a burst of
                // them (one ack answers all) from a lost ack.
                if !peer.rx.acked_within(now, self.config.rto_ns / 2) {
                    send_ack(
                        self.rank,
                        from,
                        peer,
                        now,
                        &mut self.injector,
                        &mut self.counters,
                        out,
                    );
                }
            }
            Arrival::Bogus => self.counters.strangers_dropped += 1,
        }
    }

    /// Does the work that is due at `now`: retransmits every datagram whose
    /// timeout has passed (with our newest ack; its timeout doubles, up to
    /// `max_rto_ns`), sends datagrams the fault injector held back, and
    /// sends a standalone ack to every peer owed one for `ack_delay_ns` or
    /// longer. Call it at [`Endpoint::next_deadline`] (or periodically).
    /// Does not allocate.
    pub fn tick(&mut self, now: u64, out: &mut dyn FnMut(usize, &[u8])) {
        let Endpoint {
            rank,
            config,
            peers,
            injector,
            counters,
        } = self;
        for (to, peer) in peers.iter_mut().enumerate() {
            let ack = low32(peer.rx.ack());
            let resent = peer
                .tx
                .retransmit_due(now, config.max_rto_ns, &mut |datagram| {
                    set_ack(datagram, ack);
                    counters.retransmissions += 1;
                    injector.emit(to, datagram, now, counters, out);
                });
            if resent > 0 {
                peer.rx.ack_sent(now);
            }
        }
        injector.release_all(counters, out);
        for (to, peer) in peers.iter_mut().enumerate() {
            let due = peer
                .rx
                .owed_since()
                .is_some_and(|since| now >= since.saturating_add(config.ack_delay_ns));
            if due {
                send_ack(*rank, to, peer, now, injector, counters, out);
            }
        }
    }

    /// Sends every owed ack now, without waiting for `ack_delay_ns`: call it
    /// before blocking, so that a peer waiting for our ack is not kept
    /// waiting. Does not allocate.
    ///
    /// (It takes `now`, unlike a bare "flush", because the time of the last
    /// ack is what lets `receive` answer a burst of duplicates only once.)
    pub fn flush_acks(&mut self, now: u64, out: &mut dyn FnMut(usize, &[u8])) {
        for (to, peer) in self.peers.iter_mut().enumerate() {
            if peer.rx.owed_since().is_some() {
                send_ack(
                    self.rank,
                    to,
                    peer,
                    now,
                    &mut self.injector,
                    &mut self.counters,
                    out,
                );
            }
        }
    }

    /// The earliest time at which [`Endpoint::tick`] has work (a
    /// retransmission, an owed ack, a held-back datagram), if any; it may
    /// be in the past. Looks at every datagram in flight, so it costs
    /// O(ranks + datagrams in flight).
    pub fn next_deadline(&self) -> Option<u64> {
        let delay = self.config.ack_delay_ns;
        self.peers
            .iter()
            .flat_map(|p| {
                let ack = p.rx.owed_since().map(|s| s.saturating_add(delay));
                [p.tx.deadline(), ack]
            })
            .chain([self.injector.held_since()])
            .flatten()
            .min()
    }

    /// Whether every datagram we sent has been acknowledged. Before
    /// exiting, a rank also owes its peers their last acks: flush them and
    /// keep serving until the peers are idle too (e.g. after a barrier).
    pub fn idle(&self) -> bool {
        self.peers.iter().all(|p| p.tx.in_flight() == 0)
    }

    /// Datagrams to `to` sent and not yet acknowledged (0 for a rank that
    /// does not exist).
    pub fn in_flight(&self, to: usize) -> usize {
        self.peers.get(to).map_or(0, |p| p.tx.in_flight())
    }

    /// Counts a datagram that a transport dropped before the endpoint saw
    /// it (its sender's address is not that of the rank it claims), so
    /// [`Counters::strangers_dropped`] covers every stranger.
    pub fn count_stranger(&mut self) {
        self.counters.strangers_dropped += 1;
    }

    /// What this endpoint has done so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

/// Sends `peer` (rank `to`) a standalone ack from rank `from`.
fn send_ack(
    from: usize,
    to: usize,
    peer: &mut Peer,
    now: u64,
    injector: &mut Injector,
    counters: &mut Counters,
    out: &mut dyn FnMut(usize, &[u8]),
) {
    let header = Header {
        kind: Kind::Ack,
        src: from as u16,
        dst: to as u16,
        seq: 0,
        ack: low32(peer.rx.ack()),
        frag_index: 0,
        frag_count: 0,
        len: 0,
    };
    let mut datagram = [0; HEADER_LEN];
    header.encode(&mut datagram);
    counters.acks_sent += 1;
    injector.emit(to, &datagram, now, counters, out);
    peer.rx.ack_sent(now);
}
