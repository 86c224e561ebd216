//! One entry point per action for whoever runs the applications (the DSM
//! crate): what any app allocates, run it on a rank, run its sequential
//! reference, verify.

use crate::error::VerifyError;
use crate::outcome::{self, Outcome};
use crate::params::AppParams;
use crate::shared::Shared;
use crate::{lu, sor, tsp};

/// Run the application on this rank; every rank calls it with the same
/// parameters. See [`Outcome`] for which ranks carry the result.
pub fn run_app(app: &AppParams, sh: &dyn Shared) -> Outcome {
    match app {
        AppParams::Sor(p) => sor::run(sh, p),
        AppParams::Lu(p) => lu::run(sh, p),
        AppParams::Tsp(p) => tsp::run(sh, p),
    }
}

/// The words of each shared allocation the application makes on `ranks`
/// ranks, in the order it makes them: what the DSM sizes its region by.
pub fn app_allocations(app: &AppParams, ranks: usize) -> Vec<usize> {
    match app {
        AppParams::Sor(p) => sor::allocations(p),
        AppParams::Lu(p) => lu::allocations(p, ranks),
        AppParams::Tsp(p) => tsp::allocations(p),
    }
}

/// The application's sequential reference, in plain memory.
pub fn sequential_app(app: &AppParams) -> Outcome {
    match app {
        AppParams::Sor(p) => sor::sequential(p),
        AppParams::Lu(p) => lu::sequential(p),
        AppParams::Tsp(p) => tsp::sequential(p),
    }
}

/// Check rank 0's outcome of a parallel run against the sequential
/// reference; the error is one line saying what differs.
pub fn verify_app(
    app: &AppParams,
    parallel: &Outcome,
    sequential: &Outcome,
) -> Result<(), VerifyError> {
    outcome::verify(app.app(), parallel, sequential)
}
