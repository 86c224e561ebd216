//! Pairings of programs that share a core (Ruan et al., "Do Commodity SMT
//! Processors Need More OS Research?", §2.2): given the pair matrix of
//! weighted speedups, the exact best and worst schedules, the distribution
//! of random ones, a scheduler that re-pairs at random every period, and
//! the verdict. Used alone by `smtlab pairs MATRIX.csv` and by the pairs
//! study on the matrix it measured.
//!
//! Files bottom-up: `matrix` (the checked matrix), `csv` (its file form),
//! `progress` (how far an analysis has got, for a caller's progress bar),
//! `blossom` (maximum-weight perfect matching of a dense matrix, Edmonds'
//! blossom algorithm), `matching` (exact best and worst schedules),
//! `random` (random schedules' distribution, and the draws the next one
//! needs), `rerandomize`, `gain` (the ideal scheduler's gain over the
//! median random pairing, with its bootstrap interval for a measured
//! matrix), `verdict`, `analysis` (all of it as one serializable value),
//! `text`.

pub mod analysis;
mod blossom;
pub mod csv;
pub mod gain;
pub mod matching;
pub mod matrix;
pub mod progress;
pub mod random;
pub mod rerandomize;
pub mod text;
pub mod verdict;

pub use analysis::{
    analyse, analyse_watched, analyse_with, default_trials, PairsAnalysis, DEFAULT_PAIR_DRAWS,
    DEFAULT_TRIALS,
};
pub use gain::{Gain, GainInterval, GAIN_TRIALS};
pub use matrix::{Intervals, Matrix, MatrixError, Resampling};
pub use progress::{Phase, Progress};
pub use rerandomize::SCHEDULERS;
pub use text::{intervals_note, render_text};
pub use verdict::pair_names;
