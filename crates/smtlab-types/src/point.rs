//! A point: one configuration to measure (program x model x placement x N x
//! allocator), and the parts it is made of. Plans produce points, the store
//! keeps them, the analysis groups them.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::comm::Comm;
use crate::cpuset::CpuSet;
use crate::server_kind::{ServerKind, CLIENT_CPUS_PARAM};

/// The most workers a point may have: as many as the highest CPU number
/// smtlab accepts (`cpuset::MAX_CPU`), the same bound `--threads` has; a
/// larger count is a typo, and would only exhaust memory planning it.
pub const MAX_WORKERS: usize = crate::cpuset::MAX_CPU as usize;

/// How workers are organised into processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Model {
    /// One process running N threads.
    Thread,
    /// N single-threaded processes.
    Process,
    /// P processes of T threads each.
    Hybrid { processes: usize, threads: usize },
    /// Servers only (`-w web`): N single-threaded event loops in one
    /// process (epoll, non-blocking sockets), Flash/nginx style.
    Event,
    /// Servers only (`-w web`): stages with their own thread pools and
    /// bounded queues between them (SEDA/Haboob), N threads per stage.
    Staged,
    /// Servers only (`-w chat`): a reader and a writer thread per
    /// connection with a queue between them (VolanoMark's server); N is
    /// the CPUs they share.
    Thread2,
}

impl Model {
    /// (processes, threads per process) for N workers.
    pub fn shape(self, workers: usize) -> (usize, usize) {
        match self {
            Model::Thread => (1, workers),
            Model::Process => (workers, 1),
            Model::Hybrid { processes, threads } => (processes, threads),
            Model::Event | Model::Staged | Model::Thread2 => (1, workers),
        }
    }

    /// Whether only server programs ([`Program::Server`]) run in it.
    pub fn server_only(self) -> bool {
        matches!(self, Model::Event | Model::Staged | Model::Thread2)
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Model::Thread => f.write_str("thread"),
            Model::Process => f.write_str("process"),
            Model::Hybrid { processes, threads } => write!(f, "hybrid:{processes}x{threads}"),
            Model::Event => f.write_str("event"),
            Model::Staged => f.write_str("staged"),
            Model::Thread2 => f.write_str("thread2"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--model `{text}`: {reason}")]
pub struct ModelError {
    pub text: String,
    pub reason: String,
}

impl FromStr for Model {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| ModelError {
            text: s.to_string(),
            reason: reason.to_string(),
        };
        match s.trim() {
            "thread" | "threads" => Ok(Model::Thread),
            "process" | "processes" => Ok(Model::Process),
            "event" => Ok(Model::Event),
            "staged" => Ok(Model::Staged),
            "thread2" => Ok(Model::Thread2),
            other => {
                let Some(shape) = other.strip_prefix("hybrid:") else {
                    return Err(err(
                        "expected thread, process, hybrid:PxT (e.g. hybrid:2x4), or for servers also event, staged (-w web) or thread2 (-w chat)",
                    ));
                };
                let (p, t) = shape
                    .split_once('x')
                    .ok_or_else(|| err("expected hybrid:PxT, e.g. hybrid:2x4"))?;
                let num = |v: &str| v.parse::<usize>().ok().filter(|n| *n > 0);
                match (num(p), num(t)) {
                    (Some(processes), Some(threads))
                        if processes
                            .checked_mul(threads)
                            .is_some_and(|n| n <= MAX_WORKERS) =>
                    {
                        Ok(Model::Hybrid { processes, threads })
                    }
                    (Some(_), Some(_)) => Err(err(&format!(
                        "P x T in hybrid:PxT is at most {MAX_WORKERS} workers"
                    ))),
                    _ => Err(err("P and T in hybrid:PxT must be positive integers")),
                }
            }
        }
    }
}

/// How worker processes are started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Spawn {
    /// exec of smtlab's hidden worker subcommand: a fresh address space per
    /// process, like N JVMs.
    #[default]
    Exec,
    /// fork of the parent after set-up: prefork-style, pages shared
    /// copy-on-write.
    Fork,
}

/// `--spawn` that is neither `exec` nor `fork`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--spawn {0}: expected exec or fork")]
pub struct SpawnError(pub String);

impl FromStr for Spawn {
    type Err = SpawnError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "exec" => Ok(Spawn::Exec),
            "fork" => Ok(Spawn::Fork),
            other => Err(SpawnError(other.to_string())),
        }
    }
}

impl Spawn {
    /// Every way, `--spawn`'s values.
    pub const ALL: [Spawn; 2] = [Spawn::Exec, Spawn::Fork];

    pub fn as_str(self) -> &'static str {
        match self {
            Spawn::Exec => "exec",
            Spawn::Fork => "fork",
        }
    }
}

/// When a sample ends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mode {
    /// Run for this long; the metric is operations per second.
    FixedTime { seconds: f64 },
    /// Do this much work in total; the metric is the wall time to finish.
    FixedWork { work: u64 },
}

/// What runs. Stored as its private `ProgramRecord`, the form it always
/// had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ProgramRecord", try_from = "ProgramRecord")]
pub enum Program {
    /// A built-in workload with its parameters (`--param k=v`).
    Builtin {
        workload: String,
        params: BTreeMap<String, String>,
    },
    /// A user command template with `{threads}` (or `{n}`), `{rank}`, `{cpus}` placeholders.
    Command { template: String },
    /// Programs co-running for the same window, each on its own CPU (the
    /// point's `cpus[k]` is part k's): the pairs study. Parts with the same
    /// `slot` share a core (or a cache); a slot with one part measures its
    /// program alone. Each part is a one-worker `Builtin` or `Command`.
    CoRun { parts: Vec<CoPart> },
    /// A server driven by smtlab's load generator (`-w web`, `-w nginx`):
    /// the server's workers run on the point's CPUs, the load generator on
    /// others; the metric is requests per second.
    Server {
        /// `web`, `chat` (smtlab's own, in the point's model), `nginx` or
        /// `ngircd` (Debian's, the references).
        server: ServerKind,
        /// The server's `--param`s, as given (checked when the run is
        /// planned, into the server's own typed parameters).
        params: BTreeMap<String, String>,
        /// `--client-cpus` (or the study's choice): the load generator's
        /// CPUs; `None`: those the server does not use. Stored in `params`
        /// as [`CLIENT_CPUS_PARAM`], where it always was.
        client_cpus: Option<CpuSet>,
    },
    /// A software-DSM application (`-w sor`, `lu`, `tsp`) run by N ranks
    /// (processes, the point's workers) that notice each other's requests
    /// by `comm`; the metric is the wall time of its parallel section.
    Ranks {
        app: String,
        comm: Comm,
        /// The application's and the DSM's `--param`s (`n`, `loss`,
        /// `per_node`, ...).
        params: BTreeMap<String, String>,
    },
}

/// One program of a [`Program::CoRun`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoPart {
    /// The program's name in the study (`-w` name or `--cmd NAME=...`).
    pub name: String,
    /// Which co-running group (a core's siblings, two cores of a cache) it
    /// belongs to.
    pub slot: usize,
    pub program: Box<Program>,
    /// How one of its samples runs (its own mode; the window is the point's).
    pub mode: Mode,
}

/// A part's mode holds seconds that planning checked to be finite and
/// positive (never NaN), so equality is an equivalence, as `Program` needs.
impl Eq for CoPart {}

impl Program {
    /// Short name for tables: the workload name or the command's first word.
    pub fn label(&self) -> String {
        match self {
            Program::Builtin { workload, params } => {
                // A parameter that changes what is measured (not just its
                // size) names a different program: `allocprobe migrate=1`
                // must not merge with pinned allocprobe in an analysis.
                let mut s = workload.clone();
                for key in VARIANT_PARAMS {
                    if let Some(v) = params.get(*key).filter(|v| v.as_str() != "0") {
                        s.push_str(&format!(" {key}={v}"));
                    }
                }
                s
            }
            // A chat server at another connection count is another
            // program: `chat connections=200`.
            Program::Server { server, params, .. } if server.is_chat() => {
                match params.get("connections") {
                    Some(c) => format!("{server} connections={c}"),
                    None => server.to_string(),
                }
            }
            Program::Server { server, .. } => server.to_string(),
            // Each mechanism is its own series: `sor thr2`; ranks sharing
            // a node's CPUs are another program: `sor thr2 per_node=2`.
            Program::Ranks { app, comm, params } => match params.get("per_node") {
                Some(k) if k != "1" => format!("{app} {comm} per_node={k}"),
                _ => format!("{app} {comm}"),
            },
            Program::Command { template } => template
                .split_whitespace()
                .next()
                .unwrap_or("cmd")
                .to_string(),
            // `parfib+stream | mandel`: the parts of each slot joined by `+`.
            Program::CoRun { parts } => {
                let mut slots: Vec<(usize, Vec<&str>)> = Vec::new();
                for p in parts {
                    match slots.iter_mut().find(|(s, _)| *s == p.slot) {
                        Some((_, names)) => names.push(&p.name),
                        None => slots.push((p.slot, vec![&p.name])),
                    }
                }
                slots
                    .iter()
                    .map(|(_, n)| n.join("+"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            }
        }
    }
}

/// A program as stored (in a point's and a run's JSON): a server's
/// `client_cpus` is one of its parameters, as text. [`Program`] holds it
/// as a [`CpuSet`]; the conversions keep stored points and runs byte for
/// byte what they were, and old stores readable.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
enum ProgramRecord {
    Builtin {
        workload: String,
        params: BTreeMap<String, String>,
    },
    Command {
        template: String,
    },
    CoRun {
        parts: Vec<CoPart>,
    },
    Server {
        server: ServerKind,
        params: BTreeMap<String, String>,
    },
    Ranks {
        app: String,
        comm: Comm,
        params: BTreeMap<String, String>,
    },
}

impl From<Program> for ProgramRecord {
    fn from(p: Program) -> Self {
        match p {
            Program::Builtin { workload, params } => ProgramRecord::Builtin { workload, params },
            Program::Command { template } => ProgramRecord::Command { template },
            Program::CoRun { parts } => ProgramRecord::CoRun { parts },
            Program::Server {
                server,
                mut params,
                client_cpus,
            } => {
                if let Some(set) = client_cpus {
                    params.insert(CLIENT_CPUS_PARAM.to_string(), set.to_string());
                }
                ProgramRecord::Server { server, params }
            }
            Program::Ranks { app, comm, params } => ProgramRecord::Ranks { app, comm, params },
        }
    }
}

/// A stored `client_cpus` that is not a CPU list (no store smtlab wrote
/// holds one: it wrote the list it had checked).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a stored server's client_cpus `{0}` is not a CPU list")]
pub struct StoredClientCpusError(String);

impl TryFrom<ProgramRecord> for Program {
    type Error = StoredClientCpusError;
    fn try_from(r: ProgramRecord) -> Result<Self, Self::Error> {
        Ok(match r {
            ProgramRecord::Builtin { workload, params } => Program::Builtin { workload, params },
            ProgramRecord::Command { template } => Program::Command { template },
            ProgramRecord::CoRun { parts } => Program::CoRun { parts },
            ProgramRecord::Server { server, mut params } => {
                let client_cpus = match params.remove(CLIENT_CPUS_PARAM) {
                    Some(text) => {
                        Some(CpuSet::parse_list(&text).map_err(|_| StoredClientCpusError(text))?)
                    }
                    None => None,
                };
                Program::Server {
                    server,
                    params,
                    client_cpus,
                }
            }
            ProgramRecord::Ranks { app, comm, params } => Program::Ranks { app, comm, params },
        })
    }
}

impl Program {
    /// The parameters as the store keeps them (a server's with its
    /// `client_cpus`); `None` for a program without parameters.
    pub fn stored_params(&self) -> Option<BTreeMap<String, String>> {
        match ProgramRecord::from(self.clone()) {
            ProgramRecord::Builtin { params, .. }
            | ProgramRecord::Server { params, .. }
            | ProgramRecord::Ranks { params, .. } => Some(params),
            ProgramRecord::Command { .. } | ProgramRecord::CoRun { .. } => None,
        }
    }
}

/// Workload parameters that change what is measured rather than its size;
/// [`Program::label`] shows them when set.
pub const VARIANT_PARAMS: &[&str] = &["migrate"];

/// The primary metric of a point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metric {
    /// `ops_per_s`, `wall_time`, or the name given to `--metric NAME=REGEX`.
    pub name: String,
    pub unit: String,
    pub higher_is_better: bool,
}

/// One configuration to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Position in the plan (stable across a resume).
    pub index: usize,
    pub program: Program,
    pub model: Model,
    pub spawn: Spawn,
    /// The placement policy as written (`compact`, `scatter`, `S0:0-3`, ...).
    pub placement: String,
    /// Total workers N (threads x processes).
    pub workers: usize,
    /// `cpus[i]`: worker i's PU; `None` when not pinned.
    pub cpus: Option<Vec<u32>>,
    pub oversubscription: f64,
    /// `glibc` (no preload), `jemalloc`, ..., or a library path.
    pub alloc: String,
    pub mode: Mode,
    pub metric: Metric,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_model_is_bounded_by_the_workers_it_makes() {
        assert_eq!(
            "hybrid:2x4".parse::<Model>(),
            Ok(Model::Hybrid {
                processes: 2,
                threads: 4
            })
        );
        assert!("hybrid:1x65535".parse::<Model>().is_ok());
        for text in [
            "hybrid:65535x65535",
            "hybrid:2x65535",
            "hybrid:18446744073709551615x2",
        ] {
            let e = text.parse::<Model>().expect_err(text).to_string();
            assert!(e.contains("at most 65535 workers"), "{text}: {e}");
        }
    }
}
