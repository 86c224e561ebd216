//! The watchdog: a small process (`smtlab __watchdog`) that outlives
//! smtlab only to clean up after it. smtlab tells it, over a pipe, every
//! server's process group and every directory it made for a server; when
//! smtlab dies, whatever killed it (SIGKILL, the OOM killer, an abort),
//! the kernel closes the pipe's only write end, and the watchdog kills the
//! groups still named and removes the directories still named, then exits.
//! When smtlab ends normally nothing is left named, and the watchdog just
//! exits.
//!
//! Why a process, and not what already keeps workers from outliving
//! smtlab: `PR_SET_PDEATHSIG` reaches only smtlab's own children, and the
//! kernel clears it when a child changes its credentials (ngircd started
//! as root switches to `nobody`, and survived smtlab) and does not pass it
//! to a child's children (nginx's workers, forked by its master, survived
//! it, still listening); and a dead process cannot remove a directory.
//! Cleaning up at the next start (stale directories whose owner is dead)
//! would leave the servers running, and everything else in place until a
//! next run that may never come. The kernel's EOF on the pipe is the one
//! notice that comes whatever happens to smtlab.
//!
//! The order makes every moment safe: a server's group is named before
//! its gate opens (until then it is `smtlab __gate`, which PDEATHSIG
//! kills), and a directory is named before it is created; each is
//! forgotten only once it is gone (a group after its leader was reaped and
//! the group killed, a directory after it was removed). A record cut
//! short by smtlab's death is ignored: what it named did not exist yet. A
//! group number could in principle be reused in the microseconds between
//! a server's end and its record's removal; the kernel never reuses it
//! while any member lives.
//!
//! One watchdog per smtlab process, started with the first server. It
//! runs in a process group of its own, so Ctrl-C or a `kill` of smtlab's
//! group does not take it before smtlab is done with it; if it dies
//! anyway, the next record starts a new one, told everything still named.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::{self, BufRead, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

/// How long the watchdog waits for the killed groups to end before it
/// removes the directories anyway.
const GROUPS_GONE_LIMIT: Duration = Duration::from_secs(2);
/// How long it keeps trying to remove a directory (a process not yet
/// dead may still create a file in it).
const REMOVE_LIMIT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(10);

/// What smtlab has named to its watchdog: one record each, NUL-ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Record {
    Group(i32),
    ForgetGroup(i32),
    Dir(PathBuf),
    ForgetDir(PathBuf),
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Record::Group(g) => out.extend_from_slice(format!("g{g}").as_bytes()),
            Record::ForgetGroup(g) => out.extend_from_slice(format!("G{g}").as_bytes()),
            Record::Dir(p) => {
                out.push(b'd');
                out.extend_from_slice(p.as_os_str().as_bytes());
            }
            Record::ForgetDir(p) => {
                out.push(b'D');
                out.extend_from_slice(p.as_os_str().as_bytes());
            }
        }
        // A path holds no NUL, so NUL ends a record.
        out.push(0);
        out
    }

    fn decode(bytes: &[u8]) -> Option<Record> {
        let (&kind, rest) = bytes.split_first()?;
        let group = || {
            std::str::from_utf8(rest)
                .ok()?
                .parse::<i32>()
                .ok()
                .filter(|g| *g > 1)
        };
        let path = || PathBuf::from(OsStr::from_bytes(rest));
        match kind {
            b'g' => group().map(Record::Group),
            b'G' => group().map(Record::ForgetGroup),
            b'd' if !rest.is_empty() => Some(Record::Dir(path())),
            b'D' if !rest.is_empty() => Some(Record::ForgetDir(path())),
            _ => None,
        }
    }
}

/// What is named now, in smtlab (to tell a new watchdog) and in the
/// watchdog (to clean up).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Named {
    groups: BTreeSet<i32>,
    dirs: BTreeSet<PathBuf>,
}

impl Named {
    fn apply(&mut self, r: &Record) {
        match r {
            Record::Group(g) => {
                self.groups.insert(*g);
            }
            Record::ForgetGroup(g) => {
                self.groups.remove(g);
            }
            Record::Dir(p) => {
                self.dirs.insert(p.clone());
            }
            Record::ForgetDir(p) => {
                self.dirs.remove(p);
            }
        }
    }

    fn records(&self) -> impl Iterator<Item = Record> + '_ {
        let groups = self.groups.iter().map(|g| Record::Group(*g));
        groups.chain(self.dirs.iter().map(|d| Record::Dir(d.clone())))
    }
}

/// `smtlab __watchdog`: start `smtlab __watchdog --detached` on the same
/// stdin and exit at once (exit 0; 1 if it could not be started), so that
/// the watchdog is not smtlab's child: smtlab reaps this first process at
/// once, and never has a child it did not ask for (`serve web --model
/// process` counts its workers). `--detached`: read records on stdin until
/// smtlab is gone, then clean up what is still named; exit 0.
pub fn main(detached: bool) -> i32 {
    if !detached {
        let started = std::env::current_exe().and_then(|exe| {
            Command::new(exe)
                .args(["__watchdog", "--detached"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
        });
        return i32::from(started.is_err());
    }
    let named = read_records(io::stdin().lock());
    clean_up(&named);
    0
}

/// Every whole record until EOF (or a read error: the writer is gone
/// either way), applied.
fn read_records(mut input: impl BufRead) -> Named {
    let mut named = Named::default();
    loop {
        let mut record = Vec::new();
        match input.read_until(0, &mut record) {
            Ok(0) => break,
            Ok(_) if record.last() == Some(&0) => {
                record.pop();
                if let Some(r) = Record::decode(&record) {
                    named.apply(&r);
                }
            }
            // Cut short by smtlab's death: what it named did not exist yet.
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    named
}

/// Kill every named group, wait (bounded) until none has a live member,
/// then remove every named directory.
fn clean_up(named: &Named) {
    let kill_all = || {
        for g in &named.groups {
            smtlab_sys::kill(-g, Signal::SIGKILL);
        }
    };
    kill_all();
    let deadline = Instant::now() + GROUPS_GONE_LIMIT;
    while !named.groups.is_empty() && Instant::now() < deadline {
        if !named.groups.iter().any(|g| group_alive(*g)) {
            break;
        }
        std::thread::sleep(POLL);
        // A member forked while the first signal was on its way.
        kill_all();
    }
    for d in &named.dirs {
        remove_dir(d);
    }
}

/// Whether process group `pgid` has a member that is not a zombie (the
/// dead wait for a parent to reap them, which may never come when their
/// parent was smtlab).
fn group_alive(pgid: i32) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|e| {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            return false;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // Fields after the command (which may hold spaces and parentheses):
        // state, ppid, pgrp.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        matches!(f.as_slice(), [state, _, pgrp, ..]
            if pgrp.parse::<i32>() == Ok(pgid) && !matches!(*state, "Z" | "X"))
    })
}

/// Remove `dir` and everything in it, trying again for a while if a
/// process still dying creates something in it meanwhile.
fn remove_dir(dir: &Path) {
    let deadline = Instant::now() + REMOVE_LIMIT;
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(_) if Instant::now() < deadline => std::thread::sleep(POLL),
            Err(_) => return,
        }
    }
}

/// smtlab's end of its watchdog: the pipe's write end (close-on-exec, so
/// no other child holds it open), what is named, and how to start a new
/// one.
struct Link {
    exe: PathBuf,
    pipe: Option<std::fs::File>,
    named: Named,
}

static LINK: Mutex<Option<Link>> = Mutex::new(None);

impl Link {
    /// Start a watchdog and tell it everything named so far.
    fn start(&mut self) -> io::Result<()> {
        let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let mut cmd = Command::new(&self.exe);
        cmd.arg("__watchdog")
            .stdin(Stdio::from(read))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: a Ctrl-C or a `kill` of smtlab's group must not
            // take it before smtlab is done with it.
            .process_group(0);
        // No PDEATHSIG: it must outlive smtlab. This first process starts
        // the watchdog proper and ends at once (reaped here); the watchdog
        // is then nobody's child here, and ends after smtlab.
        let failed = |why: String| {
            io::Error::other(format!("starting {} __watchdog: {why}", self.exe.display()))
        };
        let status = cmd
            .spawn()
            .and_then(|mut c| c.wait())
            .map_err(|e| failed(e.to_string()))?;
        if !status.success() {
            return Err(failed(status.to_string()));
        }
        let mut pipe = std::fs::File::from(write);
        for r in self.named.records() {
            pipe.write_all(&r.encode())?;
        }
        self.pipe = Some(pipe);
        Ok(())
    }

    fn send(&mut self, r: &Record) -> io::Result<()> {
        self.named.apply(r);
        if let Some(p) = &mut self.pipe {
            if p.write_all(&r.encode()).is_ok() {
                return Ok(());
            }
        }
        // Not started yet, or gone (killed): a new one, told all.
        self.pipe = None;
        self.start()
    }
}

/// Tell the watchdog (started now if needed, from `exe`) `r`.
fn send(exe: &Path, r: Record) -> io::Result<()> {
    let mut link = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let link = link.get_or_insert_with(|| Link {
        exe: exe.to_path_buf(),
        pipe: None,
        named: Named::default(),
    });
    link.send(&r)
}

/// Forget `r` (a removal never starts a watchdog: without one, nothing is
/// named).
fn forget(r: Record) {
    let mut link = LINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(link) = link.as_mut() {
        let _ = link.send(&r);
    }
}

/// A server's process group, named to the watchdog until dropped. Drop it
/// only once the group is gone (its leader reaped, the group killed).
#[derive(Debug)]
pub(crate) struct WatchedGroup(i32);

impl WatchedGroup {
    /// Name process group `pgid` (a server's, its leader's pid) to the
    /// watchdog, started from `exe` if it is not running.
    pub(crate) fn new(exe: &Path, pgid: i32) -> io::Result<WatchedGroup> {
        send(exe, Record::Group(pgid)).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("the watchdog that cleans up if smtlab is killed: {e}"),
            )
        })?;
        Ok(WatchedGroup(pgid))
    }
}

impl Drop for WatchedGroup {
    fn drop(&mut self) {
        forget(Record::ForgetGroup(self.0));
    }
}

/// A directory of its own in the temporary directory (a reference
/// server's configuration, pid file and logs; `serve web`'s generated
/// document root), named to the watchdog before it exists; removed, then
/// forgotten, on drop or [`close`](WatchedDir::close).
#[derive(Debug)]
pub struct WatchedDir {
    path: PathBuf,
    watched: bool,
    removed: bool,
}

impl WatchedDir {
    /// `$TMPDIR/PREFIX<pid>-<n><time>`, private (0700), named to the
    /// watchdog (started from `exe`, the smtlab binary, if needed) first.
    pub fn new(exe: &Path, prefix: &str) -> io::Result<WatchedDir> {
        Self::create(Some(exe), prefix)
    }

    /// Without a watchdog: for tests that need a directory of this type.
    #[cfg(test)]
    pub(crate) fn unwatched(prefix: &str) -> io::Result<WatchedDir> {
        Self::create(None, prefix)
    }

    fn create(exe: Option<&Path>, prefix: &str) -> io::Result<WatchedDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            // The pid and a counter make the name unique among this host's
            // live processes; the clock's nanoseconds against a shared
            // directory seen from other pid namespaces.
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let path = base.join(format!("{prefix}{}-{n}{nanos:08x}", std::process::id()));
            if let Some(exe) = exe {
                send(exe, Record::Dir(path.clone())).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("the watchdog that cleans up if smtlab is killed: {e}"),
                    )
                })?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    return Ok(WatchedDir {
                        path,
                        watched: exe.is_some(),
                        removed: false,
                    })
                }
                Err(e) => {
                    if exe.is_some() {
                        forget(Record::ForgetDir(path.clone()));
                    }
                    if e.kind() != io::ErrorKind::AlreadyExists {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("creating {}: {e}", path.display()),
                        ));
                    }
                }
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "no free name for a directory {prefix}... in {}",
                base.display()
            ),
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove it now, saying why it could not be. One that could not be
    /// removed stays named: the watchdog tries again when smtlab ends.
    pub fn close(mut self) -> io::Result<()> {
        self.remove()
    }

    fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => {
                self.removed = true;
                if self.watched {
                    forget(Record::ForgetDir(self.path.clone()));
                }
                Ok(())
            }
        }
    }
}

impl Drop for WatchedDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_cut_record_is_ignored() {
        let all = [
            Record::Group(1234),
            Record::Dir(PathBuf::from("/tmp/smtlab-nginx-1 x\n")),
            Record::ForgetGroup(1234),
            Record::Group(77),
            Record::ForgetDir(PathBuf::from("/tmp/gone")),
        ];
        let mut bytes: Vec<u8> = all.iter().flat_map(Record::encode).collect();
        // smtlab killed in the middle of naming a directory.
        bytes.extend_from_slice(b"d/tmp/half");
        let named = read_records(&bytes[..]);
        assert_eq!(named.groups, BTreeSet::from([77]));
        assert_eq!(
            named.dirs,
            BTreeSet::from([PathBuf::from("/tmp/smtlab-nginx-1 x\n")])
        );
        // Garbage and groups that would signal everyone are never applied.
        for bad in [&b"g-1"[..], b"g0", b"g1", b"gx", b"d", b"x/tmp"] {
            assert_eq!(Record::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn clean_up_kills_the_named_groups_and_removes_the_named_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        std::fs::create_dir_all(made.join("sub")).unwrap();
        std::fs::write(made.join("sub/f"), b"x").unwrap();
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        // A group of two: a shell and its child, as nginx's master and worker.
        let mut leader = Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        let t = Instant::now();
        while !(group_alive(pgid) && t.elapsed() > Duration::from_millis(50)) {
            std::thread::sleep(POLL);
        }
        let named = Named {
            groups: BTreeSet::from([pgid]),
            dirs: BTreeSet::from([made.clone()]),
        };
        clean_up(&named);
        let _ = leader.wait();
        // The child was reparented and may wait as a zombie: not alive.
        assert!(!group_alive(pgid), "group {pgid} still has a live member");
        assert!(!made.exists());
        assert!(kept.exists());
    }

    #[test]
    fn a_dir_is_private_and_removed_on_drop() {
        use std::os::unix::fs::PermissionsExt;
        let d = WatchedDir::unwatched("smtlab-test-").unwrap();
        let path = d.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(path.join("f"), b"x").unwrap();
        drop(d);
        assert!(!path.exists());
    }
}
