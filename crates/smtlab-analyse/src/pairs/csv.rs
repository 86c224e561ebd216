//! The pair matrix as a CSV file, the format `smtlab pairs MATRIX.csv`
//! reads and `smtlab study pairs` writes (`matrix.csv`): a header row, its
//! first cell empty, naming the programs; then one row per program, its
//! name first and then `WS` with each program of the header, in the same
//! order:
//!
//! ```text
//! ,a,b,c
//! a,1.00,1.50,1.20
//! b,1.50,1.00,1.10
//! c,1.20,1.10,1.00
//! ```
//!
//! Read with the `csv` crate (quoting, so a program name may hold a comma;
//! cells trimmed; a blank line skipped), then checked by
//! [`Matrix::new_given`] (a file's values must also be plausible). Uses
//! `matrix`.

use super::matrix::{Matrix, MatrixError};

impl Matrix {
    /// Read the CSV form; a one-line error names the row, column or cell at
    /// fault (not square, asymmetric, not a number, negative, implausible,
    /// empty). Values are parsed as each row is read, not kept as text: a
    /// matrix of 2,000 programs is 4 million cells.
    pub fn from_csv(text: &str) -> Result<Matrix, MatrixError> {
        // Spreadsheets write a byte-order mark first; it is not a name.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            // Rows of the wrong length are reported by us, naming the row,
            // rather than by the reader.
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let mut record = csv::StringRecord::new();
        let mut next = |record: &mut csv::StringRecord| -> Result<bool, MatrixError> {
            loop {
                if !reader
                    .read_record(record)
                    .map_err(|e| MatrixError::Csv(e.to_string()))?
                {
                    return Ok(false);
                }
                if !record.iter().all(str::is_empty) {
                    return Ok(true);
                }
            }
        };
        if !next(&mut record)? {
            return Err(MatrixError::Empty);
        }
        // The header's first cell is the corner above the row names:
        // usually empty, ignored whatever it holds.
        let names: Vec<String> = record.iter().skip(1).map(str::to_string).collect();
        if names.is_empty() {
            return Err(MatrixError::Empty);
        }
        // A wrong row count is said before what is wrong inside a row (it
        // is usually why), so the first row's fault waits for the count.
        let mut ws = Vec::with_capacity(names.len());
        let mut rows = 0;
        let mut fault = None;
        while next(&mut record)? {
            let i = rows;
            rows += 1;
            if fault.is_some() || i >= names.len() {
                continue;
            }
            match row_values(i, &record, &names) {
                Ok(values) => ws.push(values),
                Err(e) => fault = Some(e),
            }
        }
        if rows != names.len() {
            return Err(MatrixError::RowCount {
                rows,
                expected: names.len(),
            });
        }
        if let Some(e) = fault {
            return Err(e);
        }
        Matrix::new_given(names, ws)
    }

    /// The CSV form [`Matrix::from_csv`] reads, each value written in the
    /// shortest form that reads back as the same `f64` (so it round-trips
    /// exactly). The intervals are not part of it.
    pub fn to_csv(&self) -> String {
        let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
        let header = std::iter::once("").chain(self.names.iter().map(String::as_str));
        // Writing into a Vec cannot fail: no I/O, and every record has the
        // same length.
        w.write_record(header).expect("writing CSV to memory");
        for (name, row) in self.names.iter().zip(&self.ws) {
            let cells = std::iter::once(name.clone()).chain(row.iter().map(|v| v.to_string()));
            w.write_record(cells).expect("writing CSV to memory");
        }
        let bytes = w.into_inner().expect("flushing CSV to memory");
        String::from_utf8(bytes).expect("CSV of UTF-8 strings is UTF-8")
    }
}

/// Row `i` (0-based) of the body: its name is the header's `i`-th, and
/// it holds one number per program.
fn row_values(
    i: usize,
    record: &csv::StringRecord,
    names: &[String],
) -> Result<Vec<f64>, MatrixError> {
    let name = record.get(0).unwrap_or_default();
    if name != names[i] {
        return Err(MatrixError::NameMismatch {
            row: i + 1,
            found: name.to_string(),
            expected: names[i].clone(),
        });
    }
    let cells = record.len() - 1;
    if cells != names.len() {
        return Err(MatrixError::NotSquare {
            row: i + 1,
            name: name.to_string(),
            cells,
            expected: names.len(),
        });
    }
    record
        .iter()
        .skip(1)
        .enumerate()
        .map(|(j, text)| {
            text.parse::<f64>().map_err(|_| MatrixError::NotANumber {
                row: names[i].clone(),
                col: names[j].clone(),
                text: text.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::matrix::MAX_WS;

    const FOUR: &str = include_str!("../../../../examples/pairs-4.csv");

    #[test]
    fn a_matrix_round_trips_through_csv() {
        let m = Matrix::from_csv(FOUR).unwrap();
        assert_eq!(m.names, ["a", "b", "c", "d"]);
        assert_eq!(m.ws[0][1], 1.5);
        assert_eq!(m.ws[3][2], 1.4);
        assert_eq!(Matrix::from_csv(&m.to_csv()).unwrap(), m);
        // Awkward names and values survive too, the extremes a file may
        // hold included.
        let odd = Matrix::new(
            vec!["gzip, -9".into(), "#mcf".into(), "\"art\"".into()],
            vec![
                vec![0.1 + 0.2, 1.0 / 3.0, 1e-300],
                vec![1.0 / 3.0, 2.0, 1.0],
                vec![1e-300, 1.0, MAX_WS],
            ],
        )
        .unwrap();
        assert_eq!(Matrix::from_csv(&odd.to_csv()).unwrap(), odd);
    }

    #[test]
    fn a_files_values_may_be_anything_plausible_but_not_more() {
        // Just above 0 and exactly the bound are accepted: the check is
        // about what co-runs can do, not about typical values.
        let m = Matrix::from_csv(",a,b\na,1e-9,4\nb,4,0.5\n").unwrap();
        assert_eq!(m.ws, [[1e-9, MAX_WS], [MAX_WS, 0.5]]);
        // The study builds its measured matrix with `new`, which keeps a
        // slowed baseline's WS above 4 for its own warning.
        let measured = Matrix::new(vec!["s".into()], vec![vec![7.6]]);
        assert!(measured.is_ok());
        let given = Matrix::new_given(vec!["s".into()], vec![vec![7.6]]).unwrap_err();
        assert!(
            given.to_string().starts_with("cell (s, s) = 7.6 is not"),
            "{given}"
        );
    }

    #[test]
    fn spaces_blank_lines_and_a_byte_order_mark_are_accepted() {
        let m = Matrix::from_csv("\u{feff}, a , b\n\na, 1 ,1.5\r\nb,1.5, 1\n\n").unwrap();
        assert_eq!(m.names, ["a", "b"]);
        assert_eq!(m.ws, [[1.0, 1.5], [1.5, 1.0]]);
    }

    #[test]
    fn each_malformed_matrix_is_named_in_one_line() {
        let cases = [
            // Not square: a row missing, a row short, a row long.
            (
                ",a,b\na,1,2\n",
                "not square: 1 rows for the 2 programs of the header",
            ),
            (
                ",a,b\na,1,2\nb,2\n",
                "not square: row 2 (b) has 1 values but the header names 2 programs",
            ),
            (
                ",a,b\na,1,2,3\nb,2,1\n",
                "not square: row 1 (a) has 3 values",
            ),
            (
                ",a,b\na,1,2\nb,3,1\n",
                "not symmetric: (a, b) = 2 but (b, a) = 3",
            ),
            (
                ",a,b\na,1,x\nb,2,1\n",
                "cell (a, b) = \"x\" is not a number",
            ),
            (",a,b\na,1,\nb,2,1\n", "cell (a, b) = \"\" is not a number"),
            (
                ",a,b\na,1,-2\nb,-2,1\n",
                "cell (a, b) = -2 is negative (a weighted speedup is 0 or more)",
            ),
            (
                ",a,b\nb,1,2\na,2,1\n",
                "row 1 is named \"b\" but column 1 is \"a\"",
            ),
            (",a,a\na,1,2\na,2,1\n", "program \"a\" is named twice"),
            (
                ",a,b\na,1,inf\nb,inf,1\n",
                "cell (a, b) = inf is not a finite",
            ),
            ("", "the matrix is empty"),
            ("\n\n", "the matrix is empty"),
            // What cannot be a weighted speedup, with the bound and why.
            (
                ",a,b\na,1,1e308\nb,1e308,1\n",
                "cell (a, b) = 1e308 is not a plausible weighted speedup: WS(i,j) adds the two \
                 programs' speeds beside each other relative to alone, each above 0 and at most \
                 about 1 (a program does not run faster beside another), so a WS must be above 0 \
                 and at most 4 (twice as fast as alone for both: room for noise and slowed \
                 baselines)",
            ),
            (
                ",a,b\na,145,120\nb,120,110\n",
                "cell (a, a) = 145 is not a plausible weighted speedup: WS(i,j) adds",
            ),
            (
                ",a,b\na,145,120\nb,120,110\n",
                "slowed baselines); if the matrix holds percentages, divide them by 100 (145 is \
                 1.45)",
            ),
            (
                ",a,b\na,1,4.000001\nb,4.000001,1\n",
                "cell (a, b) = 4.000001 is not a plausible",
            ),
            (",a,b\na,1,0\nb,0,1\n", "cell (a, b) = 0 is not a plausible"),
            (
                ",a,b\na,1,-1e308\nb,-1e308,1\n",
                "cell (a, b) = -1e308 is negative",
            ),
            (
                ",a,b\na,1,NaN\nb,NaN,1\n",
                "cell (a, b) = NaN is not a finite number",
            ),
            (
                ",a,b\na,1,1.5\nb,1e300,1\n",
                "cell (b, a) = 1e300 is not a plausible",
            ),
        ];
        for (text, want) in cases {
            let e = Matrix::from_csv(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
