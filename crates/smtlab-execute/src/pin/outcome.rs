//! What `smtlab pin` learned: one row per thread ([`ThreadRow`]), merged
//! from the library's records and the `/proc` observations by
//! [`assemble`], which also says which threads ran outside their pinning.
//! Uses `request` and `thread_log`.

use std::collections::HashMap;

use serde::Serialize;

use smtlab_types::cpuset::CpuSet;

use super::interface::SKIP_BITS;
use super::request::{PinMode, PinRequest};
use super::thread_log::{TaskStat, ThreadLogLine};

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

/// Merge the library's records and the `/proc` observations into rows.
pub(super) fn assemble(
    req: &PinRequest,
    pid: i32,
    exit_code: i32,
    signal: Option<i32>,
    lines: &[ThreadLogLine],
    sampled: &HashMap<i32, TaskStat>,
    after_exit: &[TaskStat],
) -> PinOutcome {
    let set: CpuSet = req.cpus.iter().copied().collect();
    let mut merged = Rows::default();
    merged.add_library(lines);
    let preload_loaded = merged.rows.iter().any(|r| r.pid == pid);

    // /proc fills in what the library could not record (killed, _exit,
    // static binaries): first the samples, then the zombie after exit.
    let mut sampled: Vec<&TaskStat> = sampled.values().collect();
    sampled.sort_by_key(|t| t.tid);
    for t in sampled {
        merged.add_proc(pid, t, Source::Sampled);
    }
    for t in after_exit {
        merged.add_proc(pid, t, Source::AfterExit);
    }
    let mut rows = merged.rows;
    judge_rows(&mut rows, req, &set);
    order_rows(&mut rows, pid);
    let notes = notes(req, &set, pid, preload_loaded, &rows);
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

/// The rows being merged: one per thread (pid, tid), in the order each
/// was first seen.
#[derive(Default)]
struct Rows {
    rows: Vec<ThreadRow>,
    at: HashMap<(i32, i32), usize>,
}

impl Rows {
    /// The index of thread `t` of process `p`'s row, and whether it was
    /// made now (empty: nothing known of it yet).
    fn slot(&mut self, p: i32, t: i32) -> (usize, bool) {
        let rows = &mut self.rows;
        let mut new = false;
        let i = *self.at.entry((p, t)).or_insert_with(|| {
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
    }

    /// The library's records: each thread's index and pinning at its
    /// start; at its end also its last CPU and name.
    fn add_library(&mut self, lines: &[ThreadLogLine]) {
        for l in lines {
            match l {
                ThreadLogLine::Start {
                    pid: p,
                    tid,
                    index,
                    pinned,
                } => {
                    let (i, _) = self.slot(*p, *tid);
                    self.rows[i].index = Some(*index);
                    self.rows[i].pinned = *pinned;
                }
                ThreadLogLine::End {
                    pid: p,
                    tid,
                    index,
                    pinned,
                    last,
                    comm,
                } => {
                    let (i, _) = self.slot(*p, *tid);
                    let r = &mut self.rows[i];
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
    }

    /// One `/proc` observation `t` of a thread of the started process
    /// `pid`: its name and last CPU where the library recorded none at its
    /// end (`src`: when it was seen).
    fn add_proc(&mut self, pid: i32, t: &TaskStat, src: Source) {
        let (i, new) = self.slot(pid, t.tid);
        let r = &mut self.rows[i];
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
    }
}

/// Each row's skipped flag (the skip mask left it unpinned), where it was
/// allowed to run, and whether its last CPU was there.
fn judge_rows(rows: &mut [ThreadRow], req: &PinRequest, set: &CpuSet) {
    for r in rows {
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
}

/// The started process (`pid`) first, then the others as first seen;
/// within a process main, then by index.
fn order_rows(rows: &mut [ThreadRow], pid: i32) {
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
}

/// What the table's reader must know: the library did not load (so the
/// threads were not pinned one by one), or rows come from `/proc`.
fn notes(
    req: &PinRequest,
    set: &CpuSet,
    pid: i32,
    preload_loaded: bool,
    rows: &[ThreadRow],
) -> Vec<String> {
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
    notes
}

/// For this module's tests and the table's: `prog` (pid 10) on CPUs 0-1,
/// skip mask 0x2; its main thread seen only in `/proc` after exit, thread
/// #0 pinned to 1 but last on 0, thread #1 skipped.
#[cfg(test)]
pub(super) fn one_outside_one_skipped() -> PinOutcome {
    let lines = super::thread_log::parse_thread_log(
        "S\t10\t10\t-1\t0\nS\t10\t11\t0\t1\nS\t10\t12\t1\t-1\nE\t10\t11\t0\t1\t0\tw\nE\t10\t12\t1\t-1\t1\tw\n",
    );
    let after = vec![TaskStat {
        tid: 10,
        comm: "prog".into(),
        state: 'Z',
        processor: Some(0),
    }];
    assemble(
        &req(PinMode::Threads, 0x2),
        10,
        0,
        None,
        &lines,
        &HashMap::new(),
        &after,
    )
}

/// A request to run `prog` on CPUs 0 and 1.
#[cfg(test)]
fn req(mode: PinMode, skip: u64) -> PinRequest {
    PinRequest {
        command: vec!["prog".into()],
        cpus: vec![0, 1],
        skip,
        mode,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assembles_rows_and_flags_mismatches() {
        let o = one_outside_one_skipped();
        assert!(o.preload_loaded);
        let idx: Vec<_> = o.threads.iter().map(|r| r.index).collect();
        assert_eq!(idx, [Some(-1), Some(0), Some(1)]);
        assert_eq!(o.threads[0].source, Source::AfterExit);
        assert_eq!(o.threads[0].last_cpu, Some(0));
        assert_eq!(o.threads[1].ok, Some(false));
        assert!(o.threads[2].skipped);
        assert_eq!(o.threads[2].allowed.to_list(), "0-1");
        assert_eq!(o.mismatches, 1);
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
