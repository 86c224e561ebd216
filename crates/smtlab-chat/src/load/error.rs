//! Why a chat load run could not be made ([`ChatLoadError`]), and how its
//! messages write a duration.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// Why a chat load run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ChatLoadError {
    // The io errors are in the messages, not sources: each is one line.
    #[error("cannot connect to {0}: {1}")]
    Unreachable(SocketAddr, io::Error),
    /// A configuration value out of its range: the message names the field
    /// and the range.
    #[error("{0}")]
    Invalid(String),
    /// Not every client registered and joined.
    #[error("{0}")]
    Setup(String),
    #[error("{0}: {1}")]
    Io(String, io::Error),
}

/// `60 s`, `0.5 s`: a duration in messages.
pub(crate) fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}
