//! Why a DSM point's parameters or rank count are refused: each message
//! names the flag or parameter at fault and what would be valid (the
//! planner and `smtlab rank` show it as a usage error).

/// A DSM point refused before anything runs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DsmParamError {
    /// `--param loss=V`, not a fraction from 0 to `most`.
    #[error("--param loss={value}: expected a fraction from 0 to {most}")]
    Loss { value: String, most: f64 },
    /// `--param per_node=V`, neither 1 nor 2.
    #[error("--param per_node={0}: expected 1 or 2")]
    PerNode(String),
    /// `--workload W`, not a DSM application.
    #[error("--workload {0}: not a DSM application (sor, lu, tsp)")]
    NotAnApp(String),
    /// The application's own parameters (its message as it gives it).
    #[error("{0}")]
    App(String),
    /// Fewer than 2 ranks; `named` is what gave the count
    /// (`--threads 1`, `OMPI_COMM_WORLD_SIZE=1`).
    #[error("{named}: a DSM application needs at least 2 ranks")]
    TooFewRanks { named: String },
    /// More ranks than the DSM has room for (`most`).
    #[error("{named}: at most {most} ranks")]
    TooManyRanks { named: String, most: usize },
    /// A rank count that leaves a node part-filled.
    #[error(
        "{named}: with per_node={per_node} the ranks must fill whole nodes (a multiple of \
         {per_node})"
    )]
    PartNode { named: String, per_node: usize },
    /// A shared region larger than one message can list (sizes in MiB).
    #[error(
        "--param: {app} needs a shared region of {mib} MiB; the DSM holds at most {most_mib} \
         MiB (a list of written pages must fit one message): choose a smaller problem"
    )]
    RegionTooLarge {
        app: String,
        mib: usize,
        most_mib: usize,
    },
}
