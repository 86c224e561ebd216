//! Who is measuring a run: the process that recorded it, or resumed it,
//! until it ends (the `run_owners` table of schema version 5). Two
//! processes measuring one run would take the same samples; the second
//! used to measure one and then fail on "point 11 already has sample 1".
//! Now a `--resume` claims the run first, in one IMMEDIATE transaction that
//! reads the owner and writes itself in its place only if the run has
//! none, or one that is gone: two resumers starting together are
//! serialized by SQLite's write lock, and the second finds the first.
//!
//! Whether an owner is gone is judged from here, from `/proc`: the same
//! machine since its boot (`boot_id`) and the same pid namespace make its
//! pid meaningful, and its start time (clock ticks after boot) tells it
//! from a later process that got the same pid. A host of the same name
//! with another boot id has restarted since (its processes are gone).
//! Another host's process cannot be seen: refused, naming it. Uses `host`,
//! `store` and `error`.

use std::fs;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::StoreError;
use crate::host::host_name;
use crate::store::Store;

/// A process, as it is recorded owning a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Its host's name as smtlab records it (`host_name`).
    pub host: Option<String>,
    pub boot_id: Option<String>,
    pub pid_ns: Option<String>,
    pub start_ticks: Option<u64>,
}

/// What can be said, from here, of a recorded owner.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Liveness {
    Alive,
    /// Gone, and why (for the caller who takes its run over).
    Gone,
    /// Another machine's, or another pid namespace's: cannot be seen.
    Unseen,
}

impl Owner {
    /// This process.
    pub fn this_process() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            // A name refused for `{host}` or the host facts has stopped the
            // command before; here it only names the owner.
            host: host_name().ok().flatten(),
            boot_id: fs::read_to_string("/proc/sys/kernel/random/boot_id")
                .ok()
                .map(|t| t.trim().to_string()),
            pid_ns: fs::read_link("/proc/self/ns/pid")
                .ok()
                .map(|p| p.to_string_lossy().into_owned()),
            start_ticks: start_ticks(pid),
        }
    }

    /// Whether `self` still runs, judged by `here` (this process).
    fn liveness(&self, here: &Owner) -> Liveness {
        let known = |a: &Option<String>, b: &Option<String>| a.is_some() && a == b;
        if known(&self.boot_id, &here.boot_id) && known(&self.pid_ns, &here.pid_ns) {
            return match (proc_state(self.pid), self.start_ticks) {
                // No such process, or a zombie: its parent has not reaped
                // it yet, but it has ended.
                (None, _) | (Some(('Z' | 'X', _)), _) => Liveness::Gone,
                // Another process with the same pid.
                (Some((_, now)), Some(then)) if now != Some(then) => Liveness::Gone,
                _ => Liveness::Alive,
            };
        }
        let restarted = self.host.is_some()
            && self.host == here.host
            && self.boot_id.is_some()
            && here.boot_id.is_some()
            && self.boot_id != here.boot_id;
        if restarted {
            Liveness::Gone
        } else {
            Liveness::Unseen
        }
    }

    /// `pid 1234 on host alpha`.
    fn describe(&self) -> String {
        match &self.host {
            Some(h) => format!("pid {} on host {h}", self.pid),
            None => format!("pid {} on a host of unknown name", self.pid),
        }
    }
}

/// `/proc/PID/stat`'s state letter and start time (field 22); `None` if
/// there is no such process.
fn proc_state(pid: u32) -> Option<(char, Option<u64>)> {
    let text = fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: the fields proper start after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 is the state; field 22 the start time.
    let start = fields.nth(22 - 4).and_then(|f| f.parse().ok());
    Some((state, start))
}

fn start_ticks(pid: u32) -> Option<u64> {
    proc_state(pid).and_then(|(_, s)| s)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `42 s`, `7 min`, `3 h`.
fn ago(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.0} h", s / 3600.0)
    }
}

impl Store {
    /// Record `owner` as measuring `run_id`, inside the caller's
    /// transaction (`create_run`): a new run has no owner yet.
    pub(crate) fn own_run(&self, run_id: i64, owner: &Owner) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO run_owners \
                 (run_id, pid, host, boot_id, pid_ns, start_ticks, since) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    run_id,
                    owner.pid,
                    owner.host,
                    owner.boot_id,
                    owner.pid_ns,
                    owner.start_ticks.map(|t| t as i64),
                    unix_now()
                ])
            })
            .map_err(|e| self.err(format!("recording who measures run {run_id}"), e))?;
        Ok(())
    }

    /// Let go of `run_id` (it ended): its owner row, if it is `owner`'s.
    pub(crate) fn release_run(&self, run_id: i64, owner: &Owner) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM run_owners WHERE run_id = ?1 AND pid = ?2")
            .and_then(|mut st| st.execute(params![run_id, owner.pid]))
            .map_err(|e| self.err(format!("recording that run {run_id} ended"), e))?;
        Ok(())
    }

    /// Resume `run_id` in this process: claim it and mark it `running`
    /// again, in one transaction. Refused ([`StoreError::RunOwned`]) while
    /// another process measures it, or ([`StoreError::RunComplete`]) once
    /// it is complete; a gone owner's run is taken over.
    pub fn resume_run(&self, run_id: i64) -> Result<(), StoreError> {
        self.claim_run(run_id, &Owner::this_process())
    }

    pub(crate) fn claim_run(&self, run_id: i64, me: &Owner) -> Result<(), StoreError> {
        let err = |e| self.err(format!("claiming run {run_id}"), e);
        // IMMEDIATE: the write lock before the owner is read, so that of two
        // resumers the second reads what the first wrote.
        let tx =
            Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate).map_err(err)?;
        let status: Option<String> = tx
            .query_row("SELECT status FROM runs WHERE id = ?1", [run_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(err)?;
        match status.as_deref() {
            None => return Err(self.no_run(run_id)),
            Some("complete") => {
                return Err(StoreError::RunComplete {
                    path: self.path.clone(),
                    run_id,
                })
            }
            Some(_) => {}
        }
        type Row = (
            u32,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            f64,
        );
        let row: Option<Row> = tx
            .query_row(
                "SELECT pid, host, boot_id, pid_ns, start_ticks, since FROM run_owners \
                 WHERE run_id = ?1",
                [run_id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .optional()
            .map_err(err)?;
        if let Some((pid, host, boot_id, pid_ns, start, since)) = row {
            let owner = Owner {
                pid,
                host,
                boot_id,
                pid_ns,
                start_ticks: start.map(|t| t as u64),
            };
            let why = match owner.liveness(me) {
                // Its own claim, again.
                _ if owner == *me => None,
                Liveness::Gone => None,
                Liveness::Alive => Some(
                    "wait for it to end, or stop it (Ctrl-C keeps every sample) and resume \
                     again",
                ),
                Liveness::Unseen => Some(
                    "whether it still runs cannot be seen from here: resume it there once it \
                     has ended",
                ),
            };
            if let Some(why) = why {
                return Err(StoreError::RunOwned {
                    path: self.path.clone(),
                    run_id,
                    owner: format!(
                        "{} (it began {} ago)",
                        owner.describe(),
                        ago(unix_now() - since)
                    ),
                    why: why.into(),
                });
            }
        }
        self.own_run(run_id, me)?;
        tx.execute(
            "UPDATE runs SET status = 'running', finished_at = NULL WHERE id = ?1",
            [run_id],
        )
        .map_err(err)?;
        tx.commit().map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Owner {
        Owner::this_process()
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_gone() {
        let here = me();
        assert!(here.start_ticks.is_some(), "{here:?}");
        assert_eq!(here.liveness(&here), Liveness::Alive);

        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let alive = Owner {
            pid,
            start_ticks: start_ticks(pid),
            ..here.clone()
        };
        child.wait().unwrap();
        assert_eq!(alive.liveness(&here), Liveness::Gone);

        // This pid, but another start: a process that had it before.
        let earlier = Owner {
            start_ticks: here.start_ticks.map(|t| t.saturating_sub(1)),
            ..here.clone()
        };
        assert_eq!(earlier.liveness(&here), Liveness::Gone);
    }

    #[test]
    fn another_hosts_process_cannot_be_seen_unless_that_host_restarted() {
        let here = Owner {
            pid: 10,
            host: Some("alpha".into()),
            boot_id: Some("boot-1".into()),
            pid_ns: Some("pid:[1]".into()),
            start_ticks: Some(5),
        };
        let beta = Owner {
            host: Some("beta".into()),
            boot_id: Some("boot-2".into()),
            ..here.clone()
        };
        assert_eq!(beta.liveness(&here), Liveness::Unseen);
        // Another container on this machine: its pids are not ours.
        let container = Owner {
            pid_ns: Some("pid:[2]".into()),
            ..here.clone()
        };
        assert_eq!(container.liveness(&here), Liveness::Unseen);
        // alpha before its last boot.
        let rebooted = Owner {
            boot_id: Some("boot-0".into()),
            ..here.clone()
        };
        assert_eq!(rebooted.liveness(&here), Liveness::Gone);
        let unknown = Owner {
            boot_id: None,
            ..here.clone()
        };
        assert_eq!(unknown.liveness(&here), Liveness::Unseen);
    }

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let here = me();
        let (state, start) = proc_state(here.pid).unwrap();
        assert!(matches!(state, 'R' | 'S'), "{state}");
        assert_eq!(start, here.start_ticks);
        assert_eq!(proc_state(u32::MAX), None);
        assert_eq!(ago(42.4), "42 s");
        assert_eq!(ago(600.0), "10 min");
        assert_eq!(ago(3.0 * 3600.0), "3 h");
    }
}
