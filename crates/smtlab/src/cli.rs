//! Command-line definitions (clap) and dispatch.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::commands;

#[derive(Parser)]
#[command(
    name = "smtlab",
    version,
    about = "Measure how to run a parallel program on this machine: threads or processes, \
             how many, pinned where, with SMT or without",
    propagate_version = true,
    long_about = "Measure how to run a parallel program on this machine: threads or processes, \
                  how many, pinned where, with SMT or without, with which allocator; and show \
                  why, with counters, confidence intervals, charts and plain-language verdicts.\n\n\
                  Every sample is committed to a SQLite store (smtlab.db unless --db) as soon as \
                  it is measured; `smtlab study` answers a question end to end, `smtlab run` \
                  measures any sweep, `smtlab report` writes the report of a stored run.",
    after_long_help = "Exit status: 0 on success; 1 when the tool or the machine failed (the \
                       error chain is printed); 2 for a usage error (one line naming the flag, \
                       file or value at fault); 3 when a run or study ended but a point has no \
                       successful sample (every sample is stored with its reason), or a load \
                       run (`smtlab load`) had no successful request, a wrong body, or a \
                       message lost; 128 + the \
                       signal when a run was interrupted: 130 for Ctrl-C (SIGINT), 143 for \
                       SIGTERM (every sample measured is stored: finish it with `smtlab run \
                       --resume RUN`). `smtlab pin` exits with its program's status."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the machine: packages, cores, PUs, caches, NUMA nodes
    Topology(commands::topology::TopologyArgs),
    /// Show the CPUs a placement or CPU expression picks for N workers
    Place(commands::place::PlaceArgs),
    /// Run a program with its threads pinned one by one to a CPU list
    Pin(commands::pin::PinArgs),
    /// List the built-in workloads: parameters, metric, verification
    List(commands::list::ListArgs),
    /// Measure a workload or command across models, placements and thread counts
    Run(Box<commands::run::RunArgs>),
    /// Answer a question with a predefined sweep: verdicts, recommendations, report
    Study(Box<commands::study::StudyArgs>),
    /// Write the report of a stored run: HTML with charts, PNG/SVG, CSV, JSON, Markdown
    Report(commands::report::ReportArgs),
    /// Best, worst and random pairings of programs sharing a core, from a pair matrix (CSV)
    Pairs(commands::pairs::PairsArgs),
    /// Run one of smtlab's servers in the foreground (web: a static HTTP server)
    Serve(commands::serve::ServeArgs),
    /// Load a server: HTTP requests/s and latency, closed or open loop, bodies verified
    Load(commands::load::LoadArgs),
    /// Compare two runs, or the hosts of a merged store, point by point: ratio, 95% CI
    Compare(commands::compare::CompareArgs),
    /// List the runs in a store
    Runs(commands::runs::RunsArgs),
    /// Merge stores (one per host) into one; merging again adds only what is new
    Merge(commands::merge::MergeArgs),
    /// Show one stored run: how it was made, the machine, the results
    Show(commands::show::ShowArgs),
    /// One rank of a DSM run under a launcher (mpirun, srun); rank 0 stores the run
    Rank(Box<commands::rank::RankArgs>),
    /// A worker process of a built-in workload (internal)
    #[command(name = "__worker", hide = true)]
    Worker,
    /// One rank of a DSM point smtlab started itself (internal)
    #[command(name = "__rank", hide = true)]
    RankWorker(Box<commands::rank_worker::RankWorkerArgs>),
    /// Wait for smtlab's go, then exec a program (internal)
    #[command(name = "__gate", hide = true)]
    Gate {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        program: Vec<std::ffi::OsString>,
    },
    /// Kill the servers and remove the directories smtlab names on stdin
    /// once smtlab is gone (internal: cleans up after a killed smtlab)
    #[command(name = "__watchdog", hide = true)]
    Watchdog {
        /// The watchdog proper (without: start it and exit)
        #[arg(long)]
        detached: bool,
    },
    /// Exit 0 if LIBRARY is mapped into this process, 3 if not (internal:
    /// checks that an --alloc library loads with LD_PRELOAD)
    #[command(name = "__loaded", hide = true)]
    Loaded { library: std::path::PathBuf },
    /// Show what this machine can and cannot measure, and how to fix each gap
    Doctor(commands::doctor::DoctorArgs),
    /// Print the shell completion script (bash, zsh, fish)
    Completions(commands::completions::CompletionsArgs),
    /// Print the manual page smtlab.1 (or write every page with -o DIR)
    Man(commands::man::ManArgs),
}

/// The command tree, for parsing, completions and the man page.
pub fn command() -> clap::Command {
    signed_values(Cli::command())
}

/// Every value may start with `-` when it is a number (`--threads -1`,
/// `--rate -5`), and a value parsed into seconds or a fraction (`f64`:
/// `--duration -1s`) whatever follows the `-`: the flag's own parser then
/// refuses it, naming the flag and its range, where clap alone said
/// "unexpected argument '-1' found" and named no flag. Paths and names
/// keep clap's rule (`-o --json` is still a missing value, not a
/// directory named `--json`).
fn signed_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if !a.get_action().takes_values() {
            return a;
        }
        let seconds = a.get_value_parser().type_id() == std::any::TypeId::of::<f64>();
        let hyphens = seconds || a.is_allow_hyphen_values_set();
        a.allow_negative_numbers(true).allow_hyphen_values(hyphens)
    })
    .mut_subcommands(signed_values)
}

/// Parse the command line and run the command; clap's own errors (unknown
/// flag, missing value) exit 2 as well.
pub fn parse_args() -> anyhow::Result<i32> {
    let matches = command()
        .try_get_matches()
        .map_err(crate::exit::clap_error)?;
    let cli = Cli::from_arg_matches(&matches).map_err(crate::exit::clap_error)?;
    match cli.command {
        Command::Topology(a) => commands::topology::run(a),
        Command::Place(a) => commands::place::run(a),
        Command::Pin(a) => commands::pin::run(a),
        Command::List(a) => commands::list::run(a),
        Command::Run(a) => commands::run::run(*a),
        Command::Study(a) => commands::study::run(*a),
        Command::Report(a) => commands::report::run(a),
        Command::Pairs(a) => commands::pairs::run(a),
        Command::Serve(a) => commands::serve::run(a),
        Command::Load(a) => commands::load::run(a),
        Command::Compare(a) => commands::compare::run(a),
        Command::Runs(a) => commands::runs::run(a),
        Command::Merge(a) => commands::merge::run(a),
        Command::Show(a) => commands::show::run(a),
        Command::Rank(a) => commands::rank::run(*a),
        Command::Worker => commands::worker::run(),
        Command::RankWorker(a) => commands::rank_worker::run(*a),
        Command::Gate { program } => commands::gate::run(program),
        Command::Watchdog { detached } => Ok(smtlab_execute::watchdog::main(detached)),
        Command::Loaded { library } => Ok(smtlab_execute::preload_check::loaded_main(&library)),
        Command::Doctor(a) => commands::doctor::run(a),
        Command::Completions(a) => commands::completions::run(a, command()),
        Command::Man(a) => commands::man::run(a, command()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags and positionals of every visible command, with the path of
    /// subcommands that leads to it.
    fn every_value(cmd: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, clap::Arg)>) {
        for a in cmd.get_arguments() {
            if a.get_action().takes_values() && !a.is_hide_set() {
                out.push((path.to_vec(), a.clone()));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let mut p = path.to_vec();
            p.push(sub.get_name().to_string());
            every_value(sub, &p, out);
        }
    }

    /// `smtlab PATH... ARG VALUE`: `None` when the value was taken (another
    /// error, such as a missing required flag, may follow), else the
    /// one-line message.
    fn refused(path: &[String], a: &clap::Arg, value: &str) -> Option<String> {
        let mut argv = vec!["smtlab".to_string()];
        argv.extend(path.iter().cloned());
        if let Some(long) = a.get_long() {
            argv.push(format!("--{long}"));
        }
        argv.push(value.to_string());
        let e = command().try_get_matches_from(&argv).err()?;
        use clap::error::ErrorKind;
        if !matches!(
            e.kind(),
            ErrorKind::ValueValidation | ErrorKind::InvalidValue | ErrorKind::UnknownArgument
        ) {
            return None;
        }
        let e = crate::exit::clap_error(e);
        let u = e
            .downcast_ref::<crate::exit::UsageError>()
            .expect("a usage error");
        Some(u.0.clone())
    }

    /// The one-line usage error of `smtlab ARGV...`.
    fn usage_of(argv: &[&str]) -> String {
        let mut all = vec!["smtlab"];
        all.extend(argv);
        let e = command().try_get_matches_from(&all).expect_err("refused");
        let e = crate::exit::clap_error(e);
        e.downcast_ref::<crate::exit::UsageError>()
            .expect("a usage error")
            .0
            .clone()
    }

    /// The count flags of `load` and `serve` share one parser
    /// (`flags::count`, `flags::whole`); each keeps its own words.
    #[test]
    fn count_flags_keep_their_messages() {
        use smtlab_web::load::{MAX_CONNECTIONS, MAX_THREADS};
        let url = ["load", "http", "http://127.0.0.1:1/"];
        let cases: [(Vec<&str>, String); 5] = [
            (
                [&url[..], &["--connections", "0"]].concat(),
                format!(
                    "--connections 0: expected a number of connections from 1 to {MAX_CONNECTIONS}"
                ),
            ),
            (
                [&url[..], &["--threads", "x"]].concat(),
                format!("--threads x: expected a number of client threads from 1 to {MAX_THREADS}"),
            ),
            (
                vec!["serve", "web", "--threads", "65536"],
                "--threads 65536: expected a number of workers from 1 to 65535".into(),
            ),
            (
                vec!["serve", "chat", "--max-connections", "0"],
                "--max-connections 0: expected a number from 1 to 1000000".into(),
            ),
            (
                vec!["load", "chat", "127.0.0.1:6667", "--users", "1"],
                "--users 1: expected a whole number from 2 to 100000".into(),
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(usage_of(&argv), want, "{argv:?}");
        }
    }

    /// `--cpus` of the four commands that take it is one parser: the same
    /// words for the same mistake.
    #[test]
    fn every_cpus_flag_refuses_alike() {
        let commands: [&[&str]; 4] = [
            &["load", "http", "http://127.0.0.1:1/"],
            &["load", "chat", "127.0.0.1:6667"],
            &["serve", "web"],
            &["serve", "chat"],
        ];
        for bad in ["a", "3-1", ","] {
            let first = usage_of(&[commands[0], &["--cpus", bad]].concat());
            assert!(first.starts_with(&format!("--cpus {bad}: ")), "{first}");
            for c in &commands[1..] {
                assert_eq!(usage_of(&[*c, &["--cpus", bad]].concat()), first, "{c:?}");
            }
        }
    }

    #[test]
    fn a_negative_number_is_refused_naming_its_flag_and_range() {
        let mut all = Vec::new();
        let mut cmd = command();
        cmd.build();
        every_value(&cmd, &[], &mut all);
        let mut numeric = 0;
        for (path, a) in &all {
            for (plus, minus) in [("1", "-1"), ("1s", "-1s")] {
                // `-1s` only where `1s` is a value (a duration); a path or
                // a name keeps clap's rule for a value that starts with `-`
                // and is not a number.
                let duration = refused(path, a, "1s").is_none() && refused(path, a, "x").is_some();
                if minus == "-1s" && !duration {
                    continue;
                }
                let Some(msg) = refused(path, a, minus) else {
                    continue;
                };
                let what = format!("smtlab {} {a} {minus}", path.join(" "));
                // clap alone split `-1` into flags and named none.
                assert!(!msg.contains("unexpected argument"), "{what}: {msg}");
                if a.get_long().is_none() {
                    continue;
                }
                let long = a.get_long().unwrap();
                assert!(
                    msg.contains(&format!("--{long}")) && msg.contains(minus),
                    "{what}: {msg}"
                );
                // A number flag (it takes `1` or `1s`): the range is said.
                if refused(path, a, plus).is_none() {
                    numeric += 1;
                    let ranged = [
                        "from ",
                        "between ",
                        "above ",
                        "more than ",
                        "at least ",
                        "..=",
                        "may run on CPUs ",
                    ]
                    .iter()
                    .any(|r| msg.contains(r));
                    assert!(ranged, "{what}: no range in {msg}");
                }
            }
        }
        // run, study, load, pairs, place, serve, rank...: dozens of them.
        assert!(numeric > 30, "only {numeric} numeric flags found");
    }
}
