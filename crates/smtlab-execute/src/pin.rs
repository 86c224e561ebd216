//! Run a program with its threads pinned one by one, in creation order, to a
//! list of CPUs (as `likwid-pin` does), and report where each thread ran.
//!
//! # How
//!
//! A small C library, [`PRELOAD_SO`] (source: `preload/pin_preload.c`, built
//! by `build.rs`, embedded in the binary and written out by
//! [`preload_library`]), is put in front of the program's `LD_PRELOAD`. It
//! wraps `pthread_create`: each new thread pins itself in a start trampoline,
//! before the program's own code runs (race-free, unlike
//! `pthread_setaffinity_np` after creation), and the main thread is pinned in
//! the library's constructor. smtlab also restricts the whole child to the
//! CPU set before `exec`, so programs the library cannot enter (statically
//! linked, setuid) are still confined to the set.
//!
//! # Interface of the library (environment variables)
//!
//! Read once per process image, in the library's constructor:
//!
//! * [`ENV_CPUS`] `SMTLAB_PIN_CPUS`: comma list of OS CPU indexes, in order
//!   (`1,0,3`; repeats allowed, at most [`MAX_LIST`] entries). The main
//!   thread goes to `cpus[0]`; the k-th created thread that is not skipped
//!   (k from 0) to `cpus[(k + 1) % len]` (round robin). Unset or empty: no
//!   pinning, only the report.
//! * [`ENV_SKIP`] `SMTLAB_PIN_SKIP`: hexadecimal mask (optional `0x`, at most
//!   64 bits). Bit i set: the i-th created thread (`pthread_create` calls
//!   counted from 0; the main thread is not counted) is not pinned to one CPU
//!   and gets the whole CPU list as its affinity (instead of inheriting its
//!   creator's single CPU); it does not use up a CPU of the round robin. As
//!   in likwid-pin, this is how runtime helper threads (Intel OpenMP's
//!   shepherd thread: `0x1`) are kept off the workers' CPUs.
//! * [`ENV_REPORT`] `SMTLAB_PIN_REPORT`: absolute path of a file the library
//!   appends to (`O_APPEND`, one `write` per line), TAB-separated:
//!   `S pid tid index pinned` when a thread starts (index -1: a process's
//!   main thread; pinned -1: not pinned to one CPU), and
//!   `E pid tid index pinned last comm` when it ends or, for threads still
//!   alive, at `exit()`. `last` is field 39 (`processor`) of
//!   `/proc/self/task/<tid>/stat`, -1 if unreadable. See [`parse_thread_log`].
//!
//! Children inherit `LD_PRELOAD` and these variables, as with likwid-pin:
//! every `exec`'d child pins its own main thread to `cpus[0]` and counts its
//! threads from 0 again; all processes append to the same report file (each
//! line carries the pid). A process that dies by a signal or `_exit` writes
//! no `E` lines; [`run`] then falls back to `/proc` (sampled while running,
//! and read once more after exit, before reaping, for the main thread).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};
use serde::Serialize;

use smtlab_sys as sys;
use smtlab_types::cpuset::CpuSet;

/// The LD_PRELOAD library, built from `preload/pin_preload.c`.
pub const PRELOAD_SO: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libsmtlab_pin.so"));

/// CPU list, in pinning order (see the module documentation).
pub const ENV_CPUS: &str = "SMTLAB_PIN_CPUS";
/// Hexadecimal skip mask.
pub const ENV_SKIP: &str = "SMTLAB_PIN_SKIP";
/// Path of the report file.
pub const ENV_REPORT: &str = "SMTLAB_PIN_REPORT";
/// Longest CPU list the library accepts.
pub const MAX_LIST: usize = 16384;
/// Created threads a skip mask can name.
pub const SKIP_BITS: u32 = 64;

/// How often `/proc/<pid>/task` is sampled while the program runs.
const SAMPLE_EVERY: Duration = Duration::from_millis(50);

// ---------------------------------------------------------------------------
// The library on disk
// ---------------------------------------------------------------------------

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn unique_suffix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A directory only we can write to, on a filesystem that allows executable
/// mappings, whose path can go in LD_PRELOAD (no `:` or space).
fn check_private_dir(dir: &Path) -> anyhow::Result<()> {
    let meta = fs::symlink_metadata(dir).with_context(|| format!("{}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    if meta.uid() != sys::euid() || meta.mode() & 0o022 != 0 {
        bail!(
            "{} is not a private directory (owner {}, mode {:o})",
            dir.display(),
            meta.uid(),
            meta.mode() & 0o7777
        );
    }
    if sys::is_noexec(dir).unwrap_or(false) {
        bail!("{} is on a noexec filesystem", dir.display());
    }
    let s = dir.to_string_lossy();
    if !dir.is_absolute() || s.contains(':') || s.contains(' ') {
        bail!("{} cannot be used in LD_PRELOAD", dir.display());
    }
    Ok(())
}

fn make_private_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    match fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(anyhow!(e).context(format!("creating {}", dir.display()))),
    }
    check_private_dir(dir)?;
    Ok(dir.to_path_buf())
}

/// Candidate directories, best first: `$XDG_RUNTIME_DIR`, a per-user
/// directory in the temp dir, the user's cache directory.
fn candidate_dirs() -> Vec<anyhow::Result<PathBuf>> {
    let mut out = Vec::new();
    if let Some(x) = std::env::var_os("XDG_RUNTIME_DIR").filter(|x| !x.is_empty()) {
        let x = PathBuf::from(x);
        out.push(check_private_dir(&x).map(|_| x));
    }
    out.push(make_private_dir(
        &std::env::temp_dir().join(format!("smtlab-{}", sys::euid())),
    ));
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    if let Some(c) = cache {
        out.push(make_private_dir(&c.join("smtlab")));
    }
    out
}

/// Write [`PRELOAD_SO`] into `dir` as `name` (temp file + rename), or reuse
/// an identical copy already there.
fn install_library(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    if let (Ok(meta), Ok(bytes)) = (fs::symlink_metadata(&path), fs::read(&path)) {
        if meta.is_file() && meta.uid() == sys::euid() && bytes == PRELOAD_SO {
            return Ok(path);
        }
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", unique_suffix()));
    let written = (|| -> io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(PRELOAD_SO)?;
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(anyhow!(e).context(format!("writing {}", path.display())));
    }
    Ok(path)
}

/// Write the embedded library to disk (so it is found however smtlab was
/// installed) and return its absolute path: `smtlab-pin-<hash>.so` in
/// `$XDG_RUNTIME_DIR`, else `<tmp>/smtlab-<uid>/`, else `~/.cache/smtlab/`
/// (the first that is private to this user and not mounted noexec). The name
/// carries a hash of the bytes; an identical file already there is reused.
pub fn preload_library() -> anyhow::Result<PathBuf> {
    let name = format!("smtlab-pin-{:016x}.so", fnv1a64(PRELOAD_SO));
    let mut why = Vec::new();
    for dir in candidate_dirs() {
        match dir.and_then(|d| install_library(&d, &name)) {
            Ok(p) => return Ok(p),
            Err(e) => why.push(format!("{e:#}")),
        }
    }
    bail!(
        "no directory to write the pin library to: {}",
        why.join("; ")
    )
}

/// `LD_PRELOAD` with `lib` first (so its `pthread_create` wins), keeping
/// whatever the user already preloads.
pub fn preload_value(lib: &Path, existing: Option<&OsStr>) -> OsString {
    let mut v = OsString::from(lib);
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        v.push(":");
        v.push(e);
    }
    v
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SkipMaskError {
    #[error("`{0}` is not a hexadecimal mask; expected e.g. 0x1")]
    NotHex(String),
    #[error("`{0}` has more than {SKIP_BITS} bits; only the first {SKIP_BITS} created threads can be skipped")]
    TooWide(String),
}

/// Parse a likwid-style skip mask: hexadecimal, with or without `0x`.
pub fn parse_skip_mask(text: &str) -> Result<u64, SkipMaskError> {
    let t = text.trim();
    let digits = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(SkipMaskError::NotHex(t.to_string()));
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 16 {
        return Err(SkipMaskError::TooWide(t.to_string()));
    }
    Ok(u64::from_str_radix(
        if significant.is_empty() {
            "0"
        } else {
            significant
        },
        16,
    )
    .expect("checked hex digits"))
}

/// What the library does with created thread number `index` (from 0): the
/// CPU it is pinned to, or `None` if the skip mask leaves it on the whole
/// list. A model of the C code, for planning and tests.
pub fn planned_cpu(cpus: &[u32], skip: u64, index: usize) -> Option<u32> {
    let skipped = |i: usize| i < SKIP_BITS as usize && (skip >> i) & 1 == 1;
    if cpus.is_empty() || skipped(index) {
        return None;
    }
    let k = (0..index).filter(|&i| !skipped(i)).count();
    Some(cpus[(k + 1) % cpus.len()])
}

/// Thread by thread (the library), or the whole process to the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PinMode {
    Threads,
    Process,
}

/// A program to run pinned.
#[derive(Debug, Clone)]
pub struct PinRequest {
    /// Program and arguments; must not be empty.
    pub command: Vec<OsString>,
    /// CPUs in pinning order; must not be empty.
    pub cpus: Vec<u32>,
    pub skip: u64,
    pub mode: PinMode,
}

// ---------------------------------------------------------------------------
// The report file and /proc
// ---------------------------------------------------------------------------

/// One line of the library's report file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadLogLine {
    Start {
        pid: i32,
        tid: i32,
        index: i64,
        pinned: Option<u32>,
    },
    End {
        pid: i32,
        tid: i32,
        index: i64,
        pinned: Option<u32>,
        last: Option<u32>,
        comm: String,
    },
}

fn opt_cpu(s: &str) -> Option<Option<u32>> {
    let v: i64 = s.parse().ok()?;
    Some(u32::try_from(v).ok())
}

/// Parse the report file; malformed lines (e.g. cut short by a crash) are
/// skipped.
pub fn parse_thread_log(text: &str) -> Vec<ThreadLogLine> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.splitn(7, '\t').collect();
        let parsed = match f.as_slice() {
            ["S", pid, tid, index, pinned] => (|| {
                Some(ThreadLogLine::Start {
                    pid: pid.parse().ok()?,
                    tid: tid.parse().ok()?,
                    index: index.parse().ok()?,
                    pinned: opt_cpu(pinned)?,
                })
            })(),
            ["E", pid, tid, index, pinned, last, comm] => (|| {
                Some(ThreadLogLine::End {
                    pid: pid.parse().ok()?,
                    tid: tid.parse().ok()?,
                    index: index.parse().ok()?,
                    pinned: opt_cpu(pinned)?,
                    last: opt_cpu(last)?,
                    comm: comm.to_string(),
                })
            })(),
            _ => None,
        };
        out.extend(parsed);
    }
    out
}

/// What `/proc/<pid>/task/<tid>/stat` says about a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    pub tid: i32,
    pub comm: String,
    /// `R`, `S`, `Z`, ...
    pub state: char,
    /// Field 39: the CPU it last ran on.
    pub processor: Option<u32>,
}

/// Parse a `stat` line; the name may contain spaces and parentheses, so it
/// is everything between the first `(` and the last `)`.
pub fn parse_stat(tid: i32, text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state), so field 39 is rest[36].
    let state = rest.first()?.chars().next()?;
    let processor = rest.get(36).and_then(|p| p.parse().ok());
    Some(TaskStat {
        tid,
        comm,
        state,
        processor,
    })
}

/// Every thread of process `pid` as `/proc` shows it now (empty if gone).
pub fn task_stats(pid: i32) -> Vec<TaskStat> {
    let dir = PathBuf::from(format!("/proc/{pid}/task"));
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<TaskStat> = entries
        .flatten()
        .filter_map(|e| {
            let tid: i32 = e.file_name().to_str()?.parse().ok()?;
            let text = fs::read_to_string(e.path().join("stat")).ok()?;
            parse_stat(tid, &text)
        })
        .collect();
    out.sort_by_key(|t| t.tid);
    out
}

/// A report file for one run, in a private directory; removed on drop.
struct ThreadLogFile(PathBuf);

impl ThreadLogFile {
    fn create(dir: &Path) -> anyhow::Result<Self> {
        let path = dir.join(format!("smtlab-pin-report-{}.txt", unique_suffix()));
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        Ok(ThreadLogFile(path))
    }
}

impl Drop for ThreadLogFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

/// Where a row's "last CPU" came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// Recorded by the library when the thread ended (or at exit()).
    Preload,
    /// The last `/proc` sample taken while the program ran.
    Sampled,
    /// `/proc` after the program exited, before it was reaped.
    AfterExit,
    /// Nothing known beyond the thread's start.
    None,
}

/// One thread of the program (or of a child it started).
#[derive(Debug, Clone, Serialize)]
pub struct ThreadRow {
    pub pid: i32,
    pub tid: i32,
    /// Creation index in its process: -1 the main thread, 0 the first
    /// created thread; `None` when the library did not see the thread.
    pub index: Option<i64>,
    pub name: String,
    /// The single CPU it was pinned to, if any.
    pub pinned: Option<u32>,
    /// True if the skip mask left it unpinned.
    pub skipped: bool,
    /// Where it was allowed to run: `{pinned}`, else the whole CPU set.
    pub allowed: CpuSet,
    pub last_cpu: Option<u32>,
    pub source: Source,
    /// `last_cpu` is within `allowed` (`None`: last CPU unknown).
    pub ok: Option<bool>,
}

/// Everything `smtlab pin` learned.
#[derive(Debug, Clone, Serialize)]
pub struct PinOutcome {
    pub command: Vec<String>,
    pub mode: PinMode,
    pub cpus: Vec<u32>,
    pub skip_mask: String,
    pub pid: i32,
    /// The program's exit code, or 128 + N if killed by signal N.
    pub exit_code: i32,
    pub signal: Option<i32>,
    /// The library ran in the process smtlab started.
    pub preload_loaded: bool,
    /// The started process's threads first, then any children's.
    pub threads: Vec<ThreadRow>,
    /// Threads whose last CPU is outside their pinning.
    pub mismatches: usize,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("command not found: {0}")]
    NotFound(String),
    #[error("cannot run {program}: {source}")]
    Spawn { program: String, source: io::Error },
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

/// Kills and reaps the child if we bail out early: never leave one behind.
struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run `req.command` pinned, wait for it (forwarding SIGINT/SIGTERM/SIGHUP/
/// SIGQUIT sent to smtlab), and report where its threads ran. The program's
/// stdin, stdout and stderr are smtlab's.
pub fn run(req: &PinRequest) -> Result<PinOutcome, PinError> {
    let program = req
        .command
        .first()
        .ok_or_else(|| anyhow!("no command to run"))?;
    if req.cpus.is_empty() {
        return Err(anyhow!("empty CPU list").into());
    }
    let set: CpuSet = req.cpus.iter().copied().collect();
    let lib = preload_library()?;
    let dir = lib.parent().expect("library path has a directory");
    let report = ThreadLogFile::create(dir)?;

    let mut cmd = Command::new(program);
    cmd.args(&req.command[1..]);
    cmd.env(
        "LD_PRELOAD",
        preload_value(&lib, std::env::var_os("LD_PRELOAD").as_deref()),
    );
    cmd.env(ENV_REPORT, &report.0);
    match req.mode {
        PinMode::Threads => {
            let list: Vec<String> = req.cpus.iter().map(|c| c.to_string()).collect();
            cmd.env(ENV_CPUS, list.join(","));
            cmd.env(ENV_SKIP, format!("{:#x}", req.skip));
            // As likwid-pin: one OpenMP thread per listed CPU unless set.
            if std::env::var_os("OMP_NUM_THREADS").is_none() {
                cmd.env("OMP_NUM_THREADS", req.cpus.len().to_string());
            }
        }
        PinMode::Process => {
            cmd.env_remove(ENV_CPUS);
            cmd.env_remove(ENV_SKIP);
        }
    }
    sys::configure_child(&mut cmd, Some(&set)).context("preparing the child")?;

    let forwarding = sys::SignalForwarding::install().context("installing signal handlers")?;
    let name = program.to_string_lossy().into_owned();
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(PinError::NotFound(name)),
        Err(e) => {
            return Err(PinError::Spawn {
                program: name,
                source: e,
            })
        }
    };
    let pid = child.id() as i32;
    let mut guard = ChildGuard(Some(child));
    forwarding.set_child(pid);

    let (stop, stopped) = mpsc::channel::<()>();
    let sampler = std::thread::spawn(move || {
        let mut seen: HashMap<i32, TaskStat> = HashMap::new();
        loop {
            for t in task_stats(pid) {
                seen.insert(t.tid, t);
            }
            match stopped.recv_timeout(SAMPLE_EVERY) {
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                _ => break,
            }
        }
        seen
    });

    let waited = sys::wait_exited_keep_zombie(pid);
    forwarding.clear_child();
    let _ = stop.send(());
    let sampled = sampler.join().unwrap_or_default();
    waited.context("waiting for the program")?;
    let after_exit = task_stats(pid);
    let status = guard
        .0
        .take()
        .expect("child present")
        .wait()
        .context("reaping the program")?;
    drop(forwarding);

    let text = fs::read_to_string(&report.0).unwrap_or_default();
    let lines = parse_thread_log(&text);
    let (exit_code, signal) = match (status.code(), status.signal()) {
        (Some(c), _) => (c, None),
        (None, Some(s)) => (128 + s, Some(s)),
        (None, None) => (1, None),
    };
    Ok(assemble(
        req,
        pid,
        exit_code,
        signal,
        &lines,
        &sampled,
        &after_exit,
    ))
}

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

/// Merge the library's records and the `/proc` observations into rows.
fn assemble(
    req: &PinRequest,
    pid: i32,
    exit_code: i32,
    signal: Option<i32>,
    lines: &[ThreadLogLine],
    sampled: &HashMap<i32, TaskStat>,
    after_exit: &[TaskStat],
) -> PinOutcome {
    let set: CpuSet = req.cpus.iter().copied().collect();
    let mut rows: Vec<ThreadRow> = Vec::new();
    let mut at: HashMap<(i32, i32), usize> = HashMap::new();
    let mut slot = |rows: &mut Vec<ThreadRow>, p: i32, t: i32| -> (usize, bool) {
        let mut new = false;
        let i = *at.entry((p, t)).or_insert_with(|| {
            new = true;
            rows.push(ThreadRow {
                pid: p,
                tid: t,
                index: None,
                name: String::new(),
                pinned: None,
                skipped: false,
                allowed: CpuSet::new(),
                last_cpu: None,
                source: Source::None,
                ok: None,
            });
            rows.len() - 1
        });
        (i, new)
    };
    for l in lines {
        match l {
            ThreadLogLine::Start {
                pid: p,
                tid,
                index,
                pinned,
            } => {
                let (i, _) = slot(&mut rows, *p, *tid);
                rows[i].index = Some(*index);
                rows[i].pinned = *pinned;
            }
            ThreadLogLine::End {
                pid: p,
                tid,
                index,
                pinned,
                last,
                comm,
            } => {
                let (i, _) = slot(&mut rows, *p, *tid);
                let r = &mut rows[i];
                r.index = Some(*index);
                r.pinned = *pinned;
                r.last_cpu = *last;
                r.name = comm.clone();
                r.source = if last.is_some() {
                    Source::Preload
                } else {
                    Source::None
                };
            }
        }
    }
    let preload_loaded = rows.iter().any(|r| r.pid == pid);

    // /proc fills in what the library could not record (killed, _exit,
    // static binaries): first the samples, then the zombie after exit.
    let mut from_proc = |t: &TaskStat, src: Source| {
        let (i, new) = slot(&mut rows, pid, t.tid);
        let r = &mut rows[i];
        if new && t.tid == pid {
            r.index = Some(-1);
        }
        if r.name.is_empty() || r.source != Source::Preload {
            r.name = t.comm.clone();
        }
        if r.source != Source::Preload && t.processor.is_some() {
            r.last_cpu = t.processor;
            r.source = src;
        }
    };
    let mut sampled: Vec<&TaskStat> = sampled.values().collect();
    sampled.sort_by_key(|t| t.tid);
    for t in sampled {
        from_proc(t, Source::Sampled);
    }
    for t in after_exit {
        from_proc(t, Source::AfterExit);
    }

    for r in &mut rows {
        r.skipped = req.mode == PinMode::Threads
            && r.pinned.is_none()
            && r.index
                .is_some_and(|i| i >= 0 && i < SKIP_BITS as i64 && (req.skip >> i) & 1 == 1);
        r.allowed = match r.pinned {
            Some(c) => [c].into_iter().collect(),
            None => set.clone(),
        };
        r.ok = r.last_cpu.map(|c| r.allowed.contains(c));
        if r.name.is_empty() {
            r.name = "?".into();
        }
    }
    // The started process first; within a process main, then by index.
    let first_seen: HashMap<i32, usize> = rows
        .iter()
        .enumerate()
        .rev()
        .map(|(i, r)| (r.pid, i))
        .collect();
    rows.sort_by_key(|r| {
        (
            r.pid != pid,
            first_seen[&r.pid],
            r.index.unwrap_or(i64::MAX),
            r.tid,
        )
    });

    let mut notes = Vec::new();
    if req.mode == PinMode::Threads && !preload_loaded {
        notes.push(format!(
            "the pin library was not loaded into {} (pid {pid}): statically linked or setuid \
             program, LD_PRELOAD removed, or a noexec library directory; its threads were not \
             pinned one by one, only confined to CPUs {} as a whole (as --process-only); \
             their CPUs below come from /proc",
            req.command[0].to_string_lossy(),
            set
        ));
    }
    if rows
        .iter()
        .any(|r| matches!(r.source, Source::Sampled | Source::AfterExit))
        && preload_loaded
    {
        notes.push(
            "rows marked * were not recorded at thread end (killed, _exit, or exec); their \
             last CPU is from /proc"
                .into(),
        );
    }
    let mismatches = rows.iter().filter(|r| r.ok == Some(false)).count();
    PinOutcome {
        command: req
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        mode: req.mode,
        cpus: req.cpus.clone(),
        skip_mask: format!("{:#x}", req.skip),
        pid,
        exit_code,
        signal,
        preload_loaded,
        threads: rows,
        mismatches,
        notes,
    }
}

// ---------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------

/// Rows shown before children's threads are summarised.
const MAX_ROWS: usize = 40;

fn thread_label(r: &ThreadRow) -> String {
    match r.index {
        Some(-1) => "main".into(),
        Some(i) => format!("#{i}"),
        None => "?".into(),
    }
}

fn pinned_label(r: &ThreadRow) -> String {
    match r.pinned {
        Some(c) => c.to_string(),
        None if r.skipped => format!("{} (skip)", r.allowed),
        None => r.allowed.to_string(),
    }
}

/// The report as a plain-text table, for stderr.
pub fn render_table(o: &PinOutcome) -> String {
    let mut s = String::new();
    let prog = o.command.first().map(String::as_str).unwrap_or("?");
    let how = match o.signal {
        Some(sig) => format!(
            "was killed by {} (exit code {})",
            signal_name(sig),
            o.exit_code
        ),
        None => format!("exited with code {}", o.exit_code),
    };
    s.push_str(&format!("smtlab pin: {prog} (pid {}) {how}\n", o.pid));

    let own = o.threads.iter().filter(|r| r.pid == o.pid).count();
    let show_all = o.threads.len() <= MAX_ROWS.max(own);
    let shown: Vec<&ThreadRow> = o
        .threads
        .iter()
        .filter(|r| show_all || r.pid == o.pid || r.ok == Some(false))
        .collect();
    let header = ["pid", "tid", "thread", "name", "pinned to", "last CPU"];
    let cells: Vec<[String; 6]> = shown
        .iter()
        .map(|r| {
            let mark =
                if matches!(r.source, Source::Sampled | Source::AfterExit) && o.preload_loaded {
                    "*"
                } else {
                    ""
                };
            let last = match (r.last_cpu, r.ok) {
                (Some(c), Some(false)) => format!("{c}{mark} !"),
                (Some(c), _) => format!("{c}{mark}"),
                (None, _) => "?".into(),
            };
            [
                r.pid.to_string(),
                r.tid.to_string(),
                thread_label(r),
                r.name.clone(),
                pinned_label(r),
                last,
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for c in &cells {
        for (w, x) in width.iter_mut().zip(c) {
            *w = (*w).max(x.chars().count());
        }
    }
    let fmt_row = |c: [&str; 6]| {
        format!(
            "  {:>w0$}  {:>w1$}  {:<w2$}  {:<w3$}  {:<w4$}  {}\n",
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5],
            w0 = width[0],
            w1 = width[1],
            w2 = width[2],
            w3 = width[3],
            w4 = width[4],
        )
    };
    s.push_str(&fmt_row(header));
    for c in &cells {
        s.push_str(&fmt_row([&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]]));
    }
    let hidden = o.threads.len() - shown.len();
    if hidden > 0 {
        let procs: std::collections::BTreeSet<i32> = o
            .threads
            .iter()
            .filter(|r| r.pid != o.pid)
            .map(|r| r.pid)
            .collect();
        s.push_str(&format!(
            "  ... and {hidden} more threads in {} child processes, none seen outside its \
             pinning (--report FILE lists them)\n",
            procs.len()
        ));
    }
    for n in &o.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    if o.mismatches > 0 {
        let list: Vec<String> = o
            .threads
            .iter()
            .filter(|r| r.ok == Some(false))
            .take(8)
            .map(|r| {
                format!(
                    "tid {} ({} {}) pinned to {}, last ran on {}",
                    r.tid,
                    thread_label(r),
                    r.name,
                    r.allowed,
                    r.last_cpu.map(|c| c.to_string()).unwrap_or_default()
                )
            })
            .collect();
        s.push_str(&format!(
            "warning: {} thread{} last ran on a CPU outside {} pinning: {}{}\n",
            o.mismatches,
            if o.mismatches == 1 { "" } else { "s" },
            if o.mismatches == 1 { "its" } else { "their" },
            list.join("; "),
            if o.mismatches > 8 { "; ..." } else { "" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_is_embedded_elf() {
        assert!(PRELOAD_SO.len() > 1000);
        assert_eq!(&PRELOAD_SO[..4], b"\x7fELF");
    }

    #[test]
    fn installs_once_and_reuses_identical_copy() {
        let d = tempfile::tempdir().unwrap();
        let a = install_library(d.path(), "x.so").unwrap();
        assert_eq!(fs::read(&a).unwrap(), PRELOAD_SO);
        let mtime = fs::metadata(&a).unwrap().modified().unwrap();
        let b = install_library(d.path(), "x.so").unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::metadata(&b).unwrap().modified().unwrap(), mtime);
        // A corrupted copy is replaced.
        fs::write(&a, b"junk").unwrap();
        install_library(d.path(), "x.so").unwrap();
        assert_eq!(fs::read(&a).unwrap(), PRELOAD_SO);
        // No temp files left behind.
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn preload_library_path_is_absolute_and_named_by_hash() {
        let p = preload_library().unwrap();
        assert!(p.is_absolute());
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("smtlab-pin-") && name.ends_with(".so"));
        assert_eq!(fs::read(&p).unwrap(), PRELOAD_SO);
    }

    #[test]
    fn preload_goes_first() {
        let v = preload_value(Path::new("/a/lib.so"), Some(OsStr::new("/b/x.so")));
        assert_eq!(v, "/a/lib.so:/b/x.so");
        assert_eq!(preload_value(Path::new("/a/lib.so"), None), "/a/lib.so");
    }

    #[test]
    fn skip_masks() {
        assert_eq!(parse_skip_mask("0x1"), Ok(1));
        assert_eq!(parse_skip_mask("0XfF"), Ok(255));
        assert_eq!(parse_skip_mask("3"), Ok(3));
        assert_eq!(parse_skip_mask("0x0000000000000000001"), Ok(1));
        assert_eq!(parse_skip_mask("0xffffffffffffffff"), Ok(u64::MAX));
        assert!(matches!(
            parse_skip_mask("0x1ffffffffffffffff"),
            Err(SkipMaskError::TooWide(_))
        ));
        assert!(matches!(
            parse_skip_mask("0x"),
            Err(SkipMaskError::NotHex(_))
        ));
        assert!(matches!(
            parse_skip_mask("zz"),
            Err(SkipMaskError::NotHex(_))
        ));
    }

    #[test]
    fn planned_cpus_round_robin_after_main_with_skips() {
        let cpus = [4, 5, 6];
        let plan: Vec<_> = (0..5).map(|i| planned_cpu(&cpus, 0, i)).collect();
        assert_eq!(plan, [Some(5), Some(6), Some(4), Some(5), Some(6)]);
        // Skipped threads do not use up a CPU.
        let plan: Vec<_> = (0..4).map(|i| planned_cpu(&cpus, 0b101, i)).collect();
        assert_eq!(plan, [None, Some(5), None, Some(6)]);
    }

    #[test]
    fn parses_report_lines() {
        let text = "S\t10\t10\t-1\t0\nS\t10\t11\t0\t-1\nE\t10\t11\t0\t-1\t1\tmy worker (x)\nE\t10\t10\t-1\t0\t0\tprog\nE\t10\tbroken\n";
        let l = parse_thread_log(text);
        assert_eq!(l.len(), 4);
        assert_eq!(
            l[1],
            ThreadLogLine::Start {
                pid: 10,
                tid: 11,
                index: 0,
                pinned: None
            }
        );
        assert_eq!(
            l[2],
            ThreadLogLine::End {
                pid: 10,
                tid: 11,
                index: 0,
                pinned: None,
                last: Some(1),
                comm: "my worker (x)".into()
            }
        );
    }

    #[test]
    fn parses_stat_with_odd_names() {
        let mut fields = vec!["S"; 37];
        fields[36] = "7"; // field 39
        let line = format!("123 (a) b (c)) {}\n", fields.join(" "));
        let t = parse_stat(123, &line).unwrap();
        assert_eq!(t.comm, "a) b (c)");
        assert_eq!(t.state, 'S');
        assert_eq!(t.processor, Some(7));
        let me = task_stats(std::process::id() as i32);
        assert!(!me.is_empty());
        assert!(me.iter().all(|t| t.processor.is_some()));
    }

    fn req(mode: PinMode, skip: u64) -> PinRequest {
        PinRequest {
            command: vec!["prog".into()],
            cpus: vec![0, 1],
            skip,
            mode,
        }
    }

    #[test]
    fn assembles_rows_and_flags_mismatches() {
        let lines = parse_thread_log(
            "S\t10\t10\t-1\t0\nS\t10\t11\t0\t1\nS\t10\t12\t1\t-1\nE\t10\t11\t0\t1\t0\tw\nE\t10\t12\t1\t-1\t1\tw\n",
        );
        let after = vec![TaskStat {
            tid: 10,
            comm: "prog".into(),
            state: 'Z',
            processor: Some(0),
        }];
        let o = assemble(
            &req(PinMode::Threads, 0x2),
            10,
            0,
            None,
            &lines,
            &HashMap::new(),
            &after,
        );
        assert!(o.preload_loaded);
        let idx: Vec<_> = o.threads.iter().map(|r| r.index).collect();
        assert_eq!(idx, [Some(-1), Some(0), Some(1)]);
        assert_eq!(o.threads[0].source, Source::AfterExit);
        assert_eq!(o.threads[0].last_cpu, Some(0));
        assert_eq!(o.threads[1].ok, Some(false));
        assert!(o.threads[2].skipped);
        assert_eq!(o.threads[2].allowed.to_list(), "0-1");
        assert_eq!(o.mismatches, 1);
        let t = render_table(&o);
        assert!(
            t.contains("warning: 1 thread last ran on a CPU outside its pinning"),
            "{t}"
        );
        assert!(t.contains("0-1 (skip)"), "{t}");
    }

    #[test]
    fn without_the_library_says_so() {
        let mut sampled = HashMap::new();
        sampled.insert(
            11,
            TaskStat {
                tid: 11,
                comm: "static".into(),
                state: 'R',
                processor: Some(1),
            },
        );
        let o = assemble(&req(PinMode::Threads, 0), 10, 3, None, &[], &sampled, &[]);
        assert!(!o.preload_loaded);
        assert_eq!(o.threads.len(), 1);
        assert_eq!(o.threads[0].index, None);
        assert_eq!(o.threads[0].ok, Some(true));
        assert!(o.notes[0].contains("not loaded"));
    }
}
