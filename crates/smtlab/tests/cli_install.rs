//! `scripts/install.sh`: an installed smtlab carries its allocator library,
//! man pages and completions, and works from its prefix alone (moved too),
//! with nothing of the build tree on its PATH or in its environment.
//!
//! Installs from the debug profile `cargo test` already built (`--from`),
//! never a release build: CI's time is better spent elsewhere.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;
use support::{assert_success, skip};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The profile directory holding the smtlab under test (`target/debug`).
fn profile_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_smtlab"))
        .parent()
        .expect("smtlab in target/<profile>/")
        .to_path_buf()
}

/// libsmtalloc.so of this profile, built once per test binary: `cargo test
/// -p smtlab` builds smtlab but not the other package's cdylib. A build
/// that fails is a failure of the tree: it panics.
fn build_preload() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = profile_dir();
        let so = dir.join("libsmtalloc.so");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "smtalloc-preload"])
            .env("CARGO_TARGET_DIR", dir.parent().expect("target dir"))
            .current_dir(repo());
        if dir.ends_with("release") {
            cmd.arg("--release");
        }
        match cmd.status() {
            Ok(s) => assert!(s.success(), "cargo build -p smtalloc-preload: {s}"),
            // No cargo at test time: a library built before will do.
            Err(e) => assert!(
                so.is_file(),
                "cannot run cargo ({e}) and no {}",
                so.display()
            ),
        }
        assert!(so.is_file(), "{} was not built", so.display());
    });
}

/// `scripts/install.sh ARGS` with `env`, its output.
fn install(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("scripts/install.sh")).args(args);
    cmd.env_remove("DESTDIR").env_remove("SMTLAB_INSTALL_FROM");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("bash runs")
}

/// `from` installed into `prefix` (a fresh path).
fn install_into(prefix: &Path) {
    build_preload();
    let out = install(
        &[
            "--from",
            profile_dir().to_str().unwrap(),
            prefix.to_str().unwrap(),
        ],
        &[],
    );
    assert_success(&out, "scripts/install.sh --from target/<profile>");
}

/// A command with only what a user's shell would have: no cargo variables,
/// no LD_LIBRARY_PATH into the build tree, a PATH of the prefix's `bin` and
/// the system's directories.
fn clean(program: impl AsRef<std::ffi::OsStr>, prefix: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env(
            "PATH",
            format!(
                "{}:/usr/local/bin:/usr/bin:/bin",
                prefix.join("bin").display()
            ),
        )
        .env("LANG", "C.UTF-8");
    for keep in ["HOME", "TMPDIR", "XDG_RUNTIME_DIR"] {
        if let Some(v) = std::env::var_os(keep) {
            cmd.env(keep, v);
        }
    }
    cmd
}

/// `prefix/bin/smtlab ARGS` in a clean environment.
fn installed(prefix: &Path, args: &[&str]) -> Output {
    let out = clean(prefix.join("bin/smtlab"), prefix)
        .args(args)
        .output()
        .unwrap();
    assert_success(&out, &format!("installed smtlab {args:?}"));
    out
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every file the install promises, under `root`.
fn assert_installed(root: &Path) {
    for file in [
        "bin/smtlab",
        "lib/smtlab/libsmtalloc.so",
        "share/man/man1/smtlab.1",
        "share/man/man1/smtlab-run.1",
        "share/man/man1/smtlab-doctor.1",
        "share/bash-completion/completions/smtlab",
        "share/zsh/site-functions/_smtlab",
        "share/fish/vendor_completions.d/smtlab.fish",
    ] {
        assert!(
            root.join(file).is_file(),
            "no {file} under {}",
            root.display()
        );
    }
    let zsh = std::fs::read_to_string(root.join("share/zsh/site-functions/_smtlab")).unwrap();
    // zsh autoloads a function file from fpath only with this first line.
    assert!(
        zsh.starts_with("#compdef smtlab"),
        "{}",
        &zsh[..zsh.len().min(80)]
    );
}

/// doctor of the installed smtlab names the installed library.
fn assert_doctor_finds(prefix: &Path) {
    let lib = prefix.join("lib/smtlab/libsmtalloc.so");
    let out = installed(prefix, &["doctor", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "allocator_smtalloc")
        .expect("an allocator_smtalloc check")
        .clone();
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["finding"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}: ", lib.display())),
        "{check}"
    );
    let text = String::from_utf8(installed(prefix, &["doctor"]).stdout).unwrap();
    assert!(text.contains(&lib.display().to_string()), "{text}");
}

/// Installed, then moved: the copy finds its own library (doctor, a
/// built-in workload and a command run with `--alloc smtalloc`), from a
/// PATH and environment without the build tree.
#[test]
fn installed_smtlab_runs_with_smtalloc_from_its_prefix_also_when_moved() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("first");
    install_into(&first);
    assert_installed(&first);
    assert_doctor_finds(&first);

    let prefix = tmp.path().join("moved");
    std::fs::rename(&first, &prefix).unwrap();
    assert_doctor_finds(&prefix);
    let lib = prefix.join("lib/smtlab/libsmtalloc.so");

    // A built-in workload under smtalloc: it succeeds, and the stored point
    // (read back by the installed smtlab) is smtalloc's.
    let db = tmp.path().join("i.db");
    let db = db.to_str().unwrap();
    installed(
        &prefix,
        &[
            "run",
            "-w",
            "allocprobe",
            "--param",
            "live=2000",
            "--duration",
            "50ms",
            "--warmup",
            "0",
            "--min-samples",
            "1",
            "--max-samples",
            "1",
            "--alloc",
            "smtalloc",
            "--db",
            db,
        ],
    );
    let shown: Value =
        serde_json::from_slice(&installed(&prefix, &["show", "--json", "--db", db]).stdout)
            .unwrap();
    let points = shown["points"].as_array().unwrap();
    assert_eq!(points.len(), 1, "{shown}");
    assert_eq!(points[0]["alloc"], "smtalloc", "{}", points[0]);
    assert!(
        points[0]["median"].as_f64().is_some_and(|m| m > 0.0),
        "{}",
        points[0]
    );

    // The library that was loaded is the moved prefix's: a measured command
    // counts its own mappings of that file.
    let cmd = format!("echo v=$(grep -c -F '{}' /proc/self/maps)", lib.display());
    let out = installed(
        &prefix,
        &[
            "run",
            "--cmd",
            &cmd,
            "--metric",
            "v=v=([0-9]+)",
            "--alloc",
            "smtalloc",
            "--warmup",
            "0",
            "--min-samples",
            "1",
            "--max-samples",
            "1",
            "--json",
            "--db",
            db,
        ],
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &doc["points"][0];
    assert_eq!(p["alloc"], "smtalloc", "{p}");
    assert!(
        p["median"].as_f64().is_some_and(|m| m >= 1.0),
        "{lib:?} not mapped: {p}"
    );
}

/// The installed man pages render with `man -l`, and `man` finds a
/// subcommand's page by name once PREFIX/bin is on PATH (man-db looks in
/// PREFIX/share/man for it).
#[test]
fn installed_man_pages_render_and_are_found_by_name() {
    if !has("man") {
        skip("man not installed (apt-get install man-db): the installed pages were not rendered");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("p");
    install_into(&prefix);
    let man1 = prefix.join("share/man/man1");
    let render = |args: &[&std::ffi::OsStr]| {
        let out = clean("man", &prefix)
            .args(args)
            .env("MANPAGER", "cat")
            .env("PAGER", "cat")
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        assert_success(&out, &format!("man {args:?}"));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let main = render(&["-l".as_ref(), man1.join("smtlab.1").as_os_str()]);
    for want in ["NAME", "smtlab", "smtlab-run(1)", "smtlab-doctor(1)"] {
        assert!(main.contains(want), "smtlab.1 lacks {want}:\n{main}");
    }
    let run = render(&["-l".as_ref(), man1.join("smtlab-run.1").as_os_str()]);
    assert!(run.contains("--alloc"), "{run}");
    let by_name = render(&["smtlab-run".as_ref()]);
    assert!(
        by_name.contains("smtlab-run") && by_name.contains("--alloc"),
        "man smtlab-run with PREFIX/bin on PATH:\n{by_name}"
    );
}

/// `_smtlab`'s answer to `smtlab ru<TAB>` in bash, after `setup` (shell
/// lines that define it).
fn bash_completes(prefix: &Path, home: &Path, setup: &str) -> Vec<String> {
    // What bash sets before calling a completion function for `smtlab ru<TAB>`.
    let script = format!(
        "{setup}; COMP_WORDS=(smtlab ru); COMP_CWORD=1; COMP_LINE='smtlab ru'; \
         COMP_POINT=9; _smtlab smtlab ru smtlab; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    );
    let out = clean("bash", prefix)
        .args(["--norc", "--noprofile", "-c", &script])
        .env("HOME", home)
        .env(
            "XDG_DATA_DIRS",
            format!("{}:/usr/share", prefix.join("share").display()),
        )
        .output()
        .unwrap();
    assert_success(&out, &format!("bash completion after {setup}"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The installed bash completion completes a subcommand, sourced and as
/// bash-completion loads it from PREFIX/share (XDG_DATA_DIRS, which holds
/// /usr/local/share by default); fish's likewise from its vendor directory.
#[test]
fn installed_completions_complete_a_subcommand() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("p");
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    install_into(&prefix);
    let file = prefix.join("share/bash-completion/completions/smtlab");
    let loader = Path::new("/usr/share/bash-completion/bash_completion");
    let mut setups = vec![format!("source '{}'", file.display())];
    if loader.is_file() {
        setups.push(format!(
            "source '{}'; __load_completion smtlab",
            loader.display()
        ));
    } else {
        skip("bash-completion not installed (apt-get install bash-completion): the completion was sourced, not loaded from PREFIX/share");
    }
    for setup in setups {
        let offered = bash_completes(&prefix, &home, &setup);
        // `run` and whatever else starts with `ru` (`runs`), nothing else.
        assert!(
            offered.iter().any(|o| o == "run"),
            "{setup}: smtlab ru<TAB>: {offered:?}"
        );
        assert!(
            offered.iter().all(|o| o.starts_with("ru")),
            "{setup}: smtlab ru<TAB>: {offered:?}"
        );
    }

    if !has("fish") {
        skip("fish not installed (apt-get install fish): its installed completion not tried");
        return;
    }
    let out = clean("fish", &prefix)
        .args(["-c", "complete -C 'smtlab ru'"])
        .env("HOME", &home)
        .env(
            "XDG_DATA_DIRS",
            format!("{}:/usr/share", prefix.join("share").display()),
        )
        .output()
        .unwrap();
    assert_success(&out, "fish completion");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.split('\t').next() == Some("run")),
        "smtlab ru<TAB> in fish, from PREFIX/share/fish/vendor_completions.d: {text}"
    );
}

/// DESTDIR stages the tree under DESTDIR/PREFIX (what a package build
/// does); SMTLAB_INSTALL_FROM names the built profile like --from.
#[test]
fn destdir_stages_the_install_under_destdir_prefix() {
    build_preload();
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    let out = install(
        &["/usr/local"],
        &[("DESTDIR", &stage), ("SMTLAB_INSTALL_FROM", &profile_dir())],
    );
    assert_success(&out, "DESTDIR=... scripts/install.sh /usr/local");
    assert_installed(&stage.join("usr/local"));
    // Nothing outside DESTDIR/PREFIX.
    let top: Vec<_> = std::fs::read_dir(&stage)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, ["usr"]);
}

/// Calling the script wrong: one line naming what is wrong, exit 2, and
/// nothing installed.
#[test]
fn install_refuses_a_missing_prefix_or_build_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("p");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let p = prefix.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--from", "/nonexistent/profile"], "no PREFIX given"),
        (
            &["--from", "/nonexistent/profile", p],
            "--from /nonexistent/profile: no such directory",
        ),
        (&["--from", empty.to_str().unwrap(), p], "no smtlab there"),
        (&["--frm", "x", p], "unknown option --frm"),
    ];
    for (args, needle) in cases {
        let out = install(args, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: `{err}` should say `{needle}`"
        );
        assert!(!prefix.exists(), "{args:?} installed something");
    }
}
