//! `smtlab pairs MATRIX.csv`: the pairings analysis of a pair matrix given
//! as a file (e.g. published SPEC CPU2000 data): the exact best and worst
//! schedules, the random distribution, re-randomization, the verdict; as
//! text, as JSON, and with `-o DIR` as a report.

use std::path::PathBuf;

use clap::Args;
use smtlab_analyse::pairs::{self, Matrix};

use crate::exit::usage;
use crate::flags;
use crate::output;

#[derive(Args, Debug)]
#[command(
    after_help = "The file: a square CSV, the program names as the header row (its first \
                     cell empty) and as the first column, in the same order, and WS(i,j) in \
                     each cell, symmetric:\n  ,a,b\n  a,1.00,1.50\n  b,1.50,1.00\n`smtlab study \
                     pairs` writes one as matrix.csv. With an odd count one program runs alone \
                     (WS = 1, shown as [i, i]). The same --seed gives the same numbers on any \
                     number of cores.\n\nExamples:\n  smtlab pairs examples/pairs-4.csv\n  \
                     smtlab pairs spec2000.csv --json\n  smtlab pairs spec2000.csv -o report/"
)]
pub struct PairsArgs {
    /// The matrix: a square CSV of weighted speedups
    #[arg(value_name = "MATRIX.csv")]
    pub matrix: PathBuf,
    /// Uniformly random pairings drawn for the distribution (10 million of 26
    /// programs take about a second on 2 cores; time grows with both)
    #[arg(long, value_name = "N", default_value_t = pairs::DEFAULT_TRIALS,
          value_parser = flags::whole::<u64>("--trials", 1, 1_000_000_000))]
    pub trials: u64,
    /// Seed of the random pairings (the same seed, the same numbers)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = flags::whole::<u64>("--seed", 0, u64::MAX))]
    pub seed: u64,
    /// Print the analysis as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Also write a report (report.html, charts, pairs.json, matrix.csv)
    #[arg(short = 'o', long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

pub fn run(a: PairsArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&a.matrix)
        .map_err(|e| usage(format!("{}: cannot read it: {e}", a.matrix.display())))?;
    let m = Matrix::from_csv(&text).map_err(|e| usage(format!("{}: {e}", a.matrix.display())))?;
    if let Some(dir) = &a.out {
        if dir.exists() && !dir.is_dir() {
            return Err(usage(format!(
                "-o {}: not a directory; give a directory for the report",
                dir.display()
            )));
        }
    }
    let analysis = pairs::analyse(&m, a.trials, a.seed);
    if let Some(dir) = &a.out {
        smtlab_report::write_pairs_report(&m, &analysis, dir)?;
    }
    let out = if a.json {
        serde_json::to_string_pretty(&analysis)? + "\n"
    } else {
        let mut s = pairs::render_text(&analysis);
        if let Some(dir) = &a.out {
            s.push_str(&format!("Report: {}\n", dir.join("report.html").display()));
        }
        s
    };
    output::print(&out)?;
    Ok(0)
}
