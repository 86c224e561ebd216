//! An HTML report in a real browser: headless Chromium loads the page and
//! dumps its DOM once the page's own script has checked that every chart
//! figure was laid out (`#render-check`). Shared by the report's own test
//! and the CLI's guest and web server tests (which include this file by
//! path), so that all judge a rendered page by the same rules and run the
//! browser the same way: in a process group of its own, with its home and
//! temporary files in the test's scratch directory, nothing of it left
//! when a run returns.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// Chromium on PATH, if installed.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// What the browser made of a page.
pub struct Rendered {
    /// The DOM after the page's scripts ran.
    pub dom: String,
    /// Console messages: any is a fault (the page logs nothing itself, so
    /// these are script errors and blocked fetches).
    pub console: Vec<String>,
    pub log: String,
}

/// Loads `html` in headless Chromium (`scratch`: an empty directory for
/// its profile and output) and returns the DOM it built.
pub fn render(browser: &Path, html: &Path, scratch: &Path) -> Rendered {
    render_url(browser, &format!("file://{}", html.display()), scratch)
}

/// [`render`] of any URL (a page a server serves, say).
pub fn render_url(browser: &Path, url: &str, scratch: &Path) -> Rendered {
    let (out, err) = (scratch.join("dom.html"), scratch.join("stderr.txt"));
    let mut cmd = headless(browser, scratch);
    cmd.arg("--dump-dom").arg(url);
    let ok = run_with_limit(cmd, scratch, &out, &err, Duration::from_secs(60));
    let dom = std::fs::read_to_string(&out).unwrap();
    let log = std::fs::read_to_string(&err).unwrap();
    assert!(ok, "chromium failed on {url}:\n{log}");
    let console = log
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    Rendered { dom, console, log }
}

/// A screenshot of `url` in a `width` x `height` window, as PNG bytes.
pub fn screenshot(browser: &Path, url: &str, scratch: &Path, width: u32, height: u32) -> Vec<u8> {
    let (png, out, err) = (
        scratch.join("shot.png"),
        scratch.join("shot-stdout.txt"),
        scratch.join("shot-stderr.txt"),
    );
    let mut cmd = headless(browser, scratch);
    cmd.arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={width},{height}"))
        .args(["--hide-scrollbars", "--force-device-scale-factor=1"])
        .arg(url);
    let ok = run_with_limit(cmd, scratch, &out, &err, Duration::from_secs(60));
    let log = std::fs::read_to_string(&err).unwrap();
    assert!(ok, "chromium failed on {url}:\n{log}");
    std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot of {url}: {e}\n{log}"))
}

/// Headless Chromium with its profile in `scratch`, quiet on the network.
/// Its home and temporary directory are in `scratch` too: it writes its
/// crash database, a dconf cache and a Downloads directory there rather
/// than into the user's home, and its singleton socket's directory, which
/// a killed browser cannot remove, not into /tmp; and its crash handlers
/// (which leave its process group) carry the path on their command line,
/// which is how [`left_behind`] knows them.
fn headless(browser: &Path, scratch: &Path) -> Command {
    let mut cmd = Command::new(browser);
    let (home, tmp) = (scratch.join("home"), scratch.join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    cmd.env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"));
    cmd.args([
        "--headless=new",
        "--disable-gpu",
        "--no-sandbox",
        "--no-first-run",
        // This machine's network is closed: Chromium's own background
        // connections would only fill the log.
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=1000",
    ])
    .arg(format!(
        "--user-data-dir={}",
        scratch.join("profile").display()
    ));
    cmd
}

impl Rendered {
    /// Insists that the page loaded without a console message and laid out
    /// every one of `figures` (ids `fig-NAME`), and no other figure.
    #[track_caller]
    pub fn assert_figures_drawn(&self, figures: &[String]) {
        assert!(
            self.console.is_empty(),
            "console messages:\n{}",
            self.console.join("\n")
        );
        let n = figures.len();
        assert!(
            self.dom.contains(&format!("data-figures=\"{n}\""))
                && self.dom.contains(&format!("data-drawn=\"{n}\"")),
            "not all {n} charts were laid out: {}",
            self.dom
                .lines()
                .find(|l| l.contains("render-check"))
                .unwrap_or("no render-check")
        );
        for id in figures {
            assert!(
                self.dom.contains(&format!("id=\"{id}\"")),
                "{id} not in the DOM"
            );
        }
    }
}

/// The figure ids (`fig-NAME`) of a report's SVG charts in `dir/charts`.
pub fn figures_in(dir: &Path) -> Vec<String> {
    let mut figs: Vec<String> = std::fs::read_dir(dir.join("charts"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "svg"))
                .map(|p| format!("fig-{}", p.file_stem().unwrap().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    figs.sort();
    figs
}

/// Run `cmd` with stdout and stderr to files (a dumped DOM is larger than
/// a pipe's buffer), killing it after `limit`. Chromium forks a zygote,
/// renderers and utility processes: it runs in a process group of its own,
/// and whatever happens (a success, a timeout, a panic here) the whole
/// group is killed, and this returns only once nothing of it is left
/// (the crash handlers, in sessions of their own, end with the browser).
pub fn run_with_limit(
    mut cmd: Command,
    scratch: &Path,
    out: &Path,
    err: &Path,
    limit: Duration,
) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(std::fs::File::create(err).unwrap())
        .process_group(0);
    let mut browser = Browser {
        leader: Some(cmd.spawn().expect("start chromium")),
        scratch: scratch.to_path_buf(),
    };
    let start = Instant::now();
    let success = loop {
        if let Some(success) = browser.exited() {
            break success;
        }
        if start.elapsed() > limit {
            let left = browser.end();
            panic!("chromium did not finish within {limit:?} (left behind: {left:?})");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let left = browser.end();
    assert!(left.is_empty(), "chromium left processes behind: {left:?}");
    success
}

/// Chromium as started: the leader of its own process group.
struct Browser {
    leader: Option<Child>,
    scratch: PathBuf,
}

impl Browser {
    /// Whether the leader exited, and with success; left unreaped
    /// (`WNOWAIT`), so that the group's id stays ours until [`Browser::end`]
    /// has killed the group.
    fn exited(&self) -> Option<bool> {
        let leader = self.leader.as_ref().expect("chromium running");
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(Pid::from_raw(leader.id() as i32)), flags).expect("waitid on chromium")
        {
            WaitStatus::StillAlive => None,
            WaitStatus::Exited(_, code) => Some(code == 0),
            _ => Some(false),
        }
    }

    /// Kill the whole group, reap the leader, and wait (5 s at most) until
    /// nothing of it is left; returns what still is.
    fn end(&mut self) -> Vec<String> {
        let Some(mut leader) = self.leader.take() else {
            return Vec::new();
        };
        let group = Pid::from_raw(leader.id() as i32);
        // ESRCH: nothing of the group is left.
        let _ = killpg(group, Signal::SIGKILL);
        let _ = leader.wait();
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let left = left_behind(group, &self.scratch);
            if left.is_empty() || Instant::now() > until {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.end();
    }
}

/// The live processes (`pid comm`) of process group `group`, or with
/// `scratch` on their command line, from /proc. Zombies are not counted:
/// the killed processes' new parent reaps them, not this process.
fn left_behind(group: Pid, scratch: &Path) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // With the separator: another test's directory may begin with ours.
    let scratch = [scratch.as_os_str().as_encoded_bytes(), b"/"].concat();
    dir.flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // pid (comm) state ppid pgrp ...: comm may hold spaces and
            // parentheses, so the fields after the last ')'.
            let (head, rest) = stat.rsplit_once(')')?;
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let pgrp: i32 = fields.nth(1)?.parse().ok()?;
            let ours = pgrp == group.as_raw()
                || std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.windows(scratch.len()).any(|w| w == scratch.as_slice()));
            (ours && state != "Z").then(|| head.replace(" (", " "))
        })
        .collect()
}
