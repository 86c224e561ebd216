//! What to start: the design ([`Model`]) and its settings
//! ([`ChatConfig`]). Its own file, as are the counters (`stats.rs`), so
//! that the designs share them without using the module that starts them.

smtlab_serving::server_models! {
    /// The three designs.
    pub enum Model {
        Thread2 = "thread2",
        Thread = "thread",
        Event = "event",
    }
    #[error("unknown chat server model `{0}`; expected thread2, thread or event")]
    pub struct UnknownModel;
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
