//! What to load and how ([`ChatLoadConfig`]), with the caller's phase
//! [`Hook`]s.

use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ChatLoadConfig {
    pub target: SocketAddr,
    /// Rooms (channels), at least 1.
    pub rooms: usize,
    /// Clients per room, at least 2.
    pub users: usize,
    /// Messages each client sends, at least 1.
    pub messages: usize,
    /// Open loop: messages per second in all, each latency from its
    /// intended send time. `None`: closed loop.
    pub rate: Option<f64>,
    /// Closed loop: messages of a sender that may be on their way to some
    /// member of its room at once (default 1).
    pub window: usize,
    /// Length of the PRIVMSG text (default 64).
    pub message_bytes: usize,
    /// Client threads; whole rooms are spread over them (default 1).
    pub threads: usize,
    /// Client thread k runs on `cpus[k % len]`; empty = not pinned.
    pub cpus: Vec<u32>,
    /// Every client must have registered and joined within this (default
    /// 60 s).
    pub connect_timeout: Duration,
    /// A message not at every member this long after it was sent is lost
    /// (default 10 s); the run also ends this long after its last send.
    pub timeout: Duration,
    /// Nicknames are `{nick_prefix}{index in base 36}`, at most 9
    /// characters (default `s`).
    pub nick_prefix: String,
    /// Channels are `#{channel_prefix}{room}` (default `smtlab`).
    pub channel_prefix: String,
    /// Connections opened per second at most during set-up; `None`: as
    /// fast as [`MAX_IN_PROGRESS`](super::MAX_IN_PROGRESS) allows.
    pub connect_rate: Option<f64>,
    /// Called once every client has joined, before the first message is
    /// sent (the run waits for it): where a caller reads the server's CPU
    /// time, so that set-up is not counted per message.
    pub on_start: Option<Hook>,
    /// Called once every thread has ended its messages (delivered, or given
    /// up after `timeout`), before any connection is closed: the end of
    /// the measured phase, so that tear-down is not counted either.
    pub on_end: Option<Hook>,
}

/// A caller's function run at a phase boundary of a load run.
#[derive(Clone)]
pub struct Hook(pub std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}

impl ChatLoadConfig {
    /// `rooms` rooms of `users` clients sending `messages` each, closed
    /// loop, with the defaults above.
    pub fn new(target: SocketAddr, rooms: usize, users: usize, messages: usize) -> Self {
        ChatLoadConfig {
            target,
            rooms,
            users,
            messages,
            rate: None,
            window: 1,
            message_bytes: 64,
            threads: 1,
            cpus: Vec::new(),
            connect_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(10),
            nick_prefix: "s".into(),
            channel_prefix: "smtlab".into(),
            connect_rate: None,
            on_start: None,
            on_end: None,
        }
    }

    /// Clients in all.
    pub fn connections(&self) -> usize {
        self.rooms.saturating_mul(self.users)
    }
}
