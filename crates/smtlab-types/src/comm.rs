//! How a rank of a software-DSM run notices requests from other ranks
//! (`--comm`): the JIAJIA study's mechanisms.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a rank notices and serves incoming requests (page fetches, diffs,
/// locks, barriers) while its computation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Comm {
    /// Signal-driven I/O (`O_ASYNC`, `F_SETSIG`): the signal handler serves
    /// requests on the computing thread, interrupting it.
    Sigio,
    /// One communication thread sends, receives and serves.
    Thr1,
    /// A sending thread, and a receiving thread that also serves.
    Thr2,
    /// A sending, a receiving and a serving thread.
    Thr3,
    /// No interrupt and no thread: the computation checks for messages
    /// between its steps and blocks on receive only while it waits.
    Poll,
}

impl Comm {
    /// Every mechanism, in the study's order.
    pub const ALL: [Comm; 5] = [Comm::Sigio, Comm::Thr1, Comm::Thr2, Comm::Thr3, Comm::Poll];

    pub fn as_str(self) -> &'static str {
        match self {
            Comm::Sigio => "sigio",
            Comm::Thr1 => "thr1",
            Comm::Thr2 => "thr2",
            Comm::Thr3 => "thr3",
            Comm::Poll => "poll",
        }
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `--comm` that names no mechanism.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--comm `{0}`: expected sigio, thr1, thr2, thr3 or poll")]
pub struct CommError(pub String);

impl FromStr for Comm {
    type Err = CommError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Comm::ALL
            .into_iter()
            .find(|c| c.as_str() == s.trim())
            .ok_or_else(|| CommError(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mechanism_reads_back_its_name_and_others_are_refused() {
        for c in Comm::ALL {
            assert_eq!(c.as_str().parse::<Comm>(), Ok(c));
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{c}\""));
        }
        let e = "signal".parse::<Comm>().unwrap_err().to_string();
        assert_eq!(
            e,
            "--comm `signal`: expected sigio, thr1, thr2, thr3 or poll"
        );
    }
}
