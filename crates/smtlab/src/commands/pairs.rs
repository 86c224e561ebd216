//! `smtlab pairs MATRIX.csv`: the pairings analysis of a pair matrix given
//! as a file (e.g. published SPEC CPU2000 data): the exact best and worst
//! schedules, the random distribution, re-randomization, the verdict; as
//! text, as JSON, and with `-o DIR` as a report. An analysis that takes
//! more than 2 s shows a progress bar on a terminal (not with `--json`).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use smtlab_analyse::pairs::{self, Matrix, PairsAnalysis, Progress};

use crate::exit::usage;
use crate::flags;
use crate::output;

/// An analysis shorter than this shows no progress bar (most take well
/// under a second; a bar that flashes by says nothing).
const BAR_AFTER: Duration = Duration::from_secs(2);

#[derive(Args, Debug)]
#[command(
    after_help = "The file: a square CSV, the program names as the header row (its first \
                     cell empty) and as the first column, in the same order, and WS(i,j) in \
                     each cell, symmetric, above 0 and at most 4 (two speeds relative to alone, \
                     each at most about 1):\n  ,a,b\n  a,1.00,1.50\n  b,1.50,1.00\n`smtlab study \
                     pairs` writes one as matrix.csv. With an odd count one program runs alone \
                     (WS = 1, shown as [i, i]). The same --seed gives the same numbers on any \
                     number of cores.\n\nExamples:\n  smtlab pairs examples/pairs-4.csv\n  \
                     smtlab pairs spec2000.csv --json\n  smtlab pairs spec2000.csv -o report/"
)]
pub struct PairsArgs {
    /// The matrix: a square CSV of weighted speedups
    #[arg(value_name = "MATRIX.csv")]
    pub matrix: PathBuf,
    /// Uniformly random pairings drawn for the distribution [default: 10
    /// million; past 500 programs as many as make 2.5 billion pairs, 2.5
    /// million for 2,000] (10 million of 500 programs take about 4 s on 2
    /// cores; time grows with both)
    #[arg(long, value_name = "N",
          value_parser = flags::whole::<u64>("--trials", 1, 1_000_000_000))]
    pub trials: Option<u64>,
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
    // The text goes once the matrix is read: at 2,000 programs it is 24 MB.
    let m = {
        let text = std::fs::read_to_string(&a.matrix)
            .map_err(|e| usage(format!("{}: cannot read it: {e}", a.matrix.display())))?;
        Matrix::from_csv(&text).map_err(|e| usage(format!("{}: {e}", a.matrix.display())))?
    };
    if let Some(dir) = &a.out {
        if dir.exists() && !dir.is_dir() {
            return Err(usage(format!(
                "-o {}: not a directory; give a directory for the report",
                dir.display()
            )));
        }
    }
    let trials = a.trials.unwrap_or_else(|| pairs::default_trials(m.len()));
    let quiet = a.json || !std::io::stderr().is_terminal();
    let analysis = analyse_with_bar(&m, trials, a.seed, quiet);
    if let Some(dir) = &a.out {
        smtlab_report::write_pairs_report(&m, &analysis, dir)?;
    }
    if a.json {
        print_json(&analysis)?;
    } else {
        let mut s = pairs::render_text(&analysis);
        if let Some(dir) = &a.out {
            s.push_str(&format!("Report: {}\n", dir.join("report.html").display()));
        }
        output::print(&s)?;
    }
    Ok(0)
}

/// The analysis as JSON on stdout, written as it is serialized (the matrix
/// of 2,000 programs is 50 MB of JSON, not worth holding as one string); a
/// closed pipe is success, as for `output::print`.
fn print_json(a: &PairsAnalysis) -> anyhow::Result<()> {
    let mut w = std::io::BufWriter::new(std::io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut w, a)
        .map_err(std::io::Error::from)
        .and_then(|()| w.write_all(b"\n"))
        .and_then(|()| w.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The analysis on its own thread, watched from this one: past
/// [`BAR_AFTER`], unless `quiet`, a bar on stderr shows how far it has got.
fn analyse_with_bar(m: &Matrix, trials: u64, seed: u64, quiet: bool) -> PairsAnalysis {
    let progress = Progress::new();
    let start = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    let (tx, rx) = mpsc::channel();
    let analysis = std::thread::scope(|s| {
        let progress = &progress;
        s.spawn(move || {
            let a = pairs::analyse_watched(m, trials, pairs::SCHEDULERS, seed, progress);
            // The receiver only goes away if this thread panicked there.
            let _ = tx.send(a);
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(a) => break Some(a),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // The analysis panicked: the scope raises it again.
                Err(mpsc::RecvTimeoutError::Disconnected) => break None,
            }
            if quiet || start.elapsed() < BAR_AFTER {
                continue;
            }
            let (done, total) = (progress.done(), progress.total().max(1));
            let b = bar.get_or_insert_with(|| {
                let style = ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {percent:>3}% {msg}, ETA {eta}",
                )
                .expect("valid template")
                .progress_chars("=> ");
                // Everything set before the first draw, which shows it.
                ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
                    .with_style(style)
                    .with_position(done.min(total))
                    .with_message(progress.phase().label())
                    .with_elapsed(start.elapsed())
            });
            if b.is_hidden() {
                b.set_draw_target(ProgressDrawTarget::stderr());
            }
            b.set_message(progress.phase().label());
            b.set_length(total);
            b.set_position(done.min(total));
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    analysis.expect("a scope whose thread panicked panics itself")
}
