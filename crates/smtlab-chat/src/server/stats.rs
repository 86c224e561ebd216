//! What every design counts ([`ChatCounters`]) and a running server
//! reports ([`ChatStats`]), with the reason of a close they share.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// What every model counts (atomics shared by its threads).
#[derive(Debug, Default)]
pub struct ChatCounters {
    pub accepted: AtomicU64,
    pub open: AtomicU64,
    pub registered: AtomicU64,
    /// PRIVMSG and NOTICE lines received with a target and text.
    pub messages_in: AtomicU64,
    /// Lines of those handed to a recipient (a channel message counts once
    /// per member it went to).
    pub deliveries: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Connections closed because their send queue passed its bound.
    pub send_queue_closes: AtomicU64,
    /// Connections refused past `max_connections`.
    pub overloads: AtomicU64,
    pub io_errors: AtomicU64,
}

/// [`ChatCounters`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChatSnapshot {
    pub accepted: u64,
    pub open: u64,
    pub registered: u64,
    pub messages_in: u64,
    pub deliveries: u64,
    pub bytes_out: u64,
    pub send_queue_closes: u64,
    pub overloads: u64,
    pub io_errors: u64,
}

impl ChatCounters {
    pub fn snapshot(&self) -> ChatSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ChatSnapshot {
            accepted: get(&self.accepted),
            open: get(&self.open),
            registered: get(&self.registered),
            messages_in: get(&self.messages_in),
            deliveries: get(&self.deliveries),
            bytes_out: get(&self.bytes_out),
            send_queue_closes: get(&self.send_queue_closes),
            overloads: get(&self.overloads),
            io_errors: get(&self.io_errors),
        }
    }
}

/// What a running chat server reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatStats {
    pub counters: ChatSnapshot,
    pub channels: usize,
    /// The server's own threads now: `event` its loops; the thread models
    /// the acceptor and every connection's thread(s).
    pub threads: usize,
    /// Connections the server closed, by reason.
    pub closes: BTreeMap<String, u64>,
}

/// The reason a client is disconnected when its send queue is full.
pub const SENDQ_EXCEEDED: &str = "SendQ exceeded";
