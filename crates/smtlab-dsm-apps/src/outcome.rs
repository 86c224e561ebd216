//! What one rank (or the sequential reference) reports after running an
//! application, and the check that a parallel run computed what the
//! sequential reference computed.

use crate::error::VerifyError;
use crate::params::App;

/// The result of one run on one rank, or of the sequential reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// SOR and LU: the sum of every element of the final grid or matrix in
    /// row-major order, on rank 0 only (the other ranks report NaN: only
    /// rank 0 reads the whole shared result, so the others pay no page
    /// fetches for it). TSP: the optimal tour length, on every rank.
    pub checksum: f64,
    /// Operations done by this rank (a sample's `ops`): grid points updated
    /// (SOR), multiply-subtracts and divisions (LU), search-tree nodes
    /// visited (TSP).
    pub work: u64,
    /// One line for people: what this rank did.
    pub detail: String,
    /// SOR and LU on rank 0 and in the sequential reference: the whole
    /// final grid or matrix, so that [`verify`] compares every element and
    /// names the first that differs. `None` elsewhere.
    pub result: Option<Matrix>,
}

/// A row-major matrix of results.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    /// `rows * cols` elements, row by row.
    pub data: Vec<f64>,
}

impl Matrix {
    /// The sum of every element in row-major order: the checksum of SOR
    /// and LU (a fixed order, so parallel and sequential sums agree to the
    /// bit when the elements do).
    pub fn sum(&self) -> f64 {
        self.data.iter().sum()
    }
}

/// Check a parallel run (rank 0's outcome) against the sequential
/// reference. SOR and LU compare every element exactly (both do the same
/// floating-point operations on every element in the same order, so any
/// difference is a bug, e.g. stale data from a missing barrier), then the
/// checksum; TSP compares the optimal tour length. The error is one line.
pub fn verify(app: App, parallel: &Outcome, sequential: &Outcome) -> Result<(), VerifyError> {
    let name = app.name();
    if parallel.checksum.is_nan() {
        return Err(VerifyError::NoResult { app: name });
    }
    match app {
        App::Sor | App::Lu => {
            let what = if app == App::Sor { "grid" } else { "matrix" };
            match (&parallel.result, &sequential.result) {
                (Some(par), Some(seq)) => compare_elements(name, what, par, seq)?,
                (None, _) => return Err(VerifyError::NoParallelResult { app: name, what }),
                (_, None) => return Err(VerifyError::NoSequentialResult { app: name, what }),
            }
            if parallel.checksum.to_bits() != sequential.checksum.to_bits() {
                return Err(VerifyError::Checksum {
                    app: name,
                    parallel: parallel.checksum,
                    sequential: sequential.checksum,
                });
            }
        }
        App::Tsp => {
            if parallel.checksum != sequential.checksum {
                return Err(VerifyError::TourLength {
                    app: name,
                    parallel: parallel.checksum,
                    sequential: sequential.checksum,
                });
            }
        }
    }
    Ok(())
}

/// The grids or matrices `par` and `seq` have the same shape and every
/// element equal to the bit; else the first that differs, and how many do.
fn compare_elements(
    name: &'static str,
    what: &'static str,
    par: &Matrix,
    seq: &Matrix,
) -> Result<(), VerifyError> {
    if (par.rows, par.cols) != (seq.rows, seq.cols) || par.data.len() != seq.data.len() {
        return Err(VerifyError::Shape {
            app: name,
            what,
            parallel: (par.rows, par.cols),
            sequential: (seq.rows, seq.cols),
        });
    }
    let differ = |i: usize| par.data[i].to_bits() != seq.data[i].to_bits();
    let count = (0..par.data.len()).filter(|&i| differ(i)).count();
    if let Some(i) = (0..par.data.len()).find(|&i| differ(i)) {
        return Err(VerifyError::Elements {
            app: name,
            what,
            count,
            len: par.data.len(),
            row: i / par.cols,
            column: i % par.cols,
            parallel: par.data[i],
            sequential: seq.data[i],
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(data: Vec<f64>) -> Outcome {
        let m = Matrix {
            rows: 2,
            cols: 2,
            data,
        };
        Outcome {
            checksum: m.sum(),
            work: 4,
            detail: String::new(),
            result: Some(m),
        }
    }

    #[test]
    fn identical_grids_verify() {
        let a = grid(vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(verify(App::Sor, &a, &a.clone()), Ok(()));
    }

    #[test]
    fn one_changed_element_is_named() {
        let seq = grid(vec![1.0, 2.0, 3.0, 4.0]);
        let par = grid(vec![1.0, 2.0, 3.5, 4.0]);
        let e = verify(App::Lu, &par, &seq).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lu: 1 of 4 matrix elements differ; first at row 1 column 0: 3.5e0, sequential 3e0"
        );
    }

    #[test]
    fn a_last_bit_difference_fails() {
        let seq = grid(vec![1.0, 2.0, 3.0, 4.0]);
        let par = grid(vec![1.0, 2.0, 3.0, f64::from_bits(4.0f64.to_bits() + 1)]);
        assert!(verify(App::Sor, &par, &seq).is_err());
    }

    #[test]
    fn a_non_root_outcome_is_refused() {
        let seq = grid(vec![1.0, 2.0, 3.0, 4.0]);
        let par = Outcome {
            checksum: f64::NAN,
            work: 2,
            detail: String::new(),
            result: None,
        };
        let e = verify(App::Sor, &par, &seq).unwrap_err().to_string();
        assert!(e.contains("rank 0"), "{e}");
    }

    #[test]
    fn tsp_compares_lengths() {
        let tour = |len: f64| Outcome {
            checksum: len,
            work: 1,
            detail: String::new(),
            result: None,
        };
        assert_eq!(verify(App::Tsp, &tour(291.0), &tour(291.0)), Ok(()));
        assert_eq!(
            verify(App::Tsp, &tour(300.0), &tour(291.0))
                .unwrap_err()
                .to_string(),
            "tsp: tour length 300 differs from the sequential optimum 291"
        );
    }
    /// Each way a run fails to verify, word for word: a run's report
    /// records the line as its verification detail and the CLI prints it.
    #[test]
    fn every_verify_message_is_one_line_naming_what_differs() {
        let seq = grid(vec![1.0, 2.0, 3.0, 4.0]);
        let without = |o: &Outcome| Outcome {
            result: None,
            ..o.clone()
        };
        let wide = Outcome {
            result: Some(Matrix {
                rows: 1,
                cols: 4,
                data: vec![1.0, 2.0, 3.0, 4.0],
            }),
            ..seq.clone()
        };
        let off_sum = Outcome {
            checksum: 11.0,
            ..seq.clone()
        };
        let cases = [
            (
                verify(App::Sor, &without(&seq), &seq),
                "sor: the parallel outcome carries no grid: verify rank 0's outcome",
            ),
            (
                verify(App::Lu, &seq, &without(&seq)),
                "lu: the sequential outcome carries no matrix",
            ),
            (
                verify(App::Sor, &wide, &seq),
                "sor: the parallel grid is 1x4, the sequential 2x2",
            ),
            (
                verify(App::Lu, &off_sum, &seq),
                "lu: checksum 1.1e1 differs from the sequential 1e1",
            ),
            (
                verify(App::Lu, &grid(vec![0.5, 2.0, 3.0, 0.25]), &seq),
                "lu: 2 of 4 matrix elements differ; first at row 0 column 0: 5e-1, sequential 1e0",
            ),
            (
                verify(
                    App::Tsp,
                    &Outcome {
                        checksum: f64::NAN,
                        ..seq.clone()
                    },
                    &seq,
                ),
                "tsp: the parallel outcome carries no result (checksum NaN): verify rank 0's \
                 outcome",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got.unwrap_err().to_string(), want);
        }
    }
}
