//! The one interface of a started architecture, behind [`Server`](super::Server).

use std::io;

use super::stats::ServerStats;

/// What each architecture's `start` returns: how to stop it and what it
/// reports. Stopping closes the listener, ends every worker (threads
/// joined, processes reaped) and closes every connection.
pub(crate) trait Running: Send {
    fn stats(&self) -> ServerStats;
    fn stop(&mut self) -> io::Result<()>;
}
