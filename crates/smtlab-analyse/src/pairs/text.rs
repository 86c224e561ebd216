//! A pairs analysis as text for a terminal: the matrix (with its intervals
//! when measured), the best and worst schedules, the random distribution,
//! the re-randomization table and the verdict. Uses `analysis` and
//! `verdict`.

use std::fmt::Write;

use super::analysis::{PairsAnalysis, ScheduleJson};
use super::verdict::pair_names;

/// Past this many programs the matrix is too wide for a terminal: the text
/// says where to find it instead (the JSON, `matrix.csv` and the heatmap
/// of `-o DIR`).
const WIDEST_MATRIX: usize = 40;

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The analysis as text, one section after the other.
pub fn render_text(a: &PairsAnalysis) -> String {
    let mut s = String::new();
    render_matrix(&mut s, a);
    let sched = |label: &str, sc: &ScheduleJson| {
        format!(
            "{label} schedule: speedup {}: {}\n",
            pct(sc.speedup),
            pair_names(&a.programs, &sc.pairs).join(", ")
        )
    };
    s.push_str(&sched("Best", &a.best));
    s.push_str(&sched("Worst", &a.worst));
    let r = &a.random;
    // Writing into a String cannot fail.
    let _ = writeln!(
        s,
        "Random schedules ({}): mean {}, min {}, 5% {}, median {}, 95% {}, max {}",
        r.trials,
        pct(r.mean),
        pct(r.min),
        pct(r.p05),
        pct(r.p50),
        pct(r.p95),
        pct(r.max)
    );
    if let Some(first) = a.rerandomization.first() {
        let _ = writeln!(
            s,
            "Re-pairing at random every period ({} simulated schedulers each):",
            first.schedulers
        );
        let _ = writeln!(s, "  periods    mean      5%     50%     95%");
        for x in &a.rerandomization {
            let _ = writeln!(
                s,
                "  {:>7} {:>7} {:>7} {:>7} {:>7}",
                x.periods,
                pct(x.mean),
                pct(x.p05),
                pct(x.p50),
                pct(x.p95)
            );
        }
    }
    let _ = writeln!(s, "Verdict: {}", a.verdict);
    s
}

fn render_matrix(s: &mut String, a: &PairsAnalysis) {
    let n = a.programs.len();
    let _ = write!(
        s,
        "Pair matrix: weighted speedup WS(i,j) (1.00 = no gain over running them one after the \
         other"
    );
    if n > WIDEST_MATRIX {
        let _ = writeln!(
            s,
            "): {n} programs, too wide to print here; see --json, or -o DIR (matrix.csv, and a \
             heatmap up to 100 programs)"
        );
        return;
    }
    let _ = writeln!(s, "{})", intervals_note(a));
    let cell = |i: usize, j: usize| -> String {
        let v = a.matrix[i][j];
        match a.ci.as_ref().and_then(|c| c[i][j]) {
            Some([lo, hi]) => format!("{v:.2} [{lo:.2}-{hi:.2}]"),
            None => format!("{v:.2}"),
        }
    };
    let name_w = a
        .programs
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(0);
    let cell_w = (0..n)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| cell(i, j).len())
        .chain(a.programs.iter().map(|p| p.chars().count()))
        .max()
        .unwrap_or(0);
    let _ = write!(s, "  {:<name_w$}", "");
    for p in &a.programs {
        let _ = write!(s, "  {p:>cell_w$}");
    }
    s.push('\n');
    for (i, p) in a.programs.iter().enumerate() {
        let _ = write!(s, "  {p:<name_w$}");
        for j in 0..n {
            let _ = write!(s, "  {:>cell_w$}", cell(i, j));
        }
        s.push('\n');
    }
}

/// What the matrix's heading says of its intervals: nothing for a matrix
/// given without samples; for a measured one, that they are in brackets,
/// and — so that a bare number is not read as one without spread — where a
/// cell has none for lack of samples (fewer than 3 of the pair co-running,
/// or of either program alone).
pub fn intervals_note(a: &PairsAnalysis) -> &'static str {
    let Some(ci) = &a.ci else { return "" };
    let cells = || ci.iter().flatten();
    if cells().all(Option::is_some) {
        "; 95% interval in brackets"
    } else if cells().all(Option::is_none) {
        "; no 95% intervals: every cell had fewer than 3 samples"
    } else {
        "; 95% interval in brackets, none where a cell had fewer than 3 samples"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pairs::analysis::analyse_with;
    use crate::pairs::matrix::Matrix;

    #[test]
    fn the_text_shows_every_section_with_its_numbers() {
        let m = Matrix::from_csv(include_str!("../../../../examples/pairs-4.csv")).unwrap();
        let text = render_text(&analyse_with(&m, 30_000, 200, 1));
        for want in [
            "Pair matrix: weighted speedup WS(i,j) (1.00 = no gain over running them one after the other)\n",
            "        a     b     c     d\n",
            "  a  1.00  1.50  1.20  1.10\n",
            "Best schedule: speedup 45.0%: a+b, c+d\n",
            "Worst schedule: speedup 10.0%: a+d, b+c\n",
            "Random schedules (30000): mean 26.",
            "min 10.0%, 5% 10.0%, median 25.0%, 95% 45.0%, max 45.0%\n",
            "Re-pairing at random every period (200 simulated schedulers each):\n",
            "       64   26.",
            "Verdict: An ideal scheduler gains 20.0 percentage points",
            "Best pairs: a+b, c+d.\n",
        ] {
            assert!(text.contains(want), "{want:?} in\n{text}");
        }
    }

    #[test]
    fn intervals_are_shown_and_a_wide_matrix_is_not_printed() {
        let mut m = Matrix::from_csv(",a,b\na,1,1.5\nb,1.5,1\n").unwrap();
        m.ci = Some(vec![
            vec![None, Some((1.4, 1.6))],
            vec![Some((1.4, 1.6)), None],
        ]);
        let text = render_text(&analyse_with(&m, 100, 10, 1));
        assert!(
            text.contains(
                "; 95% interval in brackets, none where a cell had fewer than 3 samples)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  a              1.00  1.50 [1.40-1.60]\n"),
            "{text}"
        );
        // Every cell with its interval: nothing more to say.
        m.ci = Some(vec![vec![Some((0.9, 1.1)), Some((1.4, 1.6))]; 2]);
        let text = render_text(&analyse_with(&m, 100, 10, 1));
        assert!(text.contains("; 95% interval in brackets)\n"), "{text}");
        // None: no brackets to speak of.
        m.ci = Some(vec![vec![None; 2]; 2]);
        let text = render_text(&analyse_with(&m, 100, 10, 1));
        assert!(
            text.contains("; no 95% intervals: every cell had fewer than 3 samples)\n"),
            "{text}"
        );
        let n = WIDEST_MATRIX + 1;
        let wide = Matrix::new(
            (0..n).map(|i| format!("p{i}")).collect(),
            vec![vec![1.0; n]; n],
        )
        .unwrap();
        let text = render_text(&analyse_with(&wide, 100, 10, 1));
        assert!(
            text.contains(&format!("{n} programs, too wide to print here")),
            "{text}"
        );
        assert!(text.contains("Best schedule: speedup 0.0%"), "{text}");
    }
}
