//! Placement policies as written: `compact`, `scatter`, `core`, `smt:K`,
//! `none`, or a CPU expression. Parsing here is syntax only; what a policy
//! means on a machine (which PUs) is `smtlab_topology::placement`, where a
//! CPU expression is checked against the machine it names.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A placement policy that is not one (empty, or `smt:` without a core).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("placement `{text}`: {reason}")]
pub struct PolicyError {
    pub text: String,
    pub reason: String,
}

/// How to choose PUs for workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    Compact,
    Scatter,
    Core,
    /// All workers on the PUs of this logical core (`Topology::cores` index).
    Smt(usize),
    /// No pinning.
    None,
    /// A CPU expression (`smtlab_topology::cpu_expr`), checked when placing.
    Expr(String),
}

impl FromStr for Policy {
    type Err = PolicyError;

    /// `compact`, `scatter`, `core`, `smt:K` (also `core:K`, the spelling of
    /// the project's design document), `none`; anything else is taken as a CPU expression and
    /// validated against a topology when placing (`smtlab_topology::placement::place`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let lower = text.to_ascii_lowercase();
        Ok(match lower.as_str() {
            "compact" => Policy::Compact,
            "scatter" => Policy::Scatter,
            "core" => Policy::Core,
            "none" => Policy::None,
            "" => {
                return Err(PolicyError {
                    text: s.to_string(),
                    reason: "empty; expected compact, scatter, core, smt:K, none \
                             or a CPU expression such as 0,2-5 or S0:0-3"
                        .to_string(),
                })
            }
            _ => match lower
                .strip_prefix("smt:")
                .or_else(|| lower.strip_prefix("core:"))
            {
                Some(k) => {
                    if k.is_empty() || !k.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(PolicyError {
                            text: s.to_string(),
                            reason: format!(
                                "`{k}` is not a core number; expected smt:K with K a \
                                 logical core index, e.g. smt:0"
                            ),
                        });
                    }
                    Policy::Smt(k.parse().unwrap_or(usize::MAX))
                }
                None => Policy::Expr(text.to_string()),
            },
        })
    }
}

impl fmt::Display for Policy {
    /// The canonical text form, which [`Policy::from_str`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Compact => f.write_str("compact"),
            Policy::Scatter => f.write_str("scatter"),
            Policy::Core => f.write_str("core"),
            Policy::Smt(k) => write!(f, "smt:{k}"),
            Policy::None => f.write_str("none"),
            Policy::Expr(e) => f.write_str(e),
        }
    }
}

impl Serialize for Policy {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A placement as the user wrote it (`compact`, `core:2`, `S0:0-3`) with the
/// policy it parses to: the policy places workers, the text labels the
/// points, so a table says what the user asked for in their own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySpec {
    /// Trimmed, otherwise as written.
    pub text: String,
    pub policy: Policy,
}

impl FromStr for PolicySpec {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(PolicySpec {
            text: s.trim().to_string(),
            policy: s.parse()?,
        })
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A placement is the text it was written as (for tables and tests).
impl PartialEq<&str> for PolicySpec {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

/// Stored as written.
impl Serialize for PolicySpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for PolicySpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
