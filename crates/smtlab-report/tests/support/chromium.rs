//! An HTML report in a real browser: headless Chromium loads the page and
//! dumps its DOM once the page's own script has checked that every chart
//! figure was laid out (`#render-check`). Shared by the report's own test
//! and the CLI's guest tests (which include this file by path), so that
//! both judge a rendered report by the same rules.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let ok = run_with_limit(cmd, &out, &err, Duration::from_secs(60));
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
    let ok = run_with_limit(cmd, &out, &err, Duration::from_secs(60));
    let log = std::fs::read_to_string(&err).unwrap();
    assert!(ok, "chromium failed on {url}:\n{log}");
    std::fs::read(&png).unwrap_or_else(|e| panic!("no screenshot of {url}: {e}\n{log}"))
}

/// Headless Chromium with its profile in `scratch`, quiet on the network.
fn headless(browser: &Path, scratch: &Path) -> Command {
    let mut cmd = Command::new(browser);
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
/// a pipe's buffer), killing it after `limit`.
fn run_with_limit(mut cmd: Command, out: &Path, err: &Path, limit: Duration) -> bool {
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(out).unwrap())
        .stderr(std::fs::File::create(err).unwrap());
    let mut child = cmd.spawn().expect("start chromium");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
