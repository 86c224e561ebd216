//! SIGKILL of `smtlab run` at any moment leaves nothing behind (issue 29,
//! item 5 and its acceptance): for `-w web`, `-w chat`, `-w nginx` and
//! `-w ngircd`, smtlab is killed once while its server is up and then at
//! seeded random moments of a short run; within a bounded wait no process
//! it started is alive (nginx's workers and ngircd, which PDEATHSIG does
//! not reach, included) and its temporary directory is empty.
//!
//! Each kill runs smtlab with its own `TMPDIR` and working directory in a
//! fresh directory, and a mark in its environment, so that what it made is
//! found exactly: a process is smtlab's when its working directory, its
//! command line, an open file or its environment is in that directory or
//! carries that mark (nginx rewrites its workers' environment, not their
//! working directory). Zombies are dead: on a machine whose init does not
//! reap orphans they stay, holding nothing.
//!
//! The seed is printed; `SMTLAB_KILL_SEED=N` repeats a run's moments.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Random kills per workload, after the one while its server is up.
const RANDOM_KILLS: usize = 2;
/// How long what smtlab started may take to go once it was killed (the
/// watchdog's own limits are 2 s to see groups end, 2 s to remove).
const GONE_LIMIT: Duration = Duration::from_secs(10);

fn exe() -> PathBuf {
    assert_cmd::cargo::cargo_bin("smtlab")
}

struct Case {
    workload: &'static str,
    args: &'static [&'static str],
    /// Present when the server is up: a process of the run with this in
    /// its command line.
    server_up: &'static str,
    /// The reference program it needs, if any.
    needs: Option<(&'static str, &'static [&'static str])>,
}

const WEB_ARGS: &[&str] = &["--param", "files=5MB", "--duration", "300ms"];
const CHAT_ARGS: &[&str] = &[
    "--param",
    "connections=20",
    "--param",
    "room=10",
    "--param",
    "messages=50",
];

fn cases() -> Vec<Case> {
    vec![
        Case {
            workload: "web",
            args: WEB_ARGS,
            server_up: "serve web",
            needs: None,
        },
        Case {
            workload: "nginx",
            args: WEB_ARGS,
            server_up: "nginx: worker process",
            needs: Some(("nginx", &["/usr/sbin/nginx", "/usr/local/sbin/nginx"])),
        },
        Case {
            workload: "chat",
            args: CHAT_ARGS,
            server_up: "serve chat",
            needs: None,
        },
        Case {
            workload: "ngircd",
            args: CHAT_ARGS,
            server_up: "ngircd --nodaemon",
            needs: Some(("ngircd", &["/usr/sbin/ngircd"])),
        },
    ]
}

/// One kill's own directory: `TMPDIR`, the working directory and the
/// store inside it.
struct Fresh {
    dir: tempfile::TempDir,
    mark: String,
}

impl Fresh {
    fn new(tag: &str) -> Fresh {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        std::fs::create_dir(dir.path().join("cwd")).unwrap();
        let mark = format!(
            "kill-{tag}-{}-{}",
            std::process::id(),
            dir.path().file_name().unwrap().to_string_lossy()
        );
        Fresh { dir, mark }
    }

    fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    fn start(&self, case: &Case, cache: &Path) -> Child {
        let model = match case.workload {
            "web" => "thread",
            _ => "event",
        };
        let db = self.dir.path().join("k.db");
        Command::new(exe())
            .args([
                "run",
                "-w",
                case.workload,
                "--model",
                model,
                "--threads",
                "1",
            ])
            .args(case.args)
            .args(["--warmup", "0", "--min-samples", "2", "--max-samples", "2"])
            .arg("--db")
            .arg(&db)
            .current_dir(self.dir.path().join("cwd"))
            .env("TMPDIR", self.tmp())
            .env("XDG_CACHE_HOME", cache)
            .env("SMTLAB_TEST_MARK", &self.mark)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Live processes of this kill's run, with their command lines.
    fn ours(&self) -> Vec<(u32, String)> {
        let root = self.dir.path().to_path_buf();
        let me = std::process::id();
        let needle = format!("SMTLAB_TEST_MARK={}", self.mark);
        let mut found = Vec::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return found;
        };
        for e in procs.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if pid == me || !alive(pid) {
                continue;
            }
            let p = PathBuf::from(format!("/proc/{pid}"));
            let cmdline = std::fs::read(p.join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            let in_root = |l: std::io::Result<PathBuf>| l.is_ok_and(|l| l.starts_with(&root));
            let by_cwd = in_root(std::fs::read_link(p.join("cwd")));
            let by_cmdline = cmdline.contains(&*root.to_string_lossy());
            let by_env = std::fs::read(p.join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()));
            let by_fd = std::fs::read_dir(p.join("fd"))
                .map(|fds| {
                    fds.flatten()
                        .any(|fd| in_root(std::fs::read_link(fd.path())))
                })
                .unwrap_or(false);
            if by_cwd || by_cmdline || by_env || by_fd {
                found.push((pid, cmdline));
            }
        }
        found
    }

    /// What is left in `TMPDIR` and the working directory.
    fn stray_files(&self) -> Vec<PathBuf> {
        ["tmp", "cwd"]
            .iter()
            .flat_map(|d| std::fs::read_dir(self.dir.path().join(d)).unwrap())
            .map(|e| e.unwrap().path())
            .collect()
    }
}

/// Not a zombie (nor gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit(')').next().unwrap_or("").trim_start();
        !(state.starts_with('Z') || state.starts_with('X'))
    })
}

/// Kill what a failed check found, so the machine is left clean anyway.
fn kill_all(found: &[(u32, String)]) {
    for (pid, _) in found {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Wait (bounded) for everything of the run to go, then check that
/// nothing is left; `when` says which moment, for the message.
fn nothing_left(fresh: &Fresh, when: &str) {
    let until = Instant::now() + GONE_LIMIT;
    let mut left = fresh.ours();
    while !left.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        left = fresh.ours();
    }
    kill_all(&left);
    assert!(
        left.is_empty(),
        "{when}: {} s later these processes of the run are alive: {left:?}",
        GONE_LIMIT.as_secs()
    );
    let stray = fresh.stray_files();
    assert!(stray.is_empty(), "{when}: left behind: {stray:?}");
}

/// Kill `child` now, then check that nothing of its run is left.
fn kill_and_check(fresh: &Fresh, mut child: Child, when: &str) {
    let _ = child.kill();
    let _ = child.wait();
    nothing_left(fresh, &format!("{when}, SIGKILL"));
}

#[test]
fn sigkill_at_any_moment_leaves_no_process_and_no_temporary_file() {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    if n < 2 {
        support::skip(&format!(
            "server and load generator need 2 CPUs, this machine gives {n}"
        ));
        return;
    }
    let seed: u64 = std::env::var("SMTLAB_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    // Straight to stderr, like a skip: the harness hides a passing test's
    // `eprintln!`.
    let _ = std::io::stderr().write_all(
        format!("cli_kill: kill moments from seed {seed} (SMTLAB_KILL_SEED={seed} repeats them)\n")
            .as_bytes(),
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // The file set, written once by the first run, shared by every run.
    let cache = tempfile::tempdir().unwrap();
    for case in cases() {
        if let Some((tool, paths)) = case.needs {
            if !paths.iter().any(|p| Path::new(p).is_file()) {
                support::skip(&format!(
                    "{tool} is not installed (scripts/setup.sh installs it): -w {} not killed",
                    case.workload
                ));
                continue;
            }
        }
        // A whole run: how long one takes, and that it too leaves nothing.
        let fresh = Fresh::new(case.workload);
        let t = Instant::now();
        let status = fresh.start(&case, cache.path()).wait().unwrap();
        let whole = t.elapsed();
        assert!(status.success(), "-w {}: {status}", case.workload);
        // The watchdog ends once smtlab has: within the same bound.
        nothing_left(&fresh, &format!("-w {} after its end", case.workload));

        // While its server is up: the moment the issue was found at.
        let fresh = Fresh::new(case.workload);
        let child = fresh.start(&case, cache.path());
        let until = Instant::now() + Duration::from_secs(30);
        while !fresh
            .ours()
            .iter()
            .any(|(_, cmd)| cmd.contains(case.server_up))
        {
            assert!(
                Instant::now() < until,
                "-w {}: no `{}` within 30 s",
                case.workload,
                case.server_up
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        kill_and_check(
            &fresh,
            child,
            &format!("-w {} with its server up", case.workload),
        );

        for _ in 0..RANDOM_KILLS {
            let at = whole.mul_f64(rng.random_range(0.0..1.0));
            let fresh = Fresh::new(case.workload);
            let child = fresh.start(&case, cache.path());
            std::thread::sleep(at);
            kill_and_check(
                &fresh,
                child,
                &format!(
                    "-w {} killed {:.3} s after its start (seed {seed})",
                    case.workload,
                    at.as_secs_f64()
                ),
            );
        }
    }
}
