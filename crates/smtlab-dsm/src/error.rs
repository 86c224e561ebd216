//! Why the DSM refuses or gives up, each in one line: a rank's run that
//! failed ([`RankError`]), a rank that waited too long for the others
//! ([`Stalled`]), ranks that did not meet ([`RendezvousError`]), a
//! `--rendezvous` that names no meeting place ([`RendezvousSpecError`],
//! [`DirError`]), a launcher's variable that is not what it should be
//! ([`LauncherError`]), and the end of a run that did not complete
//! ([`GatherError`]). `smtlab rank` and `smtlab run` print them as they
//! are; tests compare the texts.

use std::time::Duration;

/// A rank's run failed.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error("rank {rank}: {what}")]
    Failed { rank: usize, what: String },
}

/// A rank waited longer than its stall timeout for a reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "rank {rank}: no reply from {} for {} s while waiting for {what} (a rank died or \
     stopped, or the network between them is gone); {detail}",
    silent_list(silent),
    tenths(*waited)
)]
pub struct Stalled {
    /// The rank that gave up.
    pub rank: usize,
    /// The ranks it was waiting to hear from.
    pub silent: Vec<usize>,
    /// What it was waiting for: `a page`, `a barrier`, ...
    pub what: String,
    pub waited: Duration,
    /// The state of its communication, one line, for whoever debugs it.
    pub detail: String,
}

/// Seconds to a tenth, without a trailing `.0`: `120`, `2.5`.
fn tenths(d: Duration) -> String {
    let t = (d.as_secs_f64() * 10.0).round() / 10.0;
    if t.fract() == 0.0 {
        format!("{t:.0}")
    } else {
        format!("{t:.1}")
    }
}

/// The ranks a stalled rank waited for; none named means all the others.
fn silent_list(ranks: &[usize]) -> String {
    if ranks.is_empty() {
        return "the other ranks".to_string();
    }
    rank_list(ranks)
}

/// `--rendezvous` that names neither a directory nor an address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--rendezvous {text}: {why}; expected dir:PATH (a directory every rank can read) or \
     HOST:PORT (rank 0's address)"
)]
pub struct RendezvousSpecError {
    pub text: String,
    pub why: String,
}

/// A rendezvous directory that can be neither used nor made (the `why`
/// of a [`RendezvousSpecError`]); each names the path at fault.
#[derive(Debug, thiserror::Error)]
pub enum DirError {
    /// The path is there and is a file (or another non-directory).
    #[error("{} exists and is not a directory", .0.display())]
    NotADirectory(std::path::PathBuf),
    /// The directory it would be made in is not a directory.
    #[error("{} is not a directory", .0.display())]
    ParentNotADirectory(std::path::PathBuf),
    /// The directory it would be made in is not there.
    #[error(
        "the directory {} does not exist (the rendezvous directory is made in an existing one)",
        .0.display()
    )]
    NoParent(std::path::PathBuf),
    /// Looking at `path` failed otherwise (permissions, ...).
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// Why the ranks did not meet; each names the rendezvous.
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    /// A rank number outside the run, or no ranks.
    #[error("rendezvous {rendezvous}: rank {rank} of {ranks} is not a rank of the run")]
    NotARank {
        rendezvous: String,
        rank: usize,
        ranks: usize,
    },
    /// Some ranks never published their address.
    #[error(
        "rendezvous {rendezvous}: {} of {ranks} did not appear within {} s",
        rank_list(missing),
        timeout.as_secs_f64()
    )]
    Missing {
        rendezvous: String,
        missing: Vec<usize>,
        ranks: usize,
        timeout: Duration,
    },
    /// Rank 0 never answered (not listening, or never sent the table).
    #[error("rendezvous {rendezvous}: rank 0 {what} within {} s", timeout.as_secs_f64())]
    NoLeader {
        rendezvous: String,
        what: String,
        timeout: Duration,
    },
    /// A rank published something that does not fit this run: another
    /// rank count (a file of another run), a rank twice, an unreadable
    /// address.
    #[error("rendezvous {rendezvous}: {what}")]
    Mismatch { rendezvous: String, what: String },
    /// The directory or the socket failed.
    #[error("rendezvous {rendezvous}: {what}: {source}")]
    Io {
        rendezvous: String,
        what: String,
        source: std::io::Error,
    },
}

/// `rank 2` or `ranks 2, 3`.
pub(crate) fn rank_list(ranks: &[usize]) -> String {
    let list: Vec<String> = ranks.iter().map(ToString::to_string).collect();
    match ranks.len() {
        1 => format!("rank {}", list[0]),
        _ => format!("ranks {}", list.join(", ")),
    }
}

/// A launcher's variable that is not what it should be; each names the
/// variable and its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LauncherError {
    /// A count or an index that is not one.
    #[error("{var}={value}: expected a number from 0")]
    NotANumber { var: &'static str, value: String },
    /// A rank at or past the job's size (or a size of 0).
    #[error("{rank_var}={rank} with {size_var}={size}: the rank must be below the size")]
    RankNotBelowSize {
        rank_var: &'static str,
        rank: usize,
        size_var: &'static str,
        size: usize,
    },
    /// A launcher's rank without its size, or its size without its rank.
    #[error("{set} is set but {missing} is not: is this a launcher's environment?")]
    UnsetBeside {
        set: &'static str,
        missing: &'static str,
    },
    /// Slurm's tasks per node (`var`) that do not read as a list of counts.
    #[error("{var}={value}: expected counts per node such as 2(x3),1")]
    TasksPerNode { var: &'static str, value: String },
    /// `SLURM_NODEID` past the nodes Slurm's tasks per node (`var`) list.
    #[error("SLURM_NODEID={node}: {var}={value} lists {nodes} nodes")]
    NodeNotListed {
        node: usize,
        var: &'static str,
        value: String,
        nodes: usize,
    },
}

/// The end of a run that did not complete within its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GatherError {
    /// A rank other than 0 heard no goodbye from rank 0.
    #[error("rank 0 did not confirm the end of the run")]
    NoGoodbye,
    /// Rank 0 did not hear from every rank.
    #[error("not every rank sent its statistics")]
    MissingStatistics,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_one_line_naming_the_silent_rank_and_the_wait() {
        let s = Stalled {
            rank: 0,
            silent: vec![1],
            what: "a barrier".into(),
            waited: Duration::from_millis(2500),
            detail: "socket 127.0.0.1:5000".into(),
        };
        assert_eq!(
            s.to_string(),
            "rank 0: no reply from rank 1 for 2.5 s while waiting for a barrier (a rank died \
             or stopped, or the network between them is gone); socket 127.0.0.1:5000"
        );
        let two = Stalled {
            silent: vec![2, 3],
            ..s.clone()
        };
        assert!(two.to_string().contains("no reply from ranks 2, 3 for"));
        let nobody = Stalled {
            silent: vec![],
            ..s.clone()
        };
        assert!(nobody
            .to_string()
            .contains("no reply from the other ranks for"));
        // A wait just past a whole number of seconds reads as that number.
        let late = Stalled {
            waited: Duration::from_nanos(120_001_000_500),
            ..s.clone()
        };
        assert!(late.to_string().contains(" for 120 s while"), "{late}");
        assert!(!two.to_string().contains('\n'));
    }

    /// The end of a run prints these after `rank N: `; word for word.
    #[test]
    fn gather_errors_say_who_did_not_answer() {
        assert_eq!(
            GatherError::NoGoodbye.to_string(),
            "rank 0 did not confirm the end of the run"
        );
        assert_eq!(
            GatherError::MissingStatistics.to_string(),
            "not every rank sent its statistics"
        );
    }
}
