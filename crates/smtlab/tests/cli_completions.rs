//! `smtlab completions` and `smtlab man`: generated from the clap
//! definitions, valid for their shell, covering every subcommand, and the
//! shipped `doc/smtlab.1` equal to what the binary generates.

mod support;

use std::path::Path;
use std::process::Command;

use support::{assert_success, assert_usage_error, skip, smtlab};

/// The visible subcommands, from `smtlab --help`.
fn subcommands() -> Vec<String> {
    let out = smtlab().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    let list = help
        .split("Commands:")
        .nth(1)
        .expect("--help lists the commands")
        .split("Options:")
        .next()
        .unwrap()
        .to_string();
    let names: Vec<String> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 12, "{names:?}");
    names
}

fn stdout_of(args: &[&str]) -> String {
    let out = smtlab().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {:?}", out);
    String::from_utf8(out.stdout).unwrap()
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn completion_scripts_parse_in_their_shell_and_name_every_subcommand() {
    let subs = subcommands();
    for (shell, check) in [("bash", "bash"), ("zsh", "zsh"), ("fish", "fish")] {
        let script = stdout_of(&["completions", shell]);
        for s in &subs {
            assert!(
                script.contains(s.as_str()),
                "{shell}: no `{s}` in the script"
            );
        }
        // Flags of a subcommand are there too.
        assert!(script.contains("--placement"), "{shell}");
        if !has(check) {
            skip(&format!(
                "{check} not installed: the {shell} script was not syntax-checked"
            ));
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("smtlab.{shell}"));
        std::fs::write(&path, &script).unwrap();
        let out = Command::new(check).arg("-n").arg(&path).output().unwrap();
        assert_success(&out, &format!("{shell} -n"));
    }
    assert_usage_error(&["completions", "tcsh"], "possible values: bash");
}

/// The lines of the bash script's case for `smtlab PATH...` (its flags'
/// completions), up to the next subcommand's case.
fn bash_case<'a>(script: &'a str, path: &[&str]) -> Vec<&'a str> {
    let head = format!(
        "smtlab{})",
        path.iter()
            .map(|p| format!("__subcmd__{p}"))
            .collect::<String>()
    );
    let mut lines = script.lines().skip_while(|l| l.trim() != head).skip(1);
    let case: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !(l.starts_with("        smtlab__") && l.ends_with(')')))
        .collect();
    assert!(!case.is_empty(), "no `{head}` case in the bash script");
    case
}

#[test]
fn completions_and_help_offer_the_values_of_named_flags() {
    let script = stdout_of(&["completions", "bash"]);
    let cases: [(&[&str], &str, &str); 7] = [
        (&["run"], "--spawn", "exec fork"),
        (&["run"], "--comm", "sigio thr1 thr2 thr3 poll"),
        (&["run"], "--metric-better", "higher lower"),
        (&["rank"], "--comm", "sigio thr1 thr2 thr3 poll"),
        (&["study"], "--comm", "sigio thr1 thr2 thr3 poll"),
        (&["study"], "--share", "smt cache package"),
        (&["study"], "--metric-better", "higher lower"),
    ];
    for (path, flag, values) in cases {
        let case = bash_case(&script, path);
        let at = case
            .iter()
            .position(|l| l.trim() == format!("{flag})"))
            .unwrap_or_else(|| panic!("smtlab {path:?}: no {flag} in the bash script"));
        let offered = format!("compgen -W \"{values}\"");
        assert!(
            case[at + 1].contains(&offered),
            "smtlab {path:?} {flag}: the bash script offers {:?}, not {values}",
            case[at + 1].trim()
        );
        // `--help` lists them too (wrapped as the terminal's width wants).
        let mut args = path.to_vec();
        args.push("--help");
        let help = stdout_of(&args)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let listed = format!("[possible values: {}]", values.replace(' ', ", "));
        assert!(
            help.contains(&listed),
            "smtlab {path:?} --help: no {listed}"
        );
    }
}

#[test]
fn man_pages_cover_every_subcommand_and_the_shipped_page_is_current() {
    let page = stdout_of(&["man"]);
    assert!(
        page.starts_with(".ie") || page.contains(".TH smtlab 1"),
        "{page}"
    );
    for s in subcommands() {
        assert!(
            page.contains(&format!("smtlab\\-{}(1)", s.replace('-', "\\-"))),
            "{s}"
        );
    }
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../doc/smtlab.1");
    assert_eq!(
        std::fs::read_to_string(&shipped).unwrap_or_default(),
        page,
        "doc/smtlab.1 is stale: regenerate it with `cargo run -- man > doc/smtlab.1`"
    );

    let dir = tempfile::tempdir().unwrap();
    smtlab()
        .args(["man", "-o"])
        .arg(dir.path())
        .assert()
        .success();
    for s in subcommands() {
        let sub = std::fs::read_to_string(dir.path().join(format!("smtlab-{s}.1")))
            .unwrap_or_else(|e| panic!("smtlab-{s}.1: {e}"));
        assert!(sub.contains(&format!(".TH smtlab-{s} 1")), "{s}");
    }
    let run = std::fs::read_to_string(dir.path().join("smtlab-run.1")).unwrap();
    for flag in ["placement", "threads", "alloc", "resume", "metric"] {
        assert!(
            run.contains(&format!("\\-\\-{flag}")),
            "smtlab-run.1 lacks --{flag}"
        );
    }
    if has("man") {
        let out = Command::new("man")
            .arg("-l")
            .arg(dir.path().join("smtlab-run.1"))
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("--placement"),
            "{text}"
        );
    } else {
        skip("man not installed: the pages were not rendered");
    }
}
