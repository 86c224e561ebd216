//! `scripts/readme-numbers`: every measured number README quotes comes
//! from a benchmark's result file, printed with README's line and the
//! machine; `--check` lists each quoted number that differs from the
//! latest results, has no result yet, or is no longer where it was quoted.
//! Run on fixture results and fixture READMEs: no benchmark runs here.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

const MACHINE: &str = "2 CPUs, Test CPU @ 1.00GHz, kernel 6.1.0-test";

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/readme-numbers")
}

fn real_readme() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")
}

/// python3 runs the script; `None` (the reason printed) where it is missing.
fn python() -> Option<()> {
    match Command::new("python3").arg("--version").output() {
        Ok(o) if o.status.success() => Some(()),
        _ => {
            support::skip("python3 is not installed (scripts/setup.sh installs it)");
            None
        }
    }
}

fn run(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(script())
        .args(args)
        .env_remove("SMTLAB_BENCH_RESULTS")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A `dsm_fetch.json` shaped as the benchmark writes it: the best pinned
/// mechanism is poll at `best` times the plain ping-pong of 18.0 µs.
fn dsm_fetch(best: f64) -> serde_json::Value {
    let side = |poll: f64| {
        json!({
            "plain_us": 18.0, "plain_unconnected_us": 19.4,
            "floor": {"fetch_us": 22.9, "ratio": 1.28},
            "sigio": {"fetch_us": 33.0, "ratio": 1.83},
            "thr1": {"fetch_us": 49.4, "ratio": 2.74},
            "thr2": {"fetch_us": 45.7, "ratio": 2.54},
            "thr3": {"fetch_us": 57.0, "ratio": 3.17},
            "poll": {"fetch_us": 18.0 * poll, "ratio": poll},
        })
    };
    let loss: Vec<_> = ["sor", "lu", "tsp"]
        .iter()
        .map(|app| json!({"app": app, "comm": "poll", "verified": true, "messages": 100}))
        .collect();
    json!({
        "machine": MACHINE,
        "pinned to CPUs 0 and 1": side(best),
        "unpinned": side(1.41),
        "best_ratio_pinned": best,
        "floor_ratio_pinned": 1.28,
        "loss_5pct": loss,
    })
}

/// README's `dsm_fetch` bullet as it quotes the results of `dsm_fetch(1.37)`.
fn readme(machine: &str, best: &str) -> String {
    format!(
        "# smtlab\n\n## Set up and run\n\ntext\n\n### Benchmarks\n\n#### Latest results\n\n\
         * `dsm_fetch` on `{machine}` (pinned to CPUs 0 and 1): a plain 4 KiB UDP\n  \
         ping-pong 18.0 µs; the best mechanism (poll) 24.7 µs, {best} the ping-pong\n  \
         (target ≤ 1.5x); mechanism by mechanism sigio 1.83x, thr1 2.74x, thr2 2.54x,\n  \
         thr3 3.17x, poll {best}; the floor 1.28x; unpinned the best 1.41x; with 5% of\n  \
         datagrams dropped: 3 of 3 runs verified.\n"
    )
}

/// A results directory holding `files` and a README holding `readme`.
fn fixture(files: &[(&str, serde_json::Value)], readme: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    for (name, doc) in files {
        std::fs::write(results.join(name), doc.to_string()).unwrap();
    }
    std::fs::write(dir.path().join("README.md"), readme).unwrap();
    dir
}

fn paths(dir: &tempfile::TempDir) -> (String, String) {
    (
        dir.path().join("results").display().to_string(),
        dir.path().join("README.md").display().to_string(),
    )
}

#[test]
fn readme_numbers_prints_each_number_with_its_readme_line_and_machine() {
    let Some(()) = python() else { return };
    let dir = fixture(
        &[("dsm_fetch.json", dsm_fetch(1.37))],
        &readme(MACHINE, "1.37x"),
    );
    let (results, readme) = paths(&dir);
    let out = run(&[
        "--results",
        &results,
        "--readme",
        &readme,
        "--only",
        "dsm_fetch",
    ]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("dsm_fetch.json, measured on {MACHINE}:\n")),
        "{all}"
    );
    // Each number as README should quote it, where README quotes it.
    for line in [
        "README.md:12 (Latest results): plain 4 KiB UDP ping-pong, pinned: 18.0 µs",
        "README.md:12 (Latest results): the best mechanism's page fetch / ping-pong, pinned: 1.37x",
        "README.md:12 (Latest results): the best mechanism's page fetch, pinned: 24.7 µs",
        "README.md:12 (Latest results): the best mechanism, pinned: poll",
        "README.md:13 (Latest results): sigio: page fetch / ping-pong, pinned: 1.83x",
        "README.md:14 (Latest results): the floor of a fault-driven fetch / ping-pong, pinned: 1.28x",
        "README.md:15 (Latest results): 5% of datagrams dropped: runs that verified: 3",
    ] {
        assert!(stdout.contains(&format!("  {line}\n")), "no `{line}` in\n{all}");
    }
    // The results directory may come from the environment instead.
    let out = Command::new("python3")
        .arg(script())
        .args(["--readme", &readme, "--only", "dsm_fetch"])
        .env("SMTLAB_BENCH_RESULTS", &results)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        stdout,
        "{}",
        text(&out)
    );
}

#[test]
fn readme_numbers_check_passes_within_tolerance_and_names_each_number_that_differs() {
    let Some(()) = python() else { return };
    // README quotes 1.37x; a result of 1.39 is within 5%.
    let dir = fixture(
        &[("dsm_fetch.json", dsm_fetch(1.39))],
        &readme(MACHINE, "1.37x"),
    );
    let (results, readme) = paths(&dir);
    let check = |extra: &[&str]| {
        let mut args = vec![
            "--check",
            "--results",
            &results,
            "--readme",
            &readme,
            "--only",
            "dsm_fetch",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let out = check(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("all 14 numbers README quotes match"),
        "{}",
        text(&out)
    );
    // Not within 1%: the best ratio's two quotes and the best fetch's time
    // (24.7 against 25.0 µs) are listed, with README's line, README's text
    // and the latest result as README would write it.
    let out = check(&["--tolerance", "0.01"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let differs: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("differs:"))
        .collect();
    assert_eq!(
        differs,
        [
            "differs: README.md:12 (Latest results): dsm_fetch: the best mechanism's page fetch / \
             ping-pong, pinned: README quotes 1.37x, the latest result is 1.39x (on 2 CPUs, Test \
             CPU @ 1.00GHz, kernel 6.1.0-test)",
            "differs: README.md:12 (Latest results): dsm_fetch: the best mechanism's page fetch, \
             pinned: README quotes 24.7 µs, the latest result is 25.0 µs (on 2 CPUs, Test CPU @ \
             1.00GHz, kernel 6.1.0-test)",
            "differs: README.md:14 (Latest results): dsm_fetch: poll: page fetch / ping-pong, \
             pinned: README quotes 1.37x, the latest result is 1.39x (on 2 CPUs, Test CPU @ \
             1.00GHz, kernel 6.1.0-test)",
        ],
        "{all}"
    );
    assert!(
        stdout.ends_with(&format!(
            "3 of 14 numbers README quotes do not match the results in {results}: refresh \
             README from `scripts/readme-numbers`\n"
        )),
        "{all}"
    );
    // README naming another machine differs whatever the numbers.
    std::fs::write(
        &readme,
        self::readme("2 CPUs, Other CPU, kernel 6.1.0-test", "1.37x"),
    )
    .unwrap();
    let out = check(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "differs: README.md:11 (Latest results): dsm_fetch: machine: README quotes 2 CPUs, \
             Other CPU, kernel 6.1.0-test, the latest result is 2 CPUs, Test CPU @ 1.00GHz, \
             kernel 6.1.0-test"
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn readme_numbers_check_fails_without_a_result_file_or_where_readme_lost_a_number() {
    let Some(()) = python() else { return };
    // No dsm_fetch.json yet: each number is listed with the benchmark that
    // writes it.
    let dir = fixture(&[], &readme(MACHINE, "1.37x"));
    let (results, readme) = paths(&dir);
    let args = [
        "--check",
        "--results",
        &results,
        "--readme",
        &readme,
        "--only",
        "dsm_fetch",
    ];
    let out = run(&args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("no result:"))
            .count(),
        14,
        "{all}"
    );
    assert!(
        stdout.contains(
            "no result: README.md:12 (Latest results): dsm_fetch: the best mechanism's page fetch \
             / ping-pong, pinned: README quotes 1.37x; no dsm_fetch.json yet (cargo bench -p \
             smtlab --bench dsm_fetch writes it)"
        ),
        "{all}"
    );
    // README no longer says "the floor": that number is listed as missing.
    std::fs::write(
        dir.path().join("results/dsm_fetch.json"),
        dsm_fetch(1.37).to_string(),
    )
    .unwrap();
    std::fs::write(
        &readme,
        self::readme(MACHINE, "1.37x").replace("the floor", "floor"),
    )
    .unwrap();
    let out = run(&args);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{all}");
    assert!(
        lines[0].starts_with(
            "not in README: dsm_fetch: the floor of a fault-driven fetch / ping-pong, pinned: expected"
        ),
        "{all}"
    );
}

#[test]
fn readme_numbers_finds_every_number_it_declares_in_the_real_readme() {
    let Some(()) = python() else { return };
    // With no results at all, every declared number is "no result" and none
    // "not in README": README still quotes each one where the script looks.
    let dir = fixture(&[], "");
    let (results, _) = paths(&dir);
    let readme = real_readme().display().to_string();
    let out = run(&["--check", "--results", &results, "--readme", &readme]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let body: Vec<&str> = stdout.lines().collect();
    let (last, quotes) = body.split_last().unwrap();
    assert!(quotes.len() > 100, "{all}");
    assert!(
        last.starts_with(&format!("{} of {} numbers", quotes.len(), quotes.len())),
        "{all}"
    );
    for line in quotes {
        assert!(line.starts_with("no result: README.md:"), "{line}\n{all}");
    }
    // The tour, the benchmarks and the allocator's tables are all covered.
    for source in [
        "tour",
        "compute_vs_c",
        "pairs_speed",
        "web_vs_nginx",
        "wall_time_vs_hyperfine",
        "parallel_efficiency",
        "stream_vs_reference",
        "chat_vs_ngircd",
        "dsm_fetch",
        "alloc_rss_real",
        "alloc_goals",
    ] {
        assert!(
            stdout.contains(&format!("): {source}: ")),
            "{source} not quoted\n{all}"
        );
    }
}

#[test]
fn readme_numbers_refuses_bad_arguments_and_unreadable_results_in_one_line() {
    let Some(()) = python() else { return };
    let dir = fixture(&[], &readme(MACHINE, "1.37x"));
    let (results, readme) = paths(&dir);
    let missing = dir.path().join("nowhere").display().to_string();
    // A result file cut short (a benchmark stopped while writing it).
    let bad_dir = dir.path().join("bad");
    std::fs::create_dir(&bad_dir).unwrap();
    std::fs::write(bad_dir.join("dsm_fetch.json"), "{\"machine\": ").unwrap();
    let bad = bad_dir.display().to_string();
    for (args, needle) in [
        (
            vec!["--tolerance", "2"],
            "'2': give a relative tolerance from 0 to below 1",
        ),
        (vec!["--results", &missing], "not a directory"),
        (
            vec!["--results", &results, "--only", "dsm"],
            "--only dsm: no number README quotes comes from dsm; valid: tour,",
        ),
        (
            vec!["--results", &results, "--readme", &missing],
            "cannot be read",
        ),
        (
            vec!["--results", &bad, "--readme", &readme],
            "dsm_fetch.json: not a benchmark's JSON result",
        ),
    ] {
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(
            err.starts_with("readme-numbers: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
}
