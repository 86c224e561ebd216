//! Which rank this process is when an existing launcher started it
//! (`mpirun -np 4 smtlab rank ...`, `srun smtlab rank ...`), read from the
//! variables the launcher sets, and where such ranks meet by default.
//!
//! Read in this order, the most specific launcher first: an `mpirun` or
//! `mpiexec` inside a Slurm allocation leaves the allocation's `SLURM_*`
//! variables in its processes' environment, so Slurm's only count when no
//! MPI launcher's are there.
//!
//! * Open MPI: `OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`, `..._LOCAL_RANK`,
//!   `..._LOCAL_SIZE`; the job from `OMPI_MCA_ess_base_jobid` (what
//!   Debian's Open MPI 4.1 sets), `PMIX_NAMESPACE` (Open MPI 5, PRRTE) or
//!   `OMPI_MCA_orte_ess_jobid` (older releases).
//! * PMI (MPICH's and Intel MPI's Hydra, Slurm's `--mpi=pmi2`): `PMI_RANK`,
//!   `PMI_SIZE`; Hydra's `MPI_LOCALRANKID`/`MPI_LOCALNRANKS`; the job from
//!   `PMI_JOBID` where the launcher sets it (Hydra hands its name over the
//!   PMI socket only: name a rendezvous there).
//! * Slurm: `SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID`, the tasks of
//!   this node from `SLURM_STEP_TASKS_PER_NODE` (`2(x3),1`, indexed by
//!   `SLURM_NODEID`), which only `srun` sets; the job
//!   `SLURM_JOB_ID.SLURM_STEP_ID`.
//!
//! Used by `smtlab rank`; the fleet (issue 20) reuses the local rank and
//! size. The environment is a function, so tests give fake ones.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;

use crate::error::LauncherError;
use crate::rendezvous::Rendezvous;

/// This process's place in a launcher's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LauncherRank {
    /// 0..size across the job.
    pub rank: usize,
    pub size: usize,
    /// 0..local_size among the job's processes on this machine, if the
    /// launcher says.
    pub local_rank: Option<usize>,
    pub local_size: Option<usize>,
    /// The job (and step), the same for every rank of one launch and
    /// different for the next, if the launcher says.
    pub job: Option<String>,
    /// `Open MPI`, `PMI`, `Slurm`.
    pub launcher: &'static str,
}

impl LauncherRank {
    /// The variable that gave this job's size (`OMPI_COMM_WORLD_SIZE`,
    /// `PMI_SIZE`, `SLURM_NTASKS`): what a message about the rank count
    /// names.
    pub fn size_var(&self) -> &'static str {
        [&OPEN_MPI, &PMI, &SLURM]
            .into_iter()
            .find(|v| v.name == self.launcher)
            .map_or("the launcher's size", |v| v.size)
    }
}

/// One launcher's variables.
struct Vars {
    name: &'static str,
    rank: &'static str,
    size: &'static str,
    local_rank: &'static str,
    local_size: &'static [&'static str],
    jobs: &'static [&'static str],
}

const OPEN_MPI: Vars = Vars {
    name: "Open MPI",
    rank: "OMPI_COMM_WORLD_RANK",
    size: "OMPI_COMM_WORLD_SIZE",
    local_rank: "OMPI_COMM_WORLD_LOCAL_RANK",
    local_size: &["OMPI_COMM_WORLD_LOCAL_SIZE"],
    jobs: &[
        "OMPI_MCA_ess_base_jobid",
        "PMIX_NAMESPACE",
        "OMPI_MCA_orte_ess_jobid",
    ],
};

const PMI: Vars = Vars {
    name: "PMI",
    rank: "PMI_RANK",
    size: "PMI_SIZE",
    local_rank: "MPI_LOCALRANKID",
    local_size: &["MPI_LOCALNRANKS"],
    jobs: &["PMI_JOBID"],
};

const SLURM: Vars = Vars {
    name: "Slurm",
    rank: "SLURM_PROCID",
    size: "SLURM_NTASKS",
    local_rank: "SLURM_LOCALID",
    // Read by `slurm_local_size`, which knows its format.
    local_size: &["SLURM_STEP_TASKS_PER_NODE"],
    jobs: &["SLURM_JOB_ID", "SLURM_JOBID"],
};

/// This process's rank under a launcher, from `env` (a variable's value,
/// or `None` when unset); `Ok(None)` when no launcher started it. A
/// launcher's variable that is not what it should be is an error naming
/// it.
pub fn from_env(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<LauncherRank>, LauncherError> {
    for vars in [&OPEN_MPI, &PMI, &SLURM] {
        let rank = number(&env, vars.rank)?;
        let size = number(&env, vars.size)?;
        let (rank, size) = match (rank, size) {
            (None, None) => continue,
            (Some(rank), Some(size)) => (rank, size),
            (Some(_), None) => return Err(unset_beside(vars.size, vars.rank)),
            (None, Some(_)) => return Err(unset_beside(vars.rank, vars.size)),
        };
        if size == 0 || rank >= size {
            return Err(LauncherError::RankNotBelowSize {
                rank_var: vars.rank,
                rank,
                size_var: vars.size,
                size,
            });
        }
        let local_rank = number(&env, vars.local_rank)?;
        let local_size = if vars.name == SLURM.name {
            slurm_local_size(&env)?
        } else {
            vars.local_size
                .iter()
                .map(|v| number(&env, v))
                .find_map(Result::transpose)
                .transpose()?
        };
        let job = vars.jobs.iter().find_map(|v| nonempty(&env, v));
        // A Slurm step is a launch of its own within the job.
        let job = match (vars.name == SLURM.name, job) {
            (true, Some(j)) => Some(match nonempty(&env, "SLURM_STEP_ID") {
                Some(step) => format!("{j}.{step}"),
                None => j,
            }),
            (_, job) => job,
        };
        return Ok(Some(LauncherRank {
            rank,
            size,
            local_rank,
            local_size,
            job,
            launcher: vars.name,
        }));
    }
    Ok(None)
}

/// `text` kept to characters that are safe in one path component: ASCII
/// letters, digits, `.`, `_` and `-`; any other character becomes `_`.
/// (`.` and `..` stay themselves: a caller that may meet them refuses
/// them.) Used for job ids here and for host names in `--db {host}`.
pub fn path_component(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The rendezvous of a launcher's ranks when none is named: a directory
/// under the temp dir (`TMPDIR`) named by the launcher and the job, which
/// every rank of one job on one machine (or on machines sharing `TMPDIR`)
/// finds, and the next job does not share. `None` without a job id.
pub fn default_rendezvous(l: &LauncherRank) -> Option<Rendezvous> {
    let job = l.job.as_ref()?;
    // A job id is the launcher's text (Open MPI 5: `prterun-host-123@1`).
    let job = path_component(job);
    let launcher: String = l
        .launcher
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("smtlab-rendezvous-{launcher}-{job}-{}", l.size));
    Some(Rendezvous::Dir(dir))
}

/// The address a launcher's rank binds and tells the others when none is
/// named (`--bind`): loopback when every rank is on this machine (the
/// launcher says so, or rank 0's address is loopback); else the address
/// of the interface the route to rank 0 leaves by (`HOST:PORT`: a UDP
/// socket connected there, which sends nothing); else this host name's
/// address. `None` when none of these tells one.
pub fn default_bind(l: &LauncherRank, rv: &Rendezvous) -> Option<IpAddr> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    if l.local_size == Some(l.size) {
        return Some(loopback);
    }
    if let Rendezvous::Leader(at) = rv {
        if at.ip().is_loopback() {
            return Some(loopback);
        }
        let unspecified: SocketAddr = match at {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let routed = UdpSocket::bind(unspecified)
            .and_then(|s| s.connect(at).and_then(|_| s.local_addr()))
            .map(|a| a.ip());
        if let Ok(ip) = routed {
            return Some(ip);
        }
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let addrs: Vec<IpAddr> = (host.trim(), 0)
        .to_socket_addrs()
        .ok()?
        .map(|a| a.ip())
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4() && !a.is_loopback())
        .or_else(|| addrs.first())
        .copied()
}

fn nonempty(env: &impl Fn(&str) -> Option<String>, var: &str) -> Option<String> {
    env(var)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// A variable holding a count or an index.
fn number(
    env: &impl Fn(&str) -> Option<String>,
    var: &'static str,
) -> Result<Option<usize>, LauncherError> {
    match env(var) {
        None => Ok(None),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(LauncherError::NotANumber { var, value: v }),
        },
    }
}

/// One of a launcher's pair of variables (`set`) without the other.
fn unset_beside(missing: &'static str, set: &'static str) -> LauncherError {
    LauncherError::UnsetBeside { set, missing }
}

/// The tasks of this node of a Slurm step: `SLURM_STEP_TASKS_PER_NODE`
/// lists them per node (`2(x3),1`: three nodes of 2, one of 1), indexed
/// by `SLURM_NODEID`. Only `srun` sets it, for the step it starts. The
/// job's `SLURM_NTASKS_PER_NODE` is not read: a batch script sees it too,
/// and the script is one process however many tasks its `srun` steps will
/// start, so counting by it refused `smtlab` run straight from an
/// `sbatch --ntasks-per-node=2` script as a second task on its host.
fn slurm_local_size(env: &impl Fn(&str) -> Option<String>) -> Result<Option<usize>, LauncherError> {
    const PER_NODE: &str = "SLURM_STEP_TASKS_PER_NODE";
    if let Some(text) = env(PER_NODE) {
        let bad = || LauncherError::TasksPerNode {
            var: PER_NODE,
            value: text.clone(),
        };
        let mut counts: Vec<usize> = Vec::new();
        for item in text.trim().split(',') {
            let (count, times) = match item.split_once("(x") {
                Some((c, rest)) => (
                    c,
                    rest.strip_suffix(')')
                        .and_then(|t| t.parse::<usize>().ok())
                        .ok_or_else(bad)?,
                ),
                None => (item, 1),
            };
            let count: usize = count.parse().map_err(|_| bad())?;
            // Slurm never lists more nodes than a cluster has; a huge
            // repeat count is not a list worth expanding.
            if times > 1 << 20 || counts.len() + times > 1 << 20 {
                return Err(bad());
            }
            counts.extend(std::iter::repeat_n(count, times));
        }
        let node = number(env, "SLURM_NODEID")?;
        return Ok(match node {
            Some(n) => Some(*counts.get(n).ok_or_else(|| LauncherError::NodeNotListed {
                node: n,
                var: PER_NODE,
                value: text.clone(),
                nodes: counts.len(),
            })?),
            // Without the node's index, only a list of equal counts says.
            None if counts.windows(2).all(|w| w[0] == w[1]) => counts.first().copied(),
            None => None,
        });
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn no_launcher_is_none() {
        assert_eq!(from_env(env(&[("HOME", "/root")])), Ok(None));
    }

    #[test]
    fn open_mpi_as_debian_sets_it() {
        // What `mpirun -np 2 env` shows with Debian 12's Open MPI 4.1.4.
        let l = from_env(env(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("OMPI_MCA_ess_base_jobid", "1431568385"),
            ("PMIX_NAMESPACE", "1431568385"),
            ("PMIX_RANK", "1"),
            // An allocation's variables, inherited: not the rank.
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            l,
            LauncherRank {
                rank: 1,
                size: 2,
                local_rank: Some(1),
                local_size: Some(2),
                job: Some("1431568385".into()),
                launcher: "Open MPI",
            }
        );
        // A message about its size names the variable that gave it.
        assert_eq!(l.size_var(), "OMPI_COMM_WORLD_SIZE");
        let Some(Rendezvous::Dir(dir)) = default_rendezvous(&l) else {
            panic!("a job id gives a directory");
        };
        assert_eq!(
            dir,
            std::env::temp_dir().join("smtlab-rendezvous-openmpi-1431568385-2")
        );
    }

    #[test]
    fn open_mpi_5_names_its_job_by_namespace() {
        let l = from_env(env(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("PMIX_NAMESPACE", "prterun-node1-4242@1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(l.job.as_deref(), Some("prterun-node1-4242@1"));
        assert_eq!((l.local_rank, l.local_size), (None, None));
        let Some(Rendezvous::Dir(dir)) = default_rendezvous(&l) else {
            panic!("a job id gives a directory");
        };
        assert!(dir.ends_with("smtlab-rendezvous-openmpi-prterun-node1-4242_1-4"));
    }

    #[test]
    fn slurm_with_its_step_and_tasks_per_node() {
        let l = from_env(env(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "7"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NODEID", "2"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
            ("SLURM_JOB_ID", "812"),
            ("SLURM_STEP_ID", "0"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            l,
            LauncherRank {
                rank: 5,
                size: 7,
                local_rank: Some(1),
                local_size: Some(2),
                job: Some("812.0".into()),
                launcher: "Slurm",
            }
        );
        assert_eq!(l.size_var(), "SLURM_NTASKS");
        let l = from_env(env(&[
            ("SLURM_PROCID", "6"),
            ("SLURM_NTASKS", "7"),
            ("SLURM_NODEID", "3"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((l.local_size, l.job.as_deref()), (Some(1), None));
        assert_eq!(default_rendezvous(&l), None);
        // A batch script (`sbatch --ntasks=4 --ntasks-per-node=2`) is one
        // process, not two tasks on its node: no step, no local size.
        let l = from_env(env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_NTASKS_PER_NODE", "2"),
            ("SLURM_JOBID", "9"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!((l.local_size, l.job.as_deref()), (None, Some("9")));
    }

    #[test]
    fn pmi_ranks() {
        let l = from_env(env(&[
            ("PMI_RANK", "2"),
            ("PMI_SIZE", "3"),
            ("MPI_LOCALRANKID", "0"),
            ("MPI_LOCALNRANKS", "1"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (l.rank, l.size, l.local_rank, l.local_size, l.launcher),
            (2, 3, Some(0), Some(1), "PMI")
        );
        assert_eq!(l.job, None);
    }

    #[test]
    fn ranks_of_one_machine_bind_loopback() {
        let mut l = LauncherRank {
            rank: 0,
            size: 4,
            local_rank: Some(0),
            local_size: Some(4),
            job: None,
            launcher: "Open MPI",
        };
        let dir = Rendezvous::Dir("/tmp/x".into());
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(default_bind(&l, &dir), Some(loopback));
        l.local_size = Some(2);
        let leader = Rendezvous::Leader("127.0.0.1:7000".parse().unwrap());
        assert_eq!(default_bind(&l, &leader), Some(loopback));
        // Toward another host: the address of the interface that reaches
        // it (any address, sending nothing), never the unspecified one.
        let far = Rendezvous::Leader("192.0.2.1:7000".parse().unwrap());
        if let Some(ip) = default_bind(&l, &far) {
            assert!(!ip.is_unspecified(), "{ip}");
        }
    }

    #[test]
    fn malformed_values_name_the_variable() {
        let e = from_env(env(&[
            ("OMPI_COMM_WORLD_RANK", "one"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ]))
        .unwrap_err()
        .to_string();
        assert_eq!(e, "OMPI_COMM_WORLD_RANK=one: expected a number from 0");
        let e = from_env(env(&[("SLURM_PROCID", "3"), ("SLURM_NTASKS", "3")]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "SLURM_PROCID=3 with SLURM_NTASKS=3: the rank must be below the size"
        );
        let e = from_env(env(&[("PMI_RANK", "0")])).unwrap_err().to_string();
        assert_eq!(
            e,
            "PMI_RANK is set but PMI_SIZE is not: is this a launcher's environment?"
        );
        let e = from_env(env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x"),
        ]))
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "SLURM_STEP_TASKS_PER_NODE=2(x: expected counts per node such as 2(x3),1"
        );
        let e = from_env(env(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_NODEID", "4"),
            ("SLURM_STEP_TASKS_PER_NODE", "2"),
        ]))
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "SLURM_NODEID=4: SLURM_STEP_TASKS_PER_NODE=2 lists 1 nodes"
        );
        let e = from_env(env(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "-1"),
        ]))
        .unwrap_err()
        .to_string();
        assert_eq!(e, "OMPI_COMM_WORLD_LOCAL_SIZE=-1: expected a number from 0");
    }
}
