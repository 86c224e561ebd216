//! What the connections of a chat server share: the nicknames in use, the
//! channels and their members, and each connection's [`Outbox`] (how a
//! line reaches it, which is what differs between the models).
//!
//! Locks: one `RwLock` over the nickname map and one over the channel map
//! (taken for a lookup, briefly), and one `RwLock` per channel over its
//! members, held for reading while a message is handed to each member's
//! outbox. A member's outbox never blocks (each model queues or buffers,
//! bounded), so a slow member cannot hold a channel's lock for long.
//!
//! Back-pressure: handing a line to an outbox says whether that
//! connection's queue is now above its high-water mark, half the send
//! queue. The sender's session collects those connections, and the model
//! stops reading the sender until each is back at its low-water mark (a
//! quarter). So a burst waits in the sender's socket, not in a reader's
//! queue, and a member who reads is never closed because of someone
//! else's burst or of the replies to its own commands. A member who does
//! not read (or reads a trickle, on purpose or not) would hold its room
//! for ever: a sender waits for one connection at most [`STALL`]; if its
//! queue is not down to the low-water mark by then it is marked not
//! reading, senders stop waiting for it, and its send queue bound closes
//! it (`SendQ exceeded`) unless it drains first.
//!
//! ngircd throttles senders instead, whatever their output does: at most
//! 3 commands of a client per pass of its loop, a penalty time, and no
//! read from a client while a command's worth of its input waits. Here a
//! sender is held back only while the output it causes is full, so the
//! common case (everyone reads) costs a comparison per delivered line
//! (and, in `event`, a counter stored per line and per write); no system
//! call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use super::irc;
use super::stats::ChatCounters;

/// A line on its way out, CR LF included, shared by every member it goes
/// to (formatted once per message, not once per member).
pub type Line = Arc<[u8]>;

/// How long a sender waits for one connection's queue to get down to its
/// low-water mark before that connection is marked not reading (and its
/// senders go on without it): a client must take a quarter of its send
/// queue in this time (16 KiB: 8 KiB/s at the default) while it holds
/// someone back. Long enough for a reader on a loaded machine to be
/// scheduled; short enough that a room stalls only for a moment when one
/// member hangs, and that a member reading a trickle cannot set the room's
/// pace.
pub const STALL: Duration = Duration::from_secs(2);

/// How long a closed connection keeps trying to write what it still has,
/// its `ERROR` line last (best effort: a client that reads again within
/// it learns why it was closed), before the socket is closed.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// How long a thread waiting for room sleeps before it looks again at
/// what it cannot be woken for (the time, a stop).
pub const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Above it a connection's queue holds its senders back: half the bound.
pub fn high_water(bound: usize) -> usize {
    bound / 2
}

/// Senders held back go on once the queue is down to it: a quarter.
pub fn low_water(bound: usize) -> usize {
    bound / 4
}

/// The line every connection gets before the server closes it (RFC 2812
/// §3.1.7), with the reason.
pub fn error_line(host: &str, reason: &str) -> Line {
    format!("ERROR :Closing Link: {host} ({reason})\r\n")
        .into_bytes()
        .into()
}

/// Of `pending` (bytes not yet written), how many to keep when the rest
/// is dropped: none, or up to the end of the line whose start was already
/// written (`mid_line`), so that the client never sees half a line.
pub fn finish_line(pending: &[u8], mid_line: bool) -> usize {
    if !mid_line {
        return 0;
    }
    pending
        .iter()
        .position(|&c| c == b'\n')
        .map_or(pending.len(), |i| i + 1)
}

/// How lines reach one connection. Never blocks.
pub trait Outbox: Send + Sync {
    /// A line from another connection (or a channel's line to all its
    /// members). Past the send queue bound the connection is closed with
    /// `SendQ exceeded` (an empty queue always takes one line). True when
    /// the queue is now above its high-water mark and the connection is
    /// not marked not reading: the sender should wait for room.
    fn push(&self, line: &Line) -> bool;
    /// A reply to the connection's own command: never closes it (its
    /// reading stops above the high-water mark instead, so what it waits
    /// for is at most one command's replies past it). True when above the
    /// high-water mark.
    fn reply(&self, line: &Line) -> bool;
    /// Whether a sender held back by this connection may go on: its queue
    /// is down to the low-water mark, or it is closed or marked not
    /// reading.
    fn has_room(&self) -> bool;
    /// Marks it not reading: no sender waits for it until its queue is
    /// down to the low-water mark again, and its bound decides.
    fn mark_not_reading(&self);
    /// The thread models: blocks up to `slice` for room; true once there
    /// is. (An event loop never blocks: it looks at `has_room`.)
    fn wait_room(&self, slice: Duration) -> bool;
}

/// The thread models: blocks until another connection, `to`, has room,
/// for at most [`STALL`] (then it is marked not reading: its senders go
/// on, and its bound closes it unless it drains). Returns early when
/// `stop` says so (the server stops, or the waiting connection was
/// closed).
pub fn wait_for_room(to: &dyn Outbox, stop: &dyn Fn() -> bool) {
    let deadline = Instant::now() + STALL;
    while !to.wait_room(WAIT_SLICE) {
        if stop() {
            return;
        }
        if Instant::now() >= deadline {
            to.mark_not_reading();
            return;
        }
    }
}

/// One connection as others see it.
pub struct Client {
    pub id: u64,
    /// The peer's address, shown as the host of the prefix.
    pub host: String,
    /// Nickname (empty before NICK); changed only by the connection itself.
    pub nick: RwLock<String>,
    /// What its USER said, set once, at registration (unset before).
    pub user: OnceLock<UserInfo>,
    pub out: Arc<dyn Outbox>,
}

/// A registered client's USER: what WHO shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name, as in its prefix (`nick!user@host`).
    pub user: String,
    pub real_name: String,
}

impl Client {
    pub fn nick(&self) -> String {
        self.nick.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A channel: its name as first written, and its members in join order.
pub struct Channel {
    pub name: String,
    pub members: RwLock<Vec<Arc<Client>>>,
}

/// Everything the connections share.
pub struct Hub {
    pub server_name: String,
    /// When the server started, for 003 RPL_CREATED.
    pub created: String,
    nicks: RwLock<HashMap<Vec<u8>, Arc<Client>>>,
    channels: RwLock<HashMap<Vec<u8>, Arc<Channel>>>,
    next_id: AtomicU64,
    pub counters: Arc<ChatCounters>,
    /// The most channels one client may be on (405 past it).
    pub max_channels: usize,
    /// Why each connection closed that the server closed (for the stats).
    pub closes: Mutex<HashMap<String, u64>>,
}

impl Hub {
    pub fn new(server_name: &str, counters: Arc<ChatCounters>) -> Hub {
        Hub {
            server_name: server_name.to_string(),
            created: httpdate::fmt_http_date(std::time::SystemTime::now()),
            nicks: RwLock::new(HashMap::new()),
            channels: RwLock::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            counters,
            max_channels: 50,
            closes: Mutex::new(HashMap::new()),
        }
    }

    pub fn new_client(&self, host: String, out: Arc<dyn Outbox>) -> Arc<Client> {
        Arc::new(Client {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            host,
            nick: RwLock::new(String::new()),
            user: OnceLock::new(),
            out,
        })
    }

    /// Takes `nick` for `client` (releasing its previous one); false when
    /// another client holds it.
    pub fn claim_nick(&self, client: &Arc<Client>, nick: &str) -> bool {
        let key = irc::fold(nick.as_bytes());
        let mut nicks = self.nicks.write().unwrap_or_else(|e| e.into_inner());
        if let Some(holder) = nicks.get(&key) {
            if holder.id != client.id {
                return false;
            }
        }
        let old = client.nick();
        if !old.is_empty() {
            nicks.remove(&irc::fold(old.as_bytes()));
        }
        nicks.insert(key, client.clone());
        *client.nick.write().unwrap_or_else(|e| e.into_inner()) = nick.to_string();
        true
    }

    pub fn release_nick(&self, client: &Client) {
        let old = client.nick();
        if old.is_empty() {
            return;
        }
        let key = irc::fold(old.as_bytes());
        let mut nicks = self.nicks.write().unwrap_or_else(|e| e.into_inner());
        if nicks.get(&key).is_some_and(|c| c.id == client.id) {
            nicks.remove(&key);
        }
    }

    pub fn find_nick(&self, nick: &[u8]) -> Option<Arc<Client>> {
        let nicks = self.nicks.read().unwrap_or_else(|e| e.into_inner());
        nicks.get(&irc::fold(nick)).cloned()
    }

    pub fn find_channel(&self, name: &[u8]) -> Option<Arc<Channel>> {
        let channels = self.channels.read().unwrap_or_else(|e| e.into_inner());
        channels.get(&irc::fold(name)).cloned()
    }

    /// Adds `client` to the channel `name` (made if new); `None` when it was
    /// on it already.
    pub fn join(&self, name: &[u8], client: &Arc<Client>) -> Option<Arc<Channel>> {
        let key = irc::fold(name);
        let channel = {
            let mut channels = self.channels.write().unwrap_or_else(|e| e.into_inner());
            channels
                .entry(key)
                .or_insert_with(|| {
                    Arc::new(Channel {
                        name: String::from_utf8_lossy(name).into_owned(),
                        members: RwLock::new(Vec::new()),
                    })
                })
                .clone()
        };
        let mut members = channel.members.write().unwrap_or_else(|e| e.into_inner());
        if members.iter().any(|m| m.id == client.id) {
            return None;
        }
        members.push(client.clone());
        drop(members);
        Some(channel)
    }

    /// Removes `client` from `channel`; an empty channel is forgotten.
    pub fn part(&self, channel: &Arc<Channel>, client: &Client) {
        let empty = {
            let mut members = channel.members.write().unwrap_or_else(|e| e.into_inner());
            members.retain(|m| m.id != client.id);
            members.is_empty()
        };
        if empty {
            let key = irc::fold(channel.name.as_bytes());
            let mut channels = self.channels.write().unwrap_or_else(|e| e.into_inner());
            // Only if it is still this channel and still empty (someone may
            // have joined between the two locks).
            if channels.get(&key).is_some_and(|c| {
                Arc::ptr_eq(c, channel)
                    && c.members
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .is_empty()
            }) {
                channels.remove(&key);
            }
        }
    }

    /// Hands `line` to every member of `channel` (`from` too when
    /// `to_self`, as its own reply), adding how many others get it to
    /// `count` first (so a counter read after a member got the line
    /// includes it). Members whose queue it filled past the high-water
    /// mark are added to `full` (once each).
    pub fn broadcast(
        &self,
        channel: &Channel,
        line: &Line,
        from: &Client,
        to_self: bool,
        count: Option<&AtomicU64>,
        full: &mut Vec<Arc<Client>>,
    ) {
        let members = channel.members.read().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = count {
            let n = members.iter().filter(|m| m.id != from.id).count();
            count.fetch_add(n as u64, Ordering::Relaxed);
        }
        for m in members.iter() {
            let filled = if m.id != from.id {
                m.out.push(line)
            } else if to_self {
                m.out.reply(line)
            } else {
                false
            };
            if filled {
                note_full(full, m);
            }
        }
    }

    /// Counts a connection the server closed, by reason.
    pub fn count_close(&self, reason: &str) {
        let mut closes = self.closes.lock().unwrap_or_else(|e| e.into_inner());
        *closes.entry(reason.to_string()).or_default() += 1;
    }

    pub fn channels(&self) -> usize {
        self.channels
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }
}

/// Adds `client` to `full` unless it is there.
pub fn note_full(full: &mut Vec<Arc<Client>>, client: &Arc<Client>) {
    if !full.iter().any(|c| c.id == client.id) {
        full.push(client.clone());
    }
}
