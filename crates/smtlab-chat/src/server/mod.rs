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

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

pub use config::{
    ChatConfig, Model, UnknownModel, DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_QUEUE, THREAD_STACK,
};
use running::Running;
pub use stats::{ChatCounters, ChatSnapshot, ChatStats, SENDQ_EXCEEDED};

pub mod irc;

mod acceptor;
mod config;
mod event;
mod hub;
mod running;
mod session;
mod stats;
mod thread;
mod thread2;

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
    smtlab_serving::check_worker_cpus(&config.worker_cpus)?;
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
