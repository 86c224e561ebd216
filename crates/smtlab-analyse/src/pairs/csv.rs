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
//! cells trimmed; a blank line skipped), then checked by [`Matrix::new`].
//! Uses `matrix`.

use super::matrix::{Matrix, MatrixError};

impl Matrix {
    /// Read the CSV form; a one-line error names the row, column or cell at
    /// fault (not square, asymmetric, not a number, negative, empty).
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
        let mut rows: Vec<Vec<String>> = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| MatrixError::Csv(e.to_string()))?;
            if record.iter().all(str::is_empty) {
                continue;
            }
            rows.push(record.iter().map(str::to_string).collect());
        }
        let Some((header, body)) = rows.split_first() else {
            return Err(MatrixError::Empty);
        };
        // The header's first cell is the corner above the row names:
        // usually empty, ignored whatever it holds.
        let names: Vec<String> = header.iter().skip(1).cloned().collect();
        if names.is_empty() {
            return Err(MatrixError::Empty);
        }
        if body.len() != names.len() {
            return Err(MatrixError::RowCount {
                rows: body.len(),
                expected: names.len(),
            });
        }
        let mut ws = Vec::with_capacity(names.len());
        for (i, row) in body.iter().enumerate() {
            let (name, cells) = row.split_first().expect("blank rows were skipped");
            if *name != names[i] {
                return Err(MatrixError::NameMismatch {
                    row: i + 1,
                    found: name.clone(),
                    expected: names[i].clone(),
                });
            }
            if cells.len() != names.len() {
                return Err(MatrixError::NotSquare {
                    row: i + 1,
                    name: name.clone(),
                    cells: cells.len(),
                    expected: names.len(),
                });
            }
            let values = cells
                .iter()
                .enumerate()
                .map(|(j, text)| {
                    text.parse::<f64>().map_err(|_| MatrixError::NotANumber {
                        row: names[i].clone(),
                        col: names[j].clone(),
                        text: text.clone(),
                    })
                })
                .collect::<Result<Vec<f64>, MatrixError>>()?;
            ws.push(values);
        }
        Matrix::new(names, ws)
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

#[cfg(test)]
mod tests {
    use super::*;

    const FOUR: &str = include_str!("../../../../examples/pairs-4.csv");

    #[test]
    fn a_matrix_round_trips_through_csv() {
        let m = Matrix::from_csv(FOUR).unwrap();
        assert_eq!(m.names, ["a", "b", "c", "d"]);
        assert_eq!(m.ws[0][1], 1.5);
        assert_eq!(m.ws[3][2], 1.4);
        assert_eq!(Matrix::from_csv(&m.to_csv()).unwrap(), m);
        // Awkward names and values survive too.
        let odd = Matrix::new(
            vec!["gzip, -9".into(), "#mcf".into(), "\"art\"".into()],
            vec![
                vec![0.1 + 0.2, 1.0 / 3.0, 1e-300],
                vec![1.0 / 3.0, 2.0, 1.0],
                vec![1e-300, 1.0, 0.0],
            ],
        )
        .unwrap();
        assert_eq!(Matrix::from_csv(&odd.to_csv()).unwrap(), odd);
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
        ];
        for (text, want) in cases {
            let e = Matrix::from_csv(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
