//! Studies as data: which question a run answers ([`StudyKind`], with the
//! one list of study names) and what the machine could not show
//! ([`StudyMeta`], stored in the run's [`crate::RunSpec`]). Planning a study
//! and its findings live in `smtlab-study`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The questions smtlab answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StudyKind {
    /// No name: a short tour over the default workloads.
    Tour,
    /// Thread vs process model at every N, compact and scatter.
    Models,
    /// 1..k threads on the k PUs of one core (SMT scalability).
    Smt,
    /// One PU per core, 1..cores (core scalability).
    Cores,
    /// N threads on one core's PUs vs on the first PU of N cores.
    Pinning,
    /// Software threads 1, 2, 4, ... up to 4x the PUs.
    Oversub,
    /// Allocators x models on jbb and the allocation benchmarks.
    Alloc,
    /// Every pair of programs co-running on a core's siblings: the pair
    /// matrix and the best, worst and random pairings.
    Pairs,
    /// Web server architectures (process, thread, event, staged, and nginx
    /// beside them) x worker count x SMT siblings versus one per core.
    Web,
    /// Chat server models (thread2, thread, event, and ngircd beside them)
    /// x connections: what each connection costs the OS per message.
    Chat,
    /// Communication mechanisms of a software DSM (sigio, thr1, thr2, thr3,
    /// poll) x applications (SOR, LU, TSP) x ranks, one rank per CPU and
    /// two ranks sharing a node.
    Comm,
}

impl StudyKind {
    /// Every study, the tour first: the one list the names, the parser,
    /// its error message and `smtlab study --help` are made from.
    pub const ALL: [StudyKind; 11] = [
        StudyKind::Tour,
        StudyKind::Models,
        StudyKind::Smt,
        StudyKind::Cores,
        StudyKind::Pinning,
        StudyKind::Oversub,
        StudyKind::Alloc,
        StudyKind::Pairs,
        StudyKind::Web,
        StudyKind::Chat,
        StudyKind::Comm,
    ];

    /// The studies a user names (all but the tour, which has no name on
    /// the command line).
    pub fn named() -> impl Iterator<Item = StudyKind> {
        StudyKind::ALL.into_iter().filter(|k| *k != StudyKind::Tour)
    }

    pub fn name(self) -> &'static str {
        match self {
            StudyKind::Tour => "tour",
            StudyKind::Models => "models",
            StudyKind::Smt => "smt",
            StudyKind::Cores => "cores",
            StudyKind::Pinning => "pinning",
            StudyKind::Oversub => "oversub",
            StudyKind::Alloc => "alloc",
            StudyKind::Pairs => "pairs",
            StudyKind::Web => "web",
            StudyKind::Chat => "chat",
            StudyKind::Comm => "comm",
        }
    }

    /// The question, for titles.
    pub fn question(self) -> &'static str {
        match self {
            StudyKind::Tour => {
                "a tour: threads or processes, and how many, for the default workloads"
            }
            StudyKind::Models => "one process with N threads, or N processes?",
            StudyKind::Smt => "how much does each SMT sibling of a core add?",
            StudyKind::Cores => "how does throughput scale with one worker per core?",
            StudyKind::Pinning => "N threads on one core's SMT siblings, or on N cores?",
            StudyKind::Oversub => "what do more software threads than PUs cost?",
            StudyKind::Alloc => "which memory allocator, for threads and for processes?",
            StudyKind::Pairs => {
                "which programs should share a core, and how much does the best pairing gain \
                 over a random one?"
            }
            StudyKind::Web => {
                "which web server architecture, with how many workers, and does SMT pay for it?"
            }
            StudyKind::Chat => {
                "two threads per connection, one, or an event loop: what does each connection \
                 cost the OS per message as connections grow?"
            }
            StudyKind::Comm => {
                "how should the ranks of a software DSM notice each other's requests: a signal \
                 (sigio), one, two or three communication threads, or polling?"
            }
        }
    }

    /// What the study sweeps, in one line, for `smtlab study --help`.
    pub fn sweep(self) -> &'static str {
        match self {
            StudyKind::Tour => "a tour over the default workloads: about a minute on 2 cores",
            StudyKind::Models => "thread vs process model at every N, compact and scatter",
            StudyKind::Smt => "1..k threads on the k PUs of one core, both models",
            StudyKind::Cores => "one PU per core, 1..cores, both models",
            StudyKind::Pinning => {
                "N threads on one core's PUs vs on the first PU of N cores (N = PUs per core)"
            }
            StudyKind::Oversub => {
                "software threads 1, 2, 4, ... up to 4x the PUs (default workload parfib)"
            }
            StudyKind::Alloc => {
                "allocators (glibc, jemalloc, mimalloc, tcmalloc, jemalloc-percpu, smtalloc: \
                 those installed) x thread/process model on jbb and the allocation benchmarks"
            }
            StudyKind::Pairs => {
                "each program alone, then every pair co-running on a core's SMT siblings (else \
                 two cores sharing a cache or package): the pair matrix, exact best and worst \
                 pairings, 10 million random ones"
            }
            StudyKind::Web => {
                "the web server as process, thread, event and staged, nginx beside them, at \
                 1..N workers on SMT siblings (compact) and one per core, driven by the load \
                 generator on CPUs of their own"
            }
            StudyKind::Chat => {
                "the chat server as thread2, thread and event, ngircd beside them, at 20 to \
                 10,000 connections in rooms of 20 (--connections), VolanoMark's load on CPUs \
                 of its own"
            }
            StudyKind::Comm => {
                "communication mechanisms of a software DSM (sigio, thr1, thr2, thr3, poll) x \
                 applications (SOR, LU, TSP) x ranks, one rank per CPU and two ranks sharing a \
                 node"
            }
        }
    }
}

impl fmt::Display for StudyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A study name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "study `{0}`: no such study; studies are: {names} (or no name for the tour)",
    names = StudyKind::named().map(StudyKind::name).collect::<Vec<_>>().join(", ")
)]
pub struct UnknownStudy(pub String);

impl FromStr for StudyKind {
    type Err = UnknownStudy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.trim();
        StudyKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| UnknownStudy(name.to_string()))
    }
}

/// What makes a run a study, stored in its [`RunSpec`](crate::RunSpec).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyMeta {
    pub kind: StudyKind,
    /// What this machine cannot show for this study, one sentence each.
    pub limits: Vec<String>,
    /// Plan decisions worth telling (e.g. a placement measured once because
    /// another picks the same CPUs).
    pub notes: Vec<String>,
}
