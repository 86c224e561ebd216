//! The chat server, `chat`: a subset of IRC (RFC 2812) — registration,
//! JOIN, PART, PRIVMSG and NOTICE to channels and users, NAMES, WHO, MODE
//! (read only), PING/PONG, QUIT and the usual error numerics — so real IRC
//! clients and load generators work with it, in the three designs of the
//! VolanoMark study (Luo & John) and its answer:
//!
//! * [`Model::Thread2`]: a reader thread and a writer thread per
//!   connection, an outgoing queue between them (VolanoMark's server) —
//!   `thread2.rs`;
//! * [`Model::Thread`]: one thread per connection, which writes to the
//!   others' sockets itself under a per-connection lock — `thread.rs`;
//! * [`Model::Event`]: N epoll loops, non-blocking sockets, a bounded output
//!   buffer per connection — `event.rs`.
//!
//! The protocol (`session.rs`), the line parser (`irc.rs`) and the shared
//! nicknames and channels (`hub.rs`) are the same in all three; a model
//! only decides how bytes get in and out.
//!
//! Back-pressure, in all three: a client whose line filled a queue past
//! half of [`ChatConfig::send_queue`] (a recipient's, or its own with its
//! replies) is not read again until that queue is down to a quarter, so a
//! burst waits in the sender's socket and a client who reads is never
//! disconnected for someone else's burst or for the replies to its own
//! pipelined commands. A dead (or trickling) client never stalls a room
//! for long: a sender waits for it at most 2 s, then stops waiting for it,
//! and past `send_queue` bytes it is disconnected with `ERROR :Closing
//! Link: ... (SendQ exceeded)`; the others see it QUIT with that reason.
//! Every connection the server closes gets its `ERROR` line last (best
//! effort: written within 5 s if the client reads). A line with a NUL byte
//! is dropped (RFC 2812 forbids it; ngircd never handles one).

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

pub mod irc;

mod acceptor;
mod event;
mod hub;
mod session;
mod thread;
mod thread2;

/// The three designs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    Thread2,
    Thread,
    Event,
}

impl Model {
    pub const ALL: [Model; 3] = [Model::Thread2, Model::Thread, Model::Event];

    pub fn name(self) -> &'static str {
        match self {
            Model::Thread2 => "thread2",
            Model::Thread => "thread",
            Model::Event => "event",
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("unknown chat server model `{0}`; expected thread2, thread or event")]
pub struct UnknownModel(pub String);

impl FromStr for Model {
    type Err = UnknownModel;
    fn from_str(s: &str) -> Result<Model, UnknownModel> {
        Model::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownModel(s.to_string()))
    }
}

/// Bytes waiting for one client at most before it is disconnected
/// (`SendQ exceeded`): 64 KiB, some 600 chat lines, ngircd's default for
/// clients too.
pub const DEFAULT_SEND_QUEUE: usize = 64 << 10;
/// Open connections at most; past it a new one gets `ERROR` and is closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100_000;
/// Stack of each thread of the thread models: they only parse lines and
/// format replies, and 20,000 threads (10,000 connections of `thread2`)
/// must fit.
pub const THREAD_STACK: usize = 128 << 10;

/// What to start.
#[derive(Debug, Clone)]
pub struct ChatConfig {
    pub model: Model,
    /// `event`: the number of loops. The thread models have as many threads
    /// as connections (two each for `thread2`) and use `workers` only
    /// through `worker_cpus`.
    pub workers: usize,
    /// `event`: loop k runs on `worker_cpus[k % len]`; the thread models:
    /// every thread may run on any of them. Empty = not pinned.
    pub worker_cpus: Vec<u32>,
    /// The server's name in prefixes and numerics.
    pub server_name: String,
    pub max_connections: usize,
    pub send_queue: usize,
}

impl ChatConfig {
    pub fn new(model: Model, workers: usize) -> ChatConfig {
        ChatConfig {
            model,
            workers,
            worker_cpus: Vec::new(),
            server_name: "smtlab.chat".to_string(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            send_queue: DEFAULT_SEND_QUEUE,
        }
    }
}

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

/// How each model is stopped: the listener closed, every connection
/// closed, every thread joined.
trait Running: Send + Sync {
    fn stop(&mut self) -> io::Result<()>;
    /// The server's own threads now (loops, or the acceptor and the
    /// connections' threads).
    fn threads(&self) -> usize;
}

/// A running chat server. Dropping it stops it.
pub struct ChatServer {
    addr: SocketAddr,
    model: Model,
    hub: Arc<hub::Hub>,
    running: Box<dyn Running>,
    stopped: bool,
}

impl ChatServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn model(&self) -> Model {
        self.model
    }

    pub fn stats(&self) -> ChatStats {
        let closes = self
            .hub
            .closes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        ChatStats {
            counters: self.hub.counters.snapshot(),
            channels: self.hub.channels(),
            threads: self.running.threads(),
            closes,
        }
    }

    /// Stop serving: every connection closed and every thread joined
    /// before it returns.
    pub fn stop(mut self) -> io::Result<()> {
        self.stopped = true;
        self.running.stop()
    }
}

impl Drop for ChatServer {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = self.running.stop();
        }
    }
}

/// Starts `config.model` on `listener` (bound by the caller, e.g. to
/// `127.0.0.1:0`).
pub fn start(config: &ChatConfig, listener: TcpListener) -> io::Result<ChatServer> {
    if config.workers == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a chat server needs at least 1 worker",
        ));
    }
    if config.send_queue < irc::MAX_LINE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "send queue of {} bytes: at least {} (one line)",
                config.send_queue,
                irc::MAX_LINE
            ),
        ));
    }
    crate::web::check_worker_cpus(&config.worker_cpus)?;
    let addr = listener.local_addr()?;
    let counters = Arc::new(ChatCounters::default());
    let hub = Arc::new(hub::Hub::new(&config.server_name, counters));
    let running: Box<dyn Running> = match config.model {
        Model::Thread2 => Box::new(acceptor::start(
            config,
            listener,
            hub.clone(),
            thread2::serve,
        )?),
        Model::Thread => {
            smtlab_sys::install_wake_handler()?;
            Box::new(acceptor::start(
                config,
                listener,
                hub.clone(),
                thread::serve,
            )?)
        }
        Model::Event => Box::new(event::start(config, listener, hub.clone())?),
    };
    Ok(ChatServer {
        addr,
        model: config.model,
        hub,
        running,
        stopped: false,
    })
}

/// The reason a client is disconnected when its send queue is full.
pub const SENDQ_EXCEEDED: &str = "SendQ exceeded";
