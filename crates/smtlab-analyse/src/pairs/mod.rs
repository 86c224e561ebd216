//! Pairings of programs sharing a core: the pair matrix (`matrix`), the
//! exact best and worst schedules (`matching`), random and re-randomized
//! schedules (`random`), and their `analysis` (JSON, text, verdict). Used by
//! `smtlab pairs MATRIX.csv` alone and by the pairs study on its measured
//! matrix. Files bottom-up: matrix, matching, random, analysis.

pub mod analysis;
pub mod matching;
pub mod matrix;
pub mod random;

pub use analysis::{analyse, analyse_with, render_text, PairsAnalysis, DEFAULT_TRIALS};
pub use matrix::{Matrix, MatrixError};
