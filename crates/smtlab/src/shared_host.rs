//! One task per host: `run` and `study` under a launcher (`mpirun`,
//! `srun`) refuse to measure when the launcher put more than one task of
//! its job on this host, because the tasks would run on the same CPUs and
//! disturb each other's measurements, unless `--shared-host` says that is
//! meant (then the run's host facts record it, and a warning says so).
//!
//! The launcher's own count of tasks on this host decides (Open MPI's
//! `OMPI_COMM_WORLD_LOCAL_SIZE`, Slurm's tasks per node, Hydra's
//! `MPI_LOCALNRANKS`); a launcher that does not say is taken at its word
//! that nothing is known, and the run goes ahead. `smtlab rank` does not
//! ask: a DSM job's ranks share hosts by design.

use smtlab_dsm::{LauncherError, LauncherRank};
use smtlab_types::SharedHost;

/// Whether this task may measure: `Ok(None)` when it has its host to
/// itself (or no launcher says otherwise), `Ok(Some(..))` when it shares
/// it and `--shared-host` (`allowed`) says so; else the one-line usage
/// error. `launcher` is what `smtlab_dsm::launcher_from_env` read.
pub fn check(
    launcher: Result<Option<LauncherRank>, LauncherError>,
    allowed: bool,
) -> Result<Option<SharedHost>, String> {
    let launcher = match launcher {
        Ok(Some(l)) => l,
        Ok(None) => return Ok(None),
        // A launcher's variable we cannot read is no reason to refuse a
        // measurement, unless the task may share its host.
        Err(e) if allowed => return Err(format!("--shared-host: {e}")),
        Err(_) => return Ok(None),
    };
    let tasks = match launcher.local_size {
        Some(n) if n > 1 => n,
        _ => return Ok(None),
    };
    let shared = SharedHost {
        launcher: launcher.launcher.to_string(),
        tasks,
    };
    if allowed {
        return Ok(Some(shared));
    }
    Err(format!(
        "{} started {tasks} tasks of this job on this host, and they would disturb each \
         other's measurements: start one per host ({}), or add --shared-host if that is meant",
        launcher.launcher,
        one_per_host(launcher.launcher)
    ))
}

/// The launcher's flag for one task per host.
fn one_per_host(launcher: &str) -> &'static str {
    match launcher {
        "Open MPI" => "mpirun --map-by ppr:1:node",
        "Slurm" => "srun --ntasks-per-node=1",
        _ => "mpiexec -ppn 1, mpirun --map-by ppr:1:node or srun --ntasks-per-node=1",
    }
}

/// The warning a shared run prints before it starts.
pub fn warning(s: &SharedHost) -> String {
    format!(
        "smtlab: warning: {} runs {} tasks of this job on this host (--shared-host): their \
         measurements may disturb each other; the run's host facts record it",
        s.launcher, s.tasks
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launcher(name: &'static str, local_size: Option<usize>) -> LauncherRank {
        LauncherRank {
            rank: 1,
            size: 4,
            local_rank: Some(1),
            local_size,
            job: None,
            launcher: name,
        }
    }

    #[test]
    fn one_task_per_host_or_no_launcher_measures() {
        assert_eq!(check(Ok(None), false), Ok(None));
        assert_eq!(check(Ok(Some(launcher("Slurm", Some(1)))), false), Ok(None));
        // The launcher does not say: nothing known, nothing refused.
        assert_eq!(check(Ok(Some(launcher("Open MPI", None))), false), Ok(None));
        let unreadable = LauncherError::NotANumber {
            var: "SLURM_PROCID",
            value: "x".into(),
        };
        assert_eq!(check(Err(unreadable), false), Ok(None));
    }

    /// A task that may share its host must know how many share it: the
    /// launcher's unreadable variable is the error, named as it was read.
    #[test]
    fn an_unreadable_launcher_variable_is_refused_under_shared_host() {
        let unreadable = LauncherError::NotANumber {
            var: "SLURM_PROCID",
            value: "x".into(),
        };
        assert_eq!(
            check(Err(unreadable), true),
            Err("--shared-host: SLURM_PROCID=x: expected a number from 0".to_string())
        );
    }

    #[test]
    fn two_tasks_on_one_host_are_refused_unless_meant() {
        let e = check(Ok(Some(launcher("Open MPI", Some(2)))), false).unwrap_err();
        assert_eq!(
            e,
            "Open MPI started 2 tasks of this job on this host, and they would disturb each \
             other's measurements: start one per host (mpirun --map-by ppr:1:node), or add \
             --shared-host if that is meant"
        );
        let e = check(Ok(Some(launcher("Slurm", Some(3)))), false).unwrap_err();
        assert!(e.contains("srun --ntasks-per-node=1"), "{e}");
        let shared = check(Ok(Some(launcher("Slurm", Some(3)))), true).unwrap();
        assert_eq!(
            shared,
            Some(SharedHost {
                launcher: "Slurm".into(),
                tasks: 3
            })
        );
        assert!(warning(&shared.unwrap()).contains("Slurm runs 3 tasks"));
    }
}
