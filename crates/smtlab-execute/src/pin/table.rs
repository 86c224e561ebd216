//! The outcome as a plain-text table for stderr: one row per thread (the
//! started process's, and children's while there are few), then notes and
//! a warning naming every thread seen outside its pinning. Uses `outcome`.

use super::outcome::{PinOutcome, Source, ThreadRow};

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}

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
    use crate::pin::outcome::one_outside_one_skipped;

    #[test]
    fn names_the_threads_outside_their_pinning_and_the_skipped() {
        let o = one_outside_one_skipped();
        let t = render_table(&o);
        assert!(
            t.starts_with("smtlab pin: prog (pid 10) exited with code 0\n"),
            "{t}"
        );
        assert!(
            t.contains("warning: 1 thread last ran on a CPU outside its pinning: tid 11 (#0 w) pinned to 1, last ran on 0"),
            "{t}"
        );
        assert!(t.contains("0-1 (skip)"), "{t}");
        assert!(t.contains("0*"), "a /proc row is marked: {t}");
    }

    #[test]
    fn names_the_signal_that_killed_it() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(1000), "signal 1000");
    }
}
