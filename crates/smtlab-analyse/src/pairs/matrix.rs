//! The pair matrix: for programs `0..n`, `WS(i,j)`, the weighted speedup of
//! `i` and `j` co-running (`rate_i(with j)/rate_i(alone) + rate_j(with
//! i)/rate_j(alone)`; 1.0 = no gain over running them one after the
//! other), symmetric, the diagonal a program with a copy of itself; checked
//! when it is made ([`Matrix::new`]), so everything downstream can index it
//! without checking again. A matrix given as numbers (a file) is also held
//! to what co-running programs can do ([`Matrix::new_given`], [`MAX_WS`]).
//! Its CSV form is `csv.rs`.

use std::fmt;

/// 95% intervals of a matrix's cells, `[i][j]`, `None` where a cell has
/// none.
pub type Intervals = Vec<Vec<Option<(f64, f64)>>>;

/// What a matrix rests on, for the interval of what is computed from the
/// whole of it (the ideal scheduler's gain, `gain.rs`): a cell's interval
/// is no help there, since the best schedule and the random median each
/// combine many cells.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Resampling {
    /// Given as numbers (a CSV file): there are no samples, so nothing
    /// computed from the matrix has an interval.
    #[default]
    NoSamples,
    /// Measured: bootstrap replicates of the whole matrix, each square in
    /// the order of `names`, every cell of one replicate recomputed from
    /// one resample of the samples it rests on (a program's rate alone is
    /// resampled once per replicate and serves its whole row, as the
    /// measured matrix uses one median for it).
    Replicates(Vec<Vec<Vec<f64>>>),
    /// Measured, but these co-runs (`a+b`, or `a alone`) had fewer than 3
    /// successful samples, too few to resample.
    TooFew(Vec<String>),
}

/// A checked pair matrix, with 95% intervals when it was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Program names: unique, not empty, in row (and column) order.
    pub names: Vec<String>,
    /// `ws[i][j]` = `WS(i,j)`: square, finite, not negative, symmetric.
    pub ws: Vec<Vec<f64>>,
    /// `ci[i][j]`: the 95% interval of `ws[i][j]` where it was measured
    /// (the pairs study sets it; a matrix read from a file has none).
    pub ci: Option<Intervals>,
    /// What the gain's interval can be drawn from (the pairs study sets
    /// it; a matrix read from a file has no samples).
    pub resampling: Resampling,
}

/// The largest `WS` a matrix given as numbers may hold. `WS(i,j)` adds two
/// normalized speeds, each program's rate beside the other over its rate
/// alone: above 0 (it ran) and at most about 1 (sharing a core, a cache or
/// memory bandwidth slows a program; it does not speed it up), so `WS` lies
/// in (0, 2], 2.0 being no interference at all. Measured matrices pass 2 by
/// noise, and by more when the alone runs were slowed (the pairs study
/// names those cells); 4 leaves room for both, each program twice as fast
/// beside a partner as alone, which nothing physical does. Above it is a
/// mistake: percentages (145 for 1.45), a unit mixed up, a number mangled
/// (1e308) — and it would carry the analysis to meaningless or infinite
/// speedups.
pub const MAX_WS: f64 = 4.0;

/// A number as a message shows it: plainly, or in exponent form when that
/// would be tens of digits (`1e308`, not 309 of them).
pub(crate) struct Num(pub f64);

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v.is_finite() && v != 0.0 && !(1e-4..1e6).contains(&v.abs()) {
            write!(f, "{v:e}")
        } else {
            write!(f, "{v}")
        }
    }
}

/// What a percentage mistaken for a `WS` would be, when it would be one:
/// the hint after an implausible value.
fn percent_hint(value: &f64) -> String {
    if *value > MAX_WS && *value <= MAX_WS * 100.0 {
        format!(
            "; if the matrix holds percentages, divide them by 100 ({} is {})",
            Num(*value),
            Num(*value / 100.0)
        )
    } else {
        String::new()
    }
}

/// Why a matrix is not one; every message is one line naming the row,
/// column or cell at fault and what a valid one holds.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MatrixError {
    #[error(
        "the matrix is empty: give a header row naming the programs (first cell empty) and one \
         row per program, its name first"
    )]
    Empty,
    #[error("unreadable CSV: {0}")]
    Csv(String),
    #[error(
        "not square: row {row} ({name}) has {cells} values but the header names {expected} \
         programs"
    )]
    NotSquare {
        row: usize,
        name: String,
        cells: usize,
        expected: usize,
    },
    #[error("not square: {rows} rows for the {expected} programs of the header")]
    RowCount { rows: usize, expected: usize },
    #[error(
        "row {row} is named {found:?} but column {row} is {expected:?}: rows and columns must \
         name the programs in the same order"
    )]
    NameMismatch {
        row: usize,
        found: String,
        expected: String,
    },
    #[error("program {0:?} is named twice: each row and column names a different program")]
    DuplicateName(String),
    #[error("program {0} has an empty name: name every row and column")]
    EmptyName(usize),
    #[error("cell ({row}, {col}) = {text:?} is not a number (a weighted speedup such as 1.25)")]
    NotANumber {
        row: String,
        col: String,
        text: String,
    },
    #[error(
        "cell ({row}, {col}) = {} is negative (a weighted speedup is 0 or more)",
        Num(*.value)
    )]
    Negative {
        row: String,
        col: String,
        value: f64,
    },
    #[error("cell ({row}, {col}) = {value} is not a finite number")]
    NotFinite {
        row: String,
        col: String,
        value: f64,
    },
    #[error(
        "cell ({row}, {col}) = {} is not a plausible weighted speedup: WS(i,j) adds the two \
         programs' speeds beside each other relative to alone, each above 0 and at most about 1 \
         (a program does not run faster beside another), so a WS must be above 0 and at most \
         {MAX_WS} (twice as fast as alone for both: room for noise and slowed baselines){}",
        Num(*.value),
        percent_hint(.value)
    )]
    Implausible {
        row: String,
        col: String,
        value: f64,
    },
    #[error(
        "not symmetric: ({a}, {b}) = {} but ({b}, {a}) = {}; WS(i,j) is one number per pair, the \
         same in both cells",
        Num(*.ab),
        Num(*.ba)
    )]
    Asymmetric {
        a: String,
        b: String,
        ab: f64,
        ba: f64,
    },
}

/// Two cells within this relative distance are the same number: a matrix
/// computed in floating point (the mean of two orders) stays symmetric,
/// while a typing mistake in a CSV (1.25 against 1.52) does not.
const SYMMETRY_TOLERANCE: f64 = 1e-9;

impl Matrix {
    /// A matrix from names and values, checked: square, names unique and
    /// not empty, every value finite and not negative, symmetric.
    pub fn new(names: Vec<String>, ws: Vec<Vec<f64>>) -> Result<Matrix, MatrixError> {
        Matrix::checked(names, ws, false)
    }

    /// A matrix given as numbers (a file), checked as [`Matrix::new`] does
    /// and also every value plausible: above 0 and at most [`MAX_WS`]. A
    /// measured matrix is made by [`Matrix::new`]: the pairs study says
    /// itself what its cells above 2 mean.
    pub fn new_given(names: Vec<String>, ws: Vec<Vec<f64>>) -> Result<Matrix, MatrixError> {
        Matrix::checked(names, ws, true)
    }

    fn checked(
        names: Vec<String>,
        ws: Vec<Vec<f64>>,
        plausible: bool,
    ) -> Result<Matrix, MatrixError> {
        if names.is_empty() {
            return Err(MatrixError::Empty);
        }
        // A set, not a scan of the names before each: thousands of
        // programs.
        let mut seen = std::collections::HashSet::with_capacity(names.len());
        for (i, n) in names.iter().enumerate() {
            if n.trim().is_empty() {
                return Err(MatrixError::EmptyName(i + 1));
            }
            if !seen.insert(n) {
                return Err(MatrixError::DuplicateName(n.clone()));
            }
        }
        if ws.len() != names.len() {
            return Err(MatrixError::RowCount {
                rows: ws.len(),
                expected: names.len(),
            });
        }
        for (i, row) in ws.iter().enumerate() {
            if row.len() != names.len() {
                return Err(MatrixError::NotSquare {
                    row: i + 1,
                    name: names[i].clone(),
                    cells: row.len(),
                    expected: names.len(),
                });
            }
            for (j, &value) in row.iter().enumerate() {
                let cell = || (names[i].clone(), names[j].clone());
                if !value.is_finite() {
                    let (row, col) = cell();
                    return Err(MatrixError::NotFinite { row, col, value });
                }
                if value < 0.0 {
                    let (row, col) = cell();
                    return Err(MatrixError::Negative { row, col, value });
                }
                if plausible && !(value > 0.0 && value <= MAX_WS) {
                    let (row, col) = cell();
                    return Err(MatrixError::Implausible { row, col, value });
                }
            }
        }
        for i in 0..names.len() {
            for j in i + 1..names.len() {
                let (ab, ba) = (ws[i][j], ws[j][i]);
                if (ab - ba).abs() > SYMMETRY_TOLERANCE * ab.max(ba).max(1.0) {
                    return Err(MatrixError::Asymmetric {
                        a: names[i].clone(),
                        b: names[j].clone(),
                        ab,
                        ba,
                    });
                }
            }
        }
        Ok(Matrix {
            names,
            ws,
            ci: None,
            resampling: Resampling::NoSamples,
        })
    }

    /// The number of programs.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Never true for a matrix made by [`Matrix::new`] (clippy asks for it
    /// beside `len`).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
impl Matrix {
    /// The matrix of programs `p0..p{n-1}` whose upper triangle, row by
    /// row, begins `upper` (tests: n(n+1)/2 values make one).
    pub(crate) fn from_upper(n: usize, upper: &[f64]) -> Matrix {
        // Row i of the upper triangle starts at i n - i (i - 1) / 2.
        let at = |i: usize, j: usize| {
            let (i, j) = (i.min(j), i.max(j));
            upper[i * n - i * i.saturating_sub(1) / 2 + (j - i)]
        };
        let ws = (0..n).map(|i| (0..n).map(|j| at(i, j)).collect()).collect();
        Matrix::new((0..n).map(|i| format!("p{i}")).collect(), ws).expect("a valid matrix")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_valid_matrix_is_kept_as_given() {
        let m = Matrix::new(names(&["a", "b"]), vec![vec![1.0, 1.5], vec![1.5, 0.0]]).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m.ws[0][1], 1.5);
        assert_eq!(m.ci, None);
        assert_eq!(m.resampling, Resampling::NoSamples);
    }

    #[test]
    fn rounding_noise_is_symmetric_but_a_typo_is_not() {
        let ok = Matrix::new(
            names(&["a", "b"]),
            vec![vec![1.0, 1.25], vec![1.25 * (1.0 + 1e-12), 1.0]],
        );
        assert!(ok.is_ok());
        let e = Matrix::new(names(&["a", "b"]), vec![vec![1.0, 1.25], vec![1.52, 1.0]])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("not symmetric: (a, b) = 1.25 but (b, a) = 1.52"),
            "{e}"
        );
    }

    #[test]
    fn each_invalid_matrix_names_what_is_wrong() {
        type Case = (Vec<String>, Vec<Vec<f64>>, &'static str);
        let cases: [Case; 6] = [
            (vec![], vec![], "the matrix is empty"),
            (
                names(&["a", " "]),
                vec![vec![1.0; 2]; 2],
                "program 2 has an empty name",
            ),
            (
                names(&["a", "a"]),
                vec![vec![1.0; 2]; 2],
                "program \"a\" is named twice",
            ),
            (
                names(&["a", "b"]),
                vec![vec![1.0; 2]],
                "not square: 1 rows for the 2 programs",
            ),
            (
                names(&["a", "b"]),
                vec![vec![1.0; 2], vec![1.0]],
                "row 2 (b) has 1 values",
            ),
            (
                names(&["a", "b"]),
                vec![vec![1.0, f64::NAN], vec![f64::NAN, 1.0]],
                "cell (a, b) = NaN is not a finite number",
            ),
        ];
        for (n, ws, want) in cases {
            let e = Matrix::new(n, ws).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
