//! Emulated SMT and NUMA machines for the tests: a scenario of named steps
//! run inside one guest that `scripts/guest` boots (QEMU through
//! virtme-ng, this machine's own filesystem, the release build of smtlab
//! first on PATH), and what each step printed, its exit status and time.
//!
//! One boot per scenario: booting takes 25-45 s under TCG, a step seconds
//! to minutes. Stores live on the guest's `/dev/shm` (SQLite's WAL fails
//! on the 9p root); reports and anything else the host must read go to
//! `$GUEST_OUT`, a host directory the guest writes ([`Guest::path`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// Packages x cores x threads per core, with NUMA nodes (the packages'
/// CPUs split evenly among them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub packages: u32,
    pub cores: u32,
    pub threads: u32,
    pub numa: u32,
}

impl Shape {
    /// (a) 1 package x 2 cores x 2 threads.
    pub const A: Shape = Shape::new(1, 2, 2, 1);
    /// (b) 2 packages x 2 cores x 2 threads, 2 NUMA nodes.
    pub const B: Shape = Shape::new(2, 2, 2, 2);
    /// (c) 1 package x 2 cores x 4 threads (SMT4, as on POWER).
    pub const C: Shape = Shape::new(1, 2, 4, 1);

    pub const fn new(packages: u32, cores: u32, threads: u32, numa: u32) -> Shape {
        Shape {
            packages,
            cores,
            threads,
            numa,
        }
    }

    pub fn pus(&self) -> u32 {
        self.packages * self.cores * self.threads
    }

    /// `2s2c2t-2n`, as the fixtures are named.
    pub fn label(&self) -> String {
        let mut s = format!("{}s{}c{}t", self.packages, self.cores, self.threads);
        if self.numa > 1 {
            s.push_str(&format!("-{}n", self.numa));
        }
        s
    }
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The target directory this test binary was built in
/// (`target/debug/deps/NAME-HASH`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors()
        .nth(3)
        .expect("test binary in target/<profile>/deps")
        .to_path_buf()
}

/// Whether a guest can run here; the reason when not. Builds the release
/// binary and libsmtalloc.so the guest runs (once per test binary; a no-op
/// when they are up to date).
pub fn available() -> Result<(), String> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    READY
        .get_or_init(|| {
            let check = Command::new(repo().join("scripts/guest"))
                .arg("--check")
                .env("CARGO_TARGET_DIR", target_dir())
                .output()
                .map_err(|e| format!("cannot run scripts/guest: {e}"))?;
            if !check.status.success() {
                return Err(String::from_utf8_lossy(&check.stdout).trim().to_string());
            }
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let built = Command::new(cargo)
                .args([
                    "build",
                    "--release",
                    "-q",
                    "-p",
                    "smtlab",
                    "-p",
                    "smtalloc-preload",
                ])
                .env("CARGO_TARGET_DIR", target_dir())
                .current_dir(repo())
                .status()
                .map_err(|e| format!("cannot run cargo: {e}"))?;
            // A build that fails is a failure of the tree, not a reason to
            // skip: it panics.
            assert!(built.success(), "cargo build --release failed: {built}");
            Ok(())
        })
        .clone()
}

/// One step's outcome.
#[derive(Debug, Clone)]
pub struct Step {
    pub out: String,
    pub err: String,
    /// Exit status (124: passed its time limit).
    pub status: i32,
    pub seconds: f64,
}

/// A scenario: shell lines run in order inside one guest, most of them
/// named steps with time limits.
pub struct Scenario {
    shape: Shape,
    host: Option<String>,
    lines: Vec<String>,
    budget: u32,
}

impl Scenario {
    pub fn new(shape: Shape) -> Scenario {
        Scenario {
            shape,
            host: None,
            lines: Vec::new(),
            budget: 0,
        }
    }

    /// The guest's host name (`hostname`, and so smtlab's `{host}`).
    pub fn host(mut self, name: &str) -> Scenario {
        self.host = Some(name.to_string());
        self
    }

    /// A named step: `cmd` is shell text, run by bash with its own time
    /// limit; what it printed is kept under `name`.
    pub fn step(&mut self, name: &str, limit_s: u32, cmd: &str) -> &mut Scenario {
        self.lines.push(format!(
            "guest_step {name} {limit_s} bash -c {}",
            shell_quote(cmd)
        ));
        self.budget += limit_s + 15;
        self
    }

    /// A line run as it is (set-up such as switching SMT off), not a step.
    pub fn line(&mut self, line: &str) -> &mut Scenario {
        self.lines.push(line.to_string());
        self
    }

    /// Boots the guest and runs the scenario; `None` (after saying why on
    /// stderr) when a guest cannot run here. Panics when the guest itself
    /// fails (did not boot, crashed, passed its time).
    pub fn run(&self, title: &str) -> Option<Guest> {
        if let Err(why) = available() {
            super::skip(&format!("no emulated guest here: {why}"));
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("smtlab-guest-test.")
            .tempdir()
            .unwrap();
        let script = dir.path().join("scenario.sh");
        let mut text = String::from("set -u\n");
        text.push_str(&format!(
            "source {}\n",
            shell_quote(&repo().join("scripts/guest-lib.sh").display().to_string())
        ));
        // Stores on tmpfs: WAL does not work on the 9p root.
        text.push_str("cd /dev/shm\n");
        for l in &self.lines {
            text.push_str(l);
            text.push('\n');
        }
        text.push_str("exit 0\n");
        std::fs::write(&script, text).unwrap();

        let s = self.shape;
        let mut cmd = Command::new(repo().join("scripts/guest"));
        cmd.args(["--packages", &s.packages.to_string()])
            .args(["--cores", &s.cores.to_string()])
            .args(["--threads", &s.threads.to_string()])
            .args(["--numa", &s.numa.to_string()])
            .args(["--timeout", &(self.budget + 60).to_string()])
            .arg("--out")
            .arg(dir.path())
            .env("CARGO_TARGET_DIR", target_dir())
            .current_dir(repo());
        if let Some(h) = &self.host {
            cmd.args(["--name", h]);
        }
        cmd.args(["--", "bash"]).arg(&script);
        let start = Instant::now();
        let out = cmd.output().expect("run scripts/guest");
        let seconds = start.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{title}: the guest failed ({})\n{stderr}",
            out.status
        );
        let accel = std::fs::read_to_string(dir.path().join(".guest/accel"))
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut steps = BTreeMap::new();
        let step_dir = dir.path().join("steps");
        for entry in std::fs::read_dir(&step_dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "status") {
                let name = path.file_stem().unwrap().to_string_lossy().to_string();
                if name == "main" {
                    continue;
                }
                let read = |ext: &str| {
                    std::fs::read_to_string(step_dir.join(format!("{name}.{ext}")))
                        .unwrap_or_default()
                };
                let step = Step {
                    out: read("out"),
                    err: read("err"),
                    status: read("status").trim().parse().unwrap_or(-1),
                    seconds: read("seconds").trim().parse().unwrap_or(f64::NAN),
                };
                steps.insert(name, step);
            }
        }
        let guest = Guest {
            dir,
            title: title.to_string(),
            shape: s,
            accel,
            seconds,
            steps,
            guest_stderr: stderr,
        };
        guest.print_timings();
        guest.keep();
        Some(guest)
    }
}

/// A finished scenario.
pub struct Guest {
    dir: tempfile::TempDir,
    title: String,
    pub shape: Shape,
    /// `tcg` or `kvm`.
    pub accel: String,
    /// The whole guest, boot included.
    pub seconds: f64,
    pub steps: BTreeMap<String, Step>,
    guest_stderr: String,
}

impl Guest {
    /// A step's outcome; panics naming the steps there are.
    #[track_caller]
    pub fn step(&self, name: &str) -> &Step {
        self.steps.get(name).unwrap_or_else(|| {
            panic!(
                "{}: no step {name} (steps: {:?}); the guest said:\n{}",
                self.title,
                self.steps.keys().collect::<Vec<_>>(),
                self.guest_stderr
            )
        })
    }

    /// A step that must have exited 0: its stdout.
    #[track_caller]
    pub fn ok(&self, name: &str) -> &str {
        self.exited(name, 0)
    }

    /// A step that must have exited `code`: its stdout.
    #[track_caller]
    pub fn exited(&self, name: &str, code: i32) -> &str {
        let s = self.step(name);
        assert_eq!(
            s.status, code,
            "{}: step {name} exited {} (expected {code})\nstdout:\n{}\nstderr:\n{}",
            self.title, s.status, s.out, s.err
        );
        &s.out
    }

    /// A file the guest wrote under `$GUEST_OUT`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// With `SMTLAB_GUEST_KEEP=DIR`, a copy of what the guest wrote (each
    /// step's output, the reports, the console) in `DIR/<title>`, for
    /// reading after the test (the temporary directory goes with it).
    fn keep(&self) {
        let Some(keep) = std::env::var_os("SMTLAB_GUEST_KEEP") else {
            return;
        };
        let slug: String = self
            .title
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let dest = Path::new(&keep).join(slug);
        let _ = std::fs::remove_dir_all(&dest);
        std::fs::create_dir_all(&dest).unwrap();
        let ok = Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", self.dir.path().display()))
            .arg(&dest)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "copying the guest's output to {}", dest.display());
    }

    /// One line on stderr with the guest's and each step's time.
    fn print_timings(&self) {
        let mut line = format!(
            "guest {} ({}, {}): {:.0} s in all;",
            self.title,
            self.shape.label(),
            self.accel,
            self.seconds
        );
        for (name, s) in &self.steps {
            line.push_str(&format!(" {name} {:.1} s (exit {}),", s.seconds, s.status));
        }
        line.pop();
        line.push('\n');
        // Straight to stderr: the harness hides a passing test's output,
        // and these times belong in CI's log.
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// `s` as one single-quoted shell word.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
