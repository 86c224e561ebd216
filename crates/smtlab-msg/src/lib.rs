//! A reliable message layer over UDP for smtlab's software-DSM study.
//!
//! Ranks `0..n` each own one UDP socket and know every other rank's
//! address, as in JIAJIA: messages (up to a page plus header in one
//! datagram, larger ones split into fragments) are delivered exactly once,
//! whole, in order per sender and first come first served across senders,
//! over a network that loses, reorders and duplicates datagrams. Each
//! directed channel numbers its datagrams; every datagram back carries the
//! cumulative ack; what is not acknowledged in time is sent again with a
//! doubling timeout.
//!
//! * [`Endpoint`] (`endpoint.rs`) is the protocol: no I/O, no clock, no
//!   locks, and no allocation after [`Endpoint::new`], so a SIGIO handler,
//!   communication threads or the computation itself may drive it, behind
//!   the caller's lock. It uses `outgoing.rs` and `incoming.rs` (the two
//!   halves of a channel), `wire.rs` (the datagram format) and `fault.rs`
//!   (seeded loss, reordering and duplication on the send side, for tests
//!   and for benchmarks over a deliberately bad network).
//! * [`UdpTransport`] (`socket.rs`) is the real network under it (std, and nix
//!   for the socket flags std lacks).
//! * [`Config`] and [`Counters`] are its settings and its statistics.
//!
//! This crate uses no other smtlab crate.

mod config;
mod counters;
mod endpoint;
mod fault;
mod incoming;
mod outgoing;
mod socket;
pub mod wire;

pub use config::{Config, ConfigError, MAX_RANKS, MAX_TIMEOUT_NS, MAX_WINDOW};
pub use counters::Counters;
pub use endpoint::{Endpoint, SendError};
pub use fault::Fault;
pub use socket::UdpTransport;
pub use wire::{HEADER_LEN, MAX_DATAGRAM, MAX_FRAGMENT, PAGE};
