//! Why an application's parameters are refused ([`ParamError`]) and why a
//! parallel run does not match its sequential reference ([`VerifyError`]).
//! Every message is one line (the planner shows a [`ParamError`] as a
//! usage error; a run's report and the CLI print a [`VerifyError`] as its
//! verification detail).

/// A parameter refused before anything runs. Every message is one line
/// that names the parameter (or app), the value given and what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("unknown DSM app `{given}`; valid: sor, lu, tsp")]
    UnknownApp { given: String },
    #[error("--param {name}: app `{app}` has no parameter `{name}`; valid: {valid}")]
    Unknown {
        app: &'static str,
        name: String,
        /// The app's own parameters and the DSM's pass-through keys.
        valid: String,
    },
    #[error("--param {name}={value}: {expected}")]
    Invalid {
        name: &'static str,
        value: String,
        /// What would be valid, e.g. "expected an integer from 8 to 4096".
        expected: String,
    },
}

/// A parallel run (rank 0's outcome) that does not match the sequential
/// reference, or an outcome that cannot be compared; `app` is the
/// application's name, `what` its result (`grid`, `matrix`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VerifyError {
    /// The outcome of a rank other than 0 (its checksum is NaN).
    #[error(
        "{app}: the parallel outcome carries no result (checksum NaN): verify rank 0's outcome"
    )]
    NoResult { app: &'static str },
    /// SOR or LU without its grid or matrix on the parallel side.
    #[error("{app}: the parallel outcome carries no {what}: verify rank 0's outcome")]
    NoParallelResult {
        app: &'static str,
        what: &'static str,
    },
    /// SOR or LU without its grid or matrix on the sequential side.
    #[error("{app}: the sequential outcome carries no {what}")]
    NoSequentialResult {
        app: &'static str,
        what: &'static str,
    },
    /// Grids or matrices of different shapes (rows x columns).
    #[error(
        "{app}: the parallel {what} is {}x{}, the sequential {}x{}",
        parallel.0, parallel.1, sequential.0, sequential.1
    )]
    Shape {
        app: &'static str,
        what: &'static str,
        parallel: (usize, usize),
        sequential: (usize, usize),
    },
    /// `count` of the `len` elements differ, the first at `row`, `column`.
    #[error(
        "{app}: {count} of {len} {what} elements differ; first at row {row} column {column}: \
         {parallel:e}, sequential {sequential:e}"
    )]
    Elements {
        app: &'static str,
        what: &'static str,
        count: usize,
        len: usize,
        row: usize,
        column: usize,
        parallel: f64,
        sequential: f64,
    },
    /// Every element equal, the checksums not (to the bit).
    #[error("{app}: checksum {parallel:e} differs from the sequential {sequential:e}")]
    Checksum {
        app: &'static str,
        parallel: f64,
        sequential: f64,
    },
    /// TSP: another tour length than the sequential optimum.
    #[error("{app}: tour length {parallel} differs from the sequential optimum {sequential}")]
    TourLength {
        app: &'static str,
        parallel: f64,
        sequential: f64,
    },
}
