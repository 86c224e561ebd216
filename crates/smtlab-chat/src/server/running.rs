//! The one interface of a started design, behind
//! [`ChatServer`](super::ChatServer).

use std::io;

/// How each model is stopped: the listener closed, every connection
/// closed, every thread joined.
pub(crate) trait Running: Send + Sync {
    fn stop(&mut self) -> io::Result<()>;
    /// The server's own threads now (loops, or the acceptor and the
    /// connections' threads).
    fn threads(&self) -> usize;
}
