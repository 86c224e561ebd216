//! Memory of worker processes from `/proc`: RSS, PSS and transparent huge
//! pages (`/proc/PID/smaps_rollup`), peak RSS (`VmHWM` in
//! `/proc/PID/status`), and a [`PeakSampler`] that polls a set of processes
//! from a background thread for their peak total, because a user command's
//! memory is gone by the time it has exited.
//!
//! PSS (proportional set size) divides each shared page among the processes
//! mapping it, so PSS summed over N worker processes counts shared code and
//! libraries once — the fair comparison between the thread and process
//! models. RSS summed over processes would count them N times.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One process's memory, kB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUsage {
    pub rss_kb: u64,
    pub pss_kb: u64,
    /// Anonymous memory backed by transparent huge pages.
    pub anon_huge_kb: u64,
    /// Peak resident set over the process's life (`VmHWM`), if readable.
    pub hwm_kb: Option<u64>,
}

/// Sum of every `Field:  N kB` line with that field name. Summing makes the
/// same parser work on `smaps_rollup` (one line per field) and on `smaps`
/// (one line per mapping), the fallback on kernels older than 4.14.
pub fn parse_kb_field(text: &str, field: &str) -> Option<u64> {
    let mut total = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(field) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let number = rest.trim().trim_end_matches("kB").trim();
        if let Ok(v) = number.parse::<u64>() {
            total = Some(total.unwrap_or(0) + v);
        }
    }
    total
}

/// Parse `smaps_rollup` (or `smaps`) text; `None` if it has no `Rss`/`Pss`
/// (an exited process reads as empty).
pub fn parse_smaps_rollup(text: &str) -> Option<MemoryUsage> {
    Some(MemoryUsage {
        rss_kb: parse_kb_field(text, "Rss")?,
        pss_kb: parse_kb_field(text, "Pss")?,
        // Absent on kernels without THP support: none in use.
        anon_huge_kb: parse_kb_field(text, "AnonHugePages").unwrap_or(0),
        hwm_kb: None,
    })
}

/// The memory of process `pid` now. Reading another user's process needs
/// ptrace access; a zombie or exited process is an error (`NotFound` or
/// `InvalidData`), never zeros.
pub fn memory_of(pid: i32) -> io::Result<MemoryUsage> {
    let dir = format!("/proc/{pid}");
    let text = match fs::read_to_string(format!("{dir}/smaps_rollup")) {
        Err(e) if e.kind() == io::ErrorKind::NotFound && fs::metadata(&dir).is_ok() => {
            fs::read_to_string(format!("{dir}/smaps"))?
        }
        other => other?,
    };
    let mut m = parse_smaps_rollup(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{dir}/smaps_rollup has no Rss/Pss (process exited?)"),
        )
    })?;
    m.hwm_kb = fs::read_to_string(format!("{dir}/status"))
        .ok()
        .and_then(|s| parse_kb_field(&s, "VmHWM"));
    Ok(m)
}

/// The largest totals a [`PeakSampler`] saw. Each field is its own peak
/// (PSS and huge pages may peak at different moments); each total is the sum
/// over the processes at one sampling instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeakMemory {
    pub pss_kb: u64,
    pub rss_kb: u64,
    pub anon_huge_kb: u64,
    /// How many sampling instants read at least one process.
    pub samples: u64,
}

struct Shared {
    pids: Mutex<Vec<i32>>,
    peak: Mutex<PeakMemory>,
    stop: AtomicBool,
    descendants: bool,
}

impl Shared {
    fn sample(&self) {
        let roots = self.pids.lock().map(|p| p.clone()).unwrap_or_default();
        let pids = if self.descendants {
            with_descendants(&roots)
        } else {
            roots
        };
        let mut total = PeakMemory::default();
        let mut read_any = false;
        for pid in pids {
            // A process that exited between listing and reading just drops
            // out of this instant's sum.
            if let Ok(m) = memory_of(pid) {
                total.pss_kb += m.pss_kb;
                total.rss_kb += m.rss_kb;
                total.anon_huge_kb += m.anon_huge_kb;
                read_any = true;
            }
        }
        if !read_any {
            return;
        }
        if let Ok(mut p) = self.peak.lock() {
            p.pss_kb = p.pss_kb.max(total.pss_kb);
            p.rss_kb = p.rss_kb.max(total.rss_kb);
            p.anon_huge_kb = p.anon_huge_kb.max(total.anon_huge_kb);
            p.samples += 1;
        }
    }
}

/// `roots` and all their descendant processes, from one scan of
/// `/proc/*/stat` (the `children` files need CONFIG_PROC_CHILDREN).
fn with_descendants(roots: &[i32]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parse_ppid(&s))
            {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = Vec::new();
    let mut todo: Vec<i32> = roots.to_vec();
    while let Some(p) = todo.pop() {
        if out.contains(&p) {
            continue;
        }
        out.push(p);
        if let Some(c) = children.get(&p) {
            todo.extend(c);
        }
    }
    out
}

/// The parent pid from `/proc/PID/stat`; the command name may contain
/// spaces and parentheses, so parse after the last `)`.
fn parse_ppid(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Polls the memory of a set of processes every `interval` from a
/// background thread and keeps the peak totals. The first sample is taken
/// one interval after the start, so processes released just after
/// [`start`](Self::start) have exec'd their program by then; a program
/// shorter than one interval gets no sample (unknown, not zero) unless the
/// caller takes one with [`sample_now`](Self::sample_now). Reading
/// `smaps_rollup` walks the page tables, so keep the interval at tens of
/// milliseconds.
pub struct PeakSampler {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl PeakSampler {
    /// Start sampling `pids` every `interval`. With
    /// `descendants`, processes they start (a shell's commands) count too.
    pub fn start(pids: &[i32], interval: Duration, descendants: bool) -> PeakSampler {
        let shared = Arc::new(Shared {
            pids: Mutex::new(pids.to_vec()),
            peak: Mutex::new(PeakMemory::default()),
            stop: AtomicBool::new(false),
            descendants,
        });
        let s = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("smtlab-mem".to_string())
            .spawn(move || {
                // The first sample waits one interval: a caller that starts
                // the sampler just before releasing children blocked before
                // their exec would otherwise measure smtlab's forked image.
                let mut next = Instant::now() + interval;
                while !s.stop.load(Ordering::Acquire) {
                    let now = Instant::now();
                    if now < next {
                        // Woken early by stop(), or spuriously: re-check.
                        std::thread::park_timeout(next - now);
                        continue;
                    }
                    s.sample();
                    next = Instant::now() + interval;
                }
            })
            .ok();
        PeakSampler { shared, handle }
    }

    /// Also sample `pid` from now on.
    pub fn add_pid(&self, pid: i32) {
        if let Ok(mut p) = self.shared.pids.lock() {
            if !p.contains(&pid) {
                p.push(pid);
            }
        }
    }

    /// Take one sample now, on the calling thread (e.g. just before the
    /// workers are told to exit, when their memory is at its largest).
    pub fn sample_now(&self) {
        self.shared.sample();
    }

    /// The peaks so far; `None` if no sample read any process.
    pub fn peak(&self) -> Option<PeakMemory> {
        let p = *self.shared.peak.lock().ok()?;
        (p.samples > 0).then_some(p)
    }

    /// Stop the thread and return the peaks; `None` if no sample read any
    /// process (a program shorter than the interval): unknown, not zero.
    pub fn stop(mut self) -> Option<PeakMemory> {
        self.halt();
        self.peak()
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

impl Drop for PeakSampler {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLLUP: &str = "\
55849ffe3000-7fff2adc9000 ---p 00000000 00:00 0                          [rollup]
Rss:                1692 kB
Pss:                 322 kB
Pss_Dirty:           116 kB
Pss_Anon:            116 kB
Pss_File:            206 kB
Shared_Clean:       1532 kB
Private_Dirty:       116 kB
Anonymous:           116 kB
AnonHugePages:      4096 kB
ShmemPmdMapped:        0 kB
Swap:                  0 kB
SwapPss:               0 kB
Locked:                0 kB
";

    #[test]
    fn measure_memory_parse_rollup() {
        let m = parse_smaps_rollup(ROLLUP).unwrap();
        assert_eq!(m.rss_kb, 1692);
        // Pss_Dirty/Pss_Anon/SwapPss are other fields, not Pss.
        assert_eq!(m.pss_kb, 322);
        assert_eq!(m.anon_huge_kb, 4096);
        assert_eq!(parse_smaps_rollup(""), None);
    }

    #[test]
    fn measure_memory_parse_smaps_sums_mappings() {
        let smaps = "\
00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/x
Rss:                 100 kB
Pss:                  50 kB
AnonHugePages:         0 kB
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Rss:                2048 kB
Pss:                2048 kB
AnonHugePages:      2048 kB
";
        let m = parse_smaps_rollup(smaps).unwrap();
        assert_eq!((m.rss_kb, m.pss_kb, m.anon_huge_kb), (2148, 2098, 2048));
    }

    #[test]
    fn measure_memory_parse_status_and_stat() {
        let status = "Name:\tcat\nVmPeak:\t   8000 kB\nVmHWM:\t    1200 kB\nVmRSS:\t 1100 kB\n";
        assert_eq!(parse_kb_field(status, "VmHWM"), Some(1200));
        assert_eq!(parse_ppid("42 (a) b) c) S 17 42 42 0"), Some(17));
    }

    #[test]
    fn measure_memory_of_self() {
        let buf = vec![1u8; 8 << 20];
        std::hint::black_box(&buf);
        let m = memory_of(std::process::id() as i32).unwrap();
        assert!(m.rss_kb >= 8 * 1024, "{m:?}");
        assert!(m.pss_kb > 0 && m.pss_kb <= m.rss_kb, "{m:?}");
        assert!(m.hwm_kb.unwrap() >= m.rss_kb / 2, "{m:?}");
        assert!(memory_of(i32::MAX).is_err());
    }

    #[test]
    fn measure_memory_peak_sampler_keeps_peak_of_exited_child() {
        // A child that holds ~32 MB for a while, then exits.
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "x=$(head -c 33554432 /dev/zero | tr '\\0' a); sleep 0.3",
            ])
            .spawn()
            .unwrap();
        let sampler = PeakSampler::start(&[child.id() as i32], Duration::from_millis(20), true);
        child.wait().unwrap();
        let peak = sampler.stop().expect("at least one sample");
        assert!(peak.samples >= 2, "{peak:?}");
        // The shell's variable alone is 32 MB.
        assert!(peak.pss_kb >= 30 * 1024, "{peak:?}");
        assert!(peak.rss_kb >= peak.pss_kb, "{peak:?}");
    }

    #[test]
    fn measure_memory_peak_sampler_unknown_is_none() {
        let s = PeakSampler::start(&[i32::MAX], Duration::from_millis(5), false);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(s.stop(), None);
    }
}
