//! The settings of an endpoint, checked once when it is made.
//!
//! Every rank of a run must use the same `window` and `max_message` (a
//! receiver discards data beyond its own window and messages larger than
//! its own limit); the timeouts and the fault may differ per rank.

use thiserror::Error;

use crate::fault::Fault;
use crate::wire::MAX_FRAGMENT;

/// The most ranks a header can name (ranks travel as `u16`).
pub const MAX_RANKS: usize = u16::MAX as usize;

/// The largest window accepted: far below the 2^31 that 32-bit sequence
/// numbers on the wire allow, and already ~18 MB of buffers per peer.
pub const MAX_WINDOW: usize = 4096;

/// The longest timeout accepted, so timer arithmetic stays far from
/// overflow and a misread unit (seconds for nanoseconds) is caught.
pub const MAX_TIMEOUT_NS: u64 = 60_000_000_000;

/// How an endpoint behaves. Make one with [`Config::new`] and change the
/// fields that matter.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Ranks in the run (`1..=65535`); ranks are `0..ranks`.
    pub ranks: usize,
    /// Datagrams in flight (sent, not yet acknowledged) per peer
    /// (`1..=4096`, default 64). Memory per peer is about
    /// `window × 8.7 KB + max_message`, allocated once.
    pub window: usize,
    /// The largest message in bytes (default 256 KiB). All its fragments
    /// must fit in the window at once, so at most `window × 4352`.
    pub max_message: usize,
    /// Retransmission timeout of a datagram's first retransmission, in
    /// nanoseconds (default 5 ms).
    pub rto_ns: u64,
    /// Cap of the doubling retransmission timeout (default 200 ms).
    pub max_rto_ns: u64,
    /// How long an ack may be owed before a standalone ack is sent, in the
    /// hope that a data datagram carries it for free first (default 1 ms;
    /// must be below `rto_ns`, or the sender retransmits before the ack
    /// comes).
    pub ack_delay_ns: u64,
    /// Faults injected into outgoing datagrams (default none).
    pub fault: Fault,
}

/// A configuration value out of range.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// A field's value is outside its valid range.
    #[error("{field} = {value} is invalid: must be {valid}")]
    Invalid {
        /// The field, as named in [`Config`] (`fault.loss` for the fault's).
        field: &'static str,
        /// The value given.
        value: String,
        /// What would be valid.
        valid: String,
    },
    /// The endpoint's own rank is not one of the run's.
    #[error("rank {rank} is invalid: must be below ranks = {ranks}")]
    Rank {
        /// The rank given.
        rank: usize,
        /// Ranks in the run.
        ranks: usize,
    },
}

impl Config {
    /// The defaults for a run of `ranks` ranks: window 64, messages up to
    /// 256 KiB, retransmission after 5 ms doubling up to 200 ms, acks
    /// delayed up to 1 ms, no faults.
    pub fn new(ranks: usize) -> Config {
        Config {
            ranks,
            window: 64,
            max_message: 256 * 1024,
            rto_ns: 5_000_000,
            max_rto_ns: 200_000_000,
            ack_delay_ns: 1_000_000,
            fault: Fault::none(),
        }
    }

    /// How many datagrams a message of `len` bytes takes (an empty message
    /// still takes one).
    pub fn fragments(len: usize) -> usize {
        len.div_ceil(MAX_FRAGMENT).max(1)
    }

    /// Checks every field; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn invalid(field: &'static str, value: impl ToString, valid: impl ToString) -> ConfigError {
            ConfigError::Invalid {
                field,
                value: value.to_string(),
                valid: valid.to_string(),
            }
        }
        if !(1..=MAX_RANKS).contains(&self.ranks) {
            return Err(invalid("ranks", self.ranks, format!("in 1..={MAX_RANKS}")));
        }
        if !(1..=MAX_WINDOW).contains(&self.window) {
            return Err(invalid(
                "window",
                self.window,
                format!("in 1..={MAX_WINDOW}"),
            ));
        }
        let most = self.window * MAX_FRAGMENT;
        if self.max_message > most {
            return Err(invalid(
                "max_message",
                self.max_message,
                format!(
                    "at most window × {MAX_FRAGMENT} = {most}, so a largest message fits in the window"
                ),
            ));
        }
        if !(1..=MAX_TIMEOUT_NS).contains(&self.rto_ns) {
            return Err(invalid(
                "rto_ns",
                self.rto_ns,
                format!("in 1..={MAX_TIMEOUT_NS}"),
            ));
        }
        if !(self.rto_ns..=MAX_TIMEOUT_NS).contains(&self.max_rto_ns) {
            return Err(invalid(
                "max_rto_ns",
                self.max_rto_ns,
                format!(
                    "in rto_ns..={MAX_TIMEOUT_NS} ({}..={MAX_TIMEOUT_NS})",
                    self.rto_ns
                ),
            ));
        }
        if self.ack_delay_ns >= self.rto_ns {
            return Err(invalid(
                "ack_delay_ns",
                self.ack_delay_ns,
                format!("below rto_ns = {}", self.rto_ns),
            ));
        }
        let probabilities = [
            ("fault.loss", self.fault.loss),
            ("fault.reorder", self.fault.reorder),
            ("fault.duplicate", self.fault.duplicate),
        ];
        for (field, p) in probabilities {
            // `contains` is false for NaN too.
            if !(0.0..=1.0).contains(&p) {
                return Err(invalid(field, p, "a probability in 0..=1"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(c: &Config) -> &'static str {
        match c.validate() {
            Err(ConfigError::Invalid { field, .. }) => field,
            other => panic!("expected an invalid field, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid_and_fit_the_largest_message_in_the_window() {
        let c = Config::new(4);
        assert_eq!(c.validate(), Ok(()));
        assert!(Config::fragments(c.max_message) <= c.window);
        assert_eq!(Config::fragments(0), 1);
        assert_eq!(Config::fragments(MAX_FRAGMENT), 1);
        assert_eq!(Config::fragments(MAX_FRAGMENT + 1), 2);
    }

    #[test]
    fn each_bad_field_is_named() {
        let ok = Config::new(4);
        let cases: Vec<(Config, &str)> = vec![
            (
                Config {
                    ranks: 0,
                    ..ok.clone()
                },
                "ranks",
            ),
            (
                Config {
                    ranks: 70_000,
                    ..ok.clone()
                },
                "ranks",
            ),
            (
                Config {
                    window: 0,
                    ..ok.clone()
                },
                "window",
            ),
            (
                Config {
                    window: 8,
                    ..ok.clone()
                },
                "max_message",
            ),
            (
                Config {
                    rto_ns: 0,
                    ..ok.clone()
                },
                "rto_ns",
            ),
            (
                Config {
                    max_rto_ns: 1,
                    ..ok.clone()
                },
                "max_rto_ns",
            ),
            (
                Config {
                    ack_delay_ns: 5_000_000,
                    ..ok.clone()
                },
                "ack_delay_ns",
            ),
            (
                Config {
                    fault: Fault {
                        loss: 1.5,
                        ..Fault::none()
                    },
                    ..ok.clone()
                },
                "fault.loss",
            ),
            (
                Config {
                    fault: Fault {
                        reorder: f64::NAN,
                        ..Fault::none()
                    },
                    ..ok.clone()
                },
                "fault.reorder",
            ),
            (
                Config {
                    fault: Fault {
                        duplicate: -0.1,
                        ..Fault::none()
                    },
                    ..ok.clone()
                },
                "fault.duplicate",
            ),
        ];
        for (c, field) in cases {
            assert_eq!(field_of(&c), field, "{c:?}");
        }
    }

    #[test]
    fn the_message_names_the_valid_range() {
        let c = Config {
            window: 0,
            ..Config::new(2)
        };
        assert_eq!(
            c.validate().unwrap_err().to_string(),
            "window = 0 is invalid: must be in 1..=4096"
        );
    }
}
