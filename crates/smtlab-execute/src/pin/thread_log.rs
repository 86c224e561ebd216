//! What the threads did, as the pin library and `/proc` tell it: the
//! library's report file ([`parse_thread_log`]), one run's copy of it
//! ([`ThreadLogFile`], removed when dropped) and `/proc/<pid>/task`
//! ([`task_stats`]). Uses `library` for a unique file name.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::library::unique_suffix;

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
pub(super) struct ThreadLogFile(pub(super) PathBuf);

impl ThreadLogFile {
    /// Create it empty, readable only by this user; the error names the
    /// path it could not create.
    pub(super) fn create(dir: &Path) -> Result<Self, (PathBuf, io::Error)> {
        let path = dir.join(format!("smtlab-pin-report-{}.txt", unique_suffix()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(_) => Ok(ThreadLogFile(path)),
            Err(e) => Err((path, e)),
        }
    }
}

impl Drop for ThreadLogFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn thread_log_file_is_private_and_removed_on_drop() {
        let d = tempfile::tempdir().unwrap();
        let f = ThreadLogFile::create(d.path()).unwrap();
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&f.0).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
        let path = f.0.clone();
        drop(f);
        assert!(!path.exists());
        let (p, _) = ThreadLogFile::create(&d.path().join("missing"))
            .err()
            .unwrap();
        assert!(p.starts_with(d.path().join("missing")));
    }
}
