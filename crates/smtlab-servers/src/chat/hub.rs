//! What the connections of a chat server share: the nicknames in use, the
//! channels and their members, and each connection's [`Outbox`] (how a
//! line reaches it, which is what differs between the models).
//!
//! Locks: one `RwLock` over the nickname map and one over the channel map
//! (taken for a lookup, briefly), and one `RwLock` per channel over its
//! members, held for reading while a message is handed to each member's
//! outbox. A member's outbox never blocks (each model queues or buffers,
//! bounded), so a slow member cannot hold a channel's lock for long.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::irc;
use super::ChatCounters;

/// A line on its way out, CR LF included, shared by every member it goes
/// to (formatted once per message, not once per member).
pub type Line = Arc<[u8]>;

/// How lines reach one connection. Never blocks: past the model's bound the
/// connection is closed with `reason` instead (a slow or dead client must
/// not stall its room).
pub trait Outbox: Send + Sync {
    fn push(&self, line: &Line);
    /// Close the connection; what it still has queued may be dropped.
    fn close(&self, reason: &str);
}

/// One connection as others see it.
pub struct Client {
    pub id: u64,
    /// The peer's address, shown as the host of the prefix.
    pub host: String,
    /// Nickname (empty before NICK); changed only by the connection itself.
    pub nick: RwLock<String>,
    pub out: Arc<dyn Outbox>,
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

    /// Hands `line` to every member of `channel` but `except`, adding how
    /// many get it to `count` first (so a counter read after a member got
    /// the line includes it).
    pub fn broadcast(
        &self,
        channel: &Channel,
        line: &Line,
        except: Option<u64>,
        count: Option<&AtomicU64>,
    ) {
        let members = channel.members.read().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = count {
            let n = members.iter().filter(|m| Some(m.id) != except).count();
            count.fetch_add(n as u64, Ordering::Relaxed);
        }
        for m in members.iter() {
            if Some(m.id) != except {
                m.out.push(line);
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
