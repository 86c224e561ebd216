//! What one rank (or the sequential reference) reports after running an
//! application, and the check that a parallel run computed what the
//! sequential reference computed.

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
pub fn verify(app: App, parallel: &Outcome, sequential: &Outcome) -> Result<(), String> {
    let name = app.name();
    if parallel.checksum.is_nan() {
        return Err(format!(
            "{name}: the parallel outcome carries no result (checksum NaN): verify rank 0's outcome"
        ));
    }
    match app {
        App::Sor | App::Lu => {
            let what = if app == App::Sor { "grid" } else { "matrix" };
            match (&parallel.result, &sequential.result) {
                (Some(par), Some(seq)) => compare_elements(name, what, par, seq)?,
                (None, _) => {
                    return Err(format!(
                        "{name}: the parallel outcome carries no {what}: verify rank 0's outcome"
                    ))
                }
                (_, None) => {
                    return Err(format!("{name}: the sequential outcome carries no {what}"))
                }
            }
            if parallel.checksum.to_bits() != sequential.checksum.to_bits() {
                return Err(format!(
                    "{name}: checksum {:e} differs from the sequential {:e}",
                    parallel.checksum, sequential.checksum
                ));
            }
        }
        App::Tsp => {
            if parallel.checksum != sequential.checksum {
                return Err(format!(
                    "{name}: tour length {} differs from the sequential optimum {}",
                    parallel.checksum, sequential.checksum
                ));
            }
        }
    }
    Ok(())
}

fn compare_elements(name: &str, what: &str, par: &Matrix, seq: &Matrix) -> Result<(), String> {
    if (par.rows, par.cols) != (seq.rows, seq.cols) || par.data.len() != seq.data.len() {
        return Err(format!(
            "{name}: the parallel {what} is {}x{}, the sequential {}x{}",
            par.rows, par.cols, seq.rows, seq.cols
        ));
    }
    let differ = |i: usize| par.data[i].to_bits() != seq.data[i].to_bits();
    let count = (0..par.data.len()).filter(|&i| differ(i)).count();
    if let Some(i) = (0..par.data.len()).find(|&i| differ(i)) {
        return Err(format!(
            "{name}: {count} of {} {what} elements differ; first at row {} column {}: {:e}, \
             sequential {:e}",
            par.data.len(),
            i / par.cols,
            i % par.cols,
            par.data[i],
            seq.data[i]
        ));
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
            e,
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
        let e = verify(App::Sor, &par, &seq).unwrap_err();
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
            verify(App::Tsp, &tour(300.0), &tour(291.0)).unwrap_err(),
            "tsp: tour length 300 differs from the sequential optimum 291"
        );
    }
}
