//! What to start: the design ([`Model`]) and its settings
//! ([`ChatConfig`]). Its own file, as are the counters (`stats.rs`), so
//! that the designs share them without using the module that starts them.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

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
