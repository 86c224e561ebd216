//! How the ranks of a run find each other before the first message: every
//! rank publishes the UDP address it bound and learns every other rank's.
//!
//! Two ways, `--rendezvous`:
//!
//! * `dir:PATH`, a directory every rank can read (one machine, or a shared
//!   file system): each rank writes `rank-<r>` atomically (a temporary
//!   file renamed into place, so a reader never sees half an address) and
//!   polls until all `ranks` files are there. A directory is meant for one
//!   run: smtlab's own launch makes a fresh one per sample, and a
//!   launcher's default names the job ([`crate::launcher`]). Against a
//!   file left by an earlier run in the same directory: a file names the
//!   rank count it was written for (another count is an error, not a
//!   hang) and the host and pid of its writer (a file of a process of this
//!   host that no longer exists is stale, and waited past until its rank
//!   rewrites it). The directory's parent must exist: a mistyped path is
//!   refused when the flag is read, not made. Nothing is left behind,
//!   however the run ends: rank 0 removes the files and the directory
//!   once every rank is past the first barrier (so has read them:
//!   [`Rendezvous::clean_up`]); a rank that fails before that removes its
//!   own file and those of ranks of this host whose process has ended, and
//!   the directory once it is empty ([`Rendezvous::leave`]), so the last
//!   rank out removes it; what ranks killed outright left is removed by
//!   the next run ([`sweep_stale`]).
//! * `HOST:PORT`, rank 0's address: rank 0 listens on TCP there, each
//!   other rank connects (again and again until rank 0 listens) and sends
//!   `<rank> <ranks> <addr>`; when all have, rank 0 answers every one with
//!   the whole table. Nothing is left behind.
//!
//! Used by the rank's run (`rank.rs`) and by the CLI (`smtlab rank`,
//! `smtlab __rank`), whose flag this parses.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::error::{rank_list, DirError, RendezvousError, RendezvousSpecError};

/// Where the ranks of a run meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendezvous {
    /// A directory every rank can read: `dir:PATH`.
    Dir(PathBuf),
    /// Rank 0's TCP address: `HOST:PORT`.
    Leader(SocketAddr),
}

impl FromStr for Rendezvous {
    type Err = RendezvousSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let bad = |why: &str| RendezvousSpecError {
            text: text.to_string(),
            why: why.to_string(),
        };
        if let Some(path) = text.strip_prefix("dir:") {
            if path.is_empty() {
                return Err(bad("no directory after dir:"));
            }
            let dir = PathBuf::from(path);
            check_dir(&dir).map_err(|why| bad(&why.to_string()))?;
            return Ok(Rendezvous::Dir(dir));
        }
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(Rendezvous::Leader(addr));
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(bad("no port"));
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad("not HOST:PORT"));
        }
        // A host name is looked up once, here: every rank of the run then
        // uses the address it had when the run began.
        let addrs: Vec<SocketAddr> = text
            .to_socket_addrs()
            .map_err(|e| bad(&format!("cannot resolve {host}: {e}")))?
            .collect();
        addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or_else(|| addrs.first())
            .map(|a| Rendezvous::Leader(*a))
            .ok_or_else(|| bad(&format!("{host} has no address")))
    }
}

impl fmt::Display for Rendezvous {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rendezvous::Dir(p) => write!(f, "dir:{}", p.display()),
            Rendezvous::Leader(a) => write!(f, "{a}"),
        }
    }
}

/// A rendezvous directory that can be made or used: it is a directory,
/// or it is not there and its parent is (one level is made, never a
/// whole path: a typo must not create a tree).
fn check_dir(dir: &Path) -> Result<(), DirError> {
    let error = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => return Err(DirError::NotADirectory(dir.to_path_buf())),
        Err(e) => e,
    };
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(m) if !m.is_dir() => Err(DirError::ParentNotADirectory(parent.to_path_buf())),
        Ok(_) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Ok(_) => Err(DirError::Io {
            path: dir.to_path_buf(),
            source: error,
        }),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(DirError::Io {
            path: parent.to_path_buf(),
            source: e,
        }),
        Err(_) => Err(DirError::NoParent(parent.to_path_buf())),
    }
}

/// The first and the longest pause between two looks at the directory or
/// two connection attempts: short, since the ranks start together and a
/// look is cheap; growing, so that a rank started late is not polled for
/// with thousands of look-ups.
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const LONGEST_PAUSE: Duration = Duration::from_millis(10);

impl Rendezvous {
    /// Publish `mine` as rank `rank`'s address and return every rank's,
    /// indexed by rank, once all `ranks` have published theirs; give up
    /// after `timeout`.
    pub fn exchange(
        &self,
        rank: usize,
        ranks: usize,
        mine: SocketAddr,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, RendezvousError> {
        if rank >= ranks {
            return Err(RendezvousError::NotARank {
                rendezvous: self.to_string(),
                rank,
                ranks,
            });
        }
        let deadline = Instant::now() + timeout;
        match self {
            Rendezvous::Dir(dir) => self.exchange_dir(dir, rank, ranks, mine, timeout, deadline),
            Rendezvous::Leader(at) if rank == 0 => self.lead(*at, ranks, mine, timeout, deadline),
            Rendezvous::Leader(at) => self.follow(*at, rank, ranks, mine, timeout, deadline),
        }
    }

    /// Remove what this run left at the rendezvous (rank 0, once every
    /// rank is past the first barrier, so has read the table). The
    /// directory itself goes too when nothing else is in it. Nothing to do
    /// for `HOST:PORT`.
    pub fn clean_up(&self, ranks: usize) {
        if let Rendezvous::Dir(dir) = self {
            for r in 0..ranks {
                let _ = std::fs::remove_file(rank_file(dir, r));
            }
            // Fails, as it should, when another run's files are there.
            let _ = std::fs::remove_dir(dir);
        }
    }

    /// Rank `rank` leaves a run that failed (an error, a stall, a stop
    /// signal): its own file goes if this process wrote it, and so do the
    /// files of ranks of this host whose process has ended; then the
    /// directory, once nothing is left in it. Every rank that fails
    /// leaves so, and the last one out removes the directory. A file of a
    /// rank still alive, or written on another host, stays. Nothing to do
    /// for `HOST:PORT`.
    pub fn leave(&self, rank: usize) {
        if let Rendezvous::Dir(dir) = self {
            let me = Writer::this_process();
            for (path, file) in entries(dir) {
                if file.is_stale(&me) || file.is_mine(&me, rank) {
                    let _ = std::fs::remove_file(path);
                }
            }
            let _ = std::fs::remove_dir(dir);
        }
    }

    fn io(&self, what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RendezvousError + '_ {
        let what = what.into();
        move |source| RendezvousError::Io {
            rendezvous: self.to_string(),
            what,
            source,
        }
    }

    fn mismatch(&self, what: String) -> RendezvousError {
        RendezvousError::Mismatch {
            rendezvous: self.to_string(),
            what,
        }
    }

    fn exchange_dir(
        &self,
        dir: &Path,
        rank: usize,
        ranks: usize,
        mine: SocketAddr,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<Vec<SocketAddr>, RendezvousError> {
        // One level only: the parent was checked when the flag was read.
        match std::fs::create_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(self.io("creating the directory")(e))
            }
            _ => {}
        }
        let me = Writer::this_process();
        let line = format!("{ranks} {mine} {} {}\n", me.host, me.pid);
        let tmp = dir.join(format!(".rank-{rank}.{}.tmp", me.pid));
        std::fs::write(&tmp, line).map_err(self.io(format!("writing {}", tmp.display())))?;
        let published = rank_file(dir, rank);
        std::fs::rename(&tmp, &published)
            .map_err(self.io(format!("renaming into {}", published.display())))?;

        let mut table: Vec<Option<SocketAddr>> = vec![None; ranks];
        table[rank] = Some(mine);
        let mut pause = FIRST_PAUSE;
        loop {
            for (r, slot) in table.iter_mut().enumerate().filter(|(_, s)| s.is_none()) {
                *slot = self.read_rank_file(dir, r, ranks, &me)?;
            }
            let missing: Vec<usize> = (0..ranks).filter(|&r| table[r].is_none()).collect();
            if missing.is_empty() {
                return Ok(table.into_iter().flatten().collect());
            }
            if Instant::now() >= deadline {
                return Err(RendezvousError::Missing {
                    rendezvous: self.to_string(),
                    missing,
                    ranks,
                    timeout,
                });
            }
            std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }

    /// Rank `r`'s address from its file: `None` while it is not there (or
    /// is a stale file of a finished process of this host).
    fn read_rank_file(
        &self,
        dir: &Path,
        r: usize,
        ranks: usize,
        me: &Writer,
    ) -> Result<Option<SocketAddr>, RendezvousError> {
        let path = rank_file(dir, r);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(format!("reading {}", path.display()))(e)),
        };
        let unreadable = || {
            self.mismatch(format!(
                "{} is not a rank's address (`{}`)",
                path.display(),
                text.trim()
            ))
        };
        let mut words = text.split_whitespace();
        let (Some(count), Some(addr), host, pid) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(unreadable());
        };
        let writer = host.zip(pid.and_then(|p| p.parse::<u32>().ok()));
        if let Some((host, pid)) = writer {
            if host == me.host && !Path::new(&format!("/proc/{pid}")).exists() {
                return Ok(None);
            }
        }
        let count: usize = count.parse().map_err(|_| unreadable())?;
        if count != ranks {
            return Err(self.mismatch(format!(
                "{} was written for a run of {count} ranks, this run has {ranks} (a file of \
                 another run? give each run its own directory)",
                path.display()
            )));
        }
        addr.parse().map(Some).map_err(|_| unreadable())
    }

    /// Rank 0 of `HOST:PORT`: listen, take every other rank's address,
    /// answer each with the table.
    fn lead(
        &self,
        at: SocketAddr,
        ranks: usize,
        mine: SocketAddr,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<Vec<SocketAddr>, RendezvousError> {
        let mut table: Vec<Option<SocketAddr>> = vec![None; ranks];
        table[0] = Some(mine);
        if ranks == 1 {
            return Ok(vec![mine]);
        }
        // std sets SO_REUSEADDR on Unix, so a port left in TIME_WAIT by the
        // previous run can be listened on again at once.
        let listener = TcpListener::bind(at).map_err(self.io("listening"))?;
        listener
            .set_nonblocking(true)
            .map_err(self.io("listening"))?;
        let mut peers: Vec<TcpStream> = Vec::with_capacity(ranks - 1);
        while peers.len() < ranks - 1 {
            let stream = match listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(RendezvousError::Missing {
                            rendezvous: self.to_string(),
                            missing: (0..ranks).filter(|&r| table[r].is_none()).collect(),
                            ranks,
                            timeout,
                        });
                    }
                    std::thread::sleep(LONGEST_PAUSE);
                    continue;
                }
                Err(e) => return Err(self.io("accepting a rank")(e)),
            };
            let (r, addr) = self.read_hello(&stream, ranks, deadline)?;
            if table[r].is_some() {
                return Err(self.mismatch(format!("rank {r} connected twice")));
            }
            table[r] = Some(addr);
            peers.push(stream);
        }
        let table: Vec<SocketAddr> = table.into_iter().flatten().collect();
        let mut answer = String::new();
        for (r, a) in table.iter().enumerate() {
            answer.push_str(&format!("{r} {a}\n"));
        }
        for mut p in peers {
            p.write_all(answer.as_bytes())
                .map_err(self.io("sending the table"))?;
        }
        Ok(table)
    }

    /// A rank's `<rank> <ranks> <addr>` line, checked against the run.
    fn read_hello(
        &self,
        stream: &TcpStream,
        ranks: usize,
        deadline: Instant,
    ) -> Result<(usize, SocketAddr), RendezvousError> {
        // The listener is non-blocking; the accepted socket must not be.
        stream
            .set_nonblocking(false)
            .and_then(|_| stream.set_read_timeout(Some(remaining(deadline))))
            .map_err(self.io("reading a rank"))?;
        let mut line = String::new();
        BufReader::new(stream)
            .read_line(&mut line)
            .map_err(self.io("reading a rank's address"))?;
        let bad = || self.mismatch(format!("unreadable rank address `{}`", line.trim()));
        let words: Vec<&str> = line.split_whitespace().collect();
        let [r, count, addr] = words[..] else {
            return Err(bad());
        };
        let (r, count): (usize, usize) = (
            r.parse().map_err(|_| bad())?,
            count.parse().map_err(|_| bad())?,
        );
        if count != ranks {
            return Err(self.mismatch(format!(
                "rank {r} is of a run of {count} ranks, rank 0's has {ranks}"
            )));
        }
        if r == 0 || r >= ranks {
            return Err(self.mismatch(format!(
                "a rank {r} connected; the others of {ranks} are 1 to {}",
                ranks - 1
            )));
        }
        Ok((r, addr.parse().map_err(|_| bad())?))
    }

    /// A rank other than 0 of `HOST:PORT`: connect, say who it is, read
    /// the table.
    fn follow(
        &self,
        at: SocketAddr,
        rank: usize,
        ranks: usize,
        mine: SocketAddr,
        timeout: Duration,
        deadline: Instant,
    ) -> Result<Vec<SocketAddr>, RendezvousError> {
        let no_leader = |what: String| RendezvousError::NoLeader {
            rendezvous: self.to_string(),
            what,
            timeout,
        };
        let mut pause = FIRST_PAUSE;
        let mut stream = loop {
            if Instant::now() >= deadline {
                return Err(no_leader("was not listening".into()));
            }
            match TcpStream::connect_timeout(&at, remaining(deadline)) {
                Ok(s) => break s,
                // Rank 0 not listening yet: it starts with the others.
                Err(_) => {
                    std::thread::sleep(pause.min(remaining(deadline)));
                    pause = (pause * 2).min(LONGEST_PAUSE);
                }
            }
        };
        stream
            .write_all(format!("{rank} {ranks} {mine}\n").as_bytes())
            .map_err(self.io("sending this rank's address"))?;
        stream
            .set_read_timeout(Some(remaining(deadline)))
            .map_err(self.io("waiting for the table"))?;
        let mut table: Vec<Option<SocketAddr>> = vec![None; ranks];
        for line in BufReader::new(stream).lines() {
            let line = match line {
                Ok(l) => l,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(no_leader("did not send the table".into()))
                }
                Err(e) => return Err(self.io("reading the table")(e)),
            };
            let bad = || self.mismatch(format!("unreadable line of the table `{line}`"));
            let (r, addr) = line.split_once(' ').ok_or_else(bad)?;
            let r: usize = r.parse().map_err(|_| bad())?;
            let addr: SocketAddr = addr.trim().parse().map_err(|_| bad())?;
            *table.get_mut(r).ok_or_else(bad)? = Some(addr);
        }
        let missing: Vec<usize> = (0..ranks).filter(|&r| table[r].is_none()).collect();
        if !missing.is_empty() {
            // Rank 0 gave up (another rank's mistake, its own timeout)
            // and closed the connection without the table.
            return Err(no_leader(format!(
                "closed the connection without the table ({} missing)",
                rank_list(&missing)
            )));
        }
        Ok(table.into_iter().flatten().collect())
    }
}

fn rank_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank}"))
}

/// The prefix of every rendezvous directory smtlab names itself (a
/// launcher's job's, a local run's sample's).
pub const DIR_PREFIX: &str = "smtlab-rendezvous-";

/// Remove the rendezvous directories under `parent` (those named
/// [`DIR_PREFIX`]...) that hold only files of ranks of this host whose
/// processes have ended: what a run whose ranks were killed outright
/// (SIGKILL, a launcher's abort) left. `except` (this run's own) is not
/// looked at; an empty directory is not either (a run may have just made
/// it); one with a file of a live rank, or of another host, is kept whole.
pub fn sweep_stale(parent: &Path, except: Option<&Path>) {
    let Ok(dirs) = std::fs::read_dir(parent) else {
        return;
    };
    let me = Writer::this_process();
    for d in dirs.flatten() {
        let path = d.path();
        let ours = d
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(DIR_PREFIX));
        if !ours || except == Some(path.as_path()) || !d.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let files = entries(&path);
        if files.is_empty() || !files.iter().all(|(_, f)| f.is_stale(&me)) {
            continue;
        }
        for (file, _) in files {
            let _ = std::fs::remove_file(file);
        }
        let _ = std::fs::remove_dir(&path);
    }
}

/// What a file in a rendezvous directory is.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    /// A rank's address (`rank-R`) or one being written (`.rank-R.PID.tmp`),
    /// with the rank and its writer when the file names them.
    Rank {
        rank: usize,
        writer: Option<(String, u32)>,
    },
    /// Anything else: never removed.
    Other,
}

impl Entry {
    fn read(path: &Path) -> Entry {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let rank = name.strip_prefix("rank-").or_else(|| {
            name.strip_prefix(".rank-")
                .and_then(|rest| rest.strip_suffix(".tmp"))
                .and_then(|rest| rest.split_once('.').map(|(r, _)| r))
        });
        let Some(rank) = rank.and_then(|r| r.parse().ok()) else {
            return Entry::Other;
        };
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let words: Vec<&str> = text.split_whitespace().collect();
        let writer = match words[..] {
            [_, _, host, pid] => pid.parse().ok().map(|pid| (host.to_string(), pid)),
            _ => None,
        };
        Entry::Rank { rank, writer }
    }

    /// Written by a process of this host that has ended.
    fn is_stale(&self, me: &Writer) -> bool {
        matches!(self, Entry::Rank { writer: Some((host, pid)), .. }
            if *host == me.host && !Path::new(&format!("/proc/{pid}")).exists())
    }

    /// Rank `rank`'s file, written by this process.
    fn is_mine(&self, me: &Writer, rank: usize) -> bool {
        matches!(self, Entry::Rank { rank: r, writer: Some((host, pid)) }
            if *r == rank && *host == me.host && *pid == me.pid)
    }
}

/// Every file of a rendezvous directory, read.
fn entries(dir: &Path) -> Vec<(PathBuf, Entry)> {
    let Ok(list) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    list.flatten()
        .map(|e| {
            let path = e.path();
            let entry = Entry::read(&path);
            (path, entry)
        })
        .collect()
}

/// What is left until `deadline`, at least a millisecond (a zero read
/// timeout would mean none).
fn remaining(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// Who wrote a rank file: enough to tell a stale file of this host.
struct Writer {
    host: String,
    pid: u32,
}

impl Writer {
    fn this_process() -> Writer {
        // Without a readable host name, files of this host are never taken
        // for stale: the rank count still guards them.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().replace(char::is_whitespace, "_"))
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "-".to_string());
        Writer {
            host,
            pid: std::process::id(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, UdpSocket};

    /// Each rank as a thread with its own UDP address.
    fn meet(
        rv: &Rendezvous,
        ranks: usize,
        timeout: Duration,
    ) -> Vec<Result<Vec<SocketAddr>, RendezvousError>> {
        let sockets: Vec<UdpSocket> = (0..ranks)
            .map(|_| UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap())
            .collect();
        let handles: Vec<_> = sockets
            .iter()
            .enumerate()
            .map(|(r, s)| {
                let rv = rv.clone();
                let mine = s.local_addr().unwrap();
                std::thread::spawn(move || rv.exchange(r, ranks, mine, timeout))
            })
            .collect();
        let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let expected: Vec<SocketAddr> = sockets.iter().map(|s| s.local_addr().unwrap()).collect();
        for g in got.iter().flatten() {
            assert_eq!(g, &expected);
        }
        got
    }

    /// A TCP socket bound to a port of 127.0.0.1 without listening, and
    /// the port: nobody else can listen there while it is held.
    fn unlistened_port() -> (std::os::fd::OwnedFd, SocketAddr) {
        use nix::sys::socket::{bind, getsockname, socket, AddressFamily, SockFlag, SockType};
        use nix::sys::socket::{SockaddrIn, SockaddrLike};
        use std::os::fd::AsRawFd;
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .unwrap();
        bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).unwrap();
        let at: SockaddrIn = getsockname(fd.as_raw_fd()).unwrap();
        assert_eq!(at.family(), Some(AddressFamily::Inet));
        (fd, SocketAddr::V4(at.into()))
    }

    fn free_port() -> SocketAddr {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
    }

    #[test]
    fn ranks_meet_in_a_directory_that_is_made_if_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let rv = Rendezvous::Dir(tmp.path().join("job-1"));
        for r in meet(&rv, 4, Duration::from_secs(10)) {
            r.unwrap();
        }
        rv.clean_up(4);
        assert!(!tmp.path().join("job-1").exists());
    }

    #[test]
    fn ranks_meet_at_rank_zeros_address() {
        let rv = Rendezvous::Leader(free_port());
        for r in meet(&rv, 4, Duration::from_secs(10)) {
            r.unwrap();
        }
        // The same port again at once (SO_REUSEADDR).
        for r in meet(&rv, 2, Duration::from_secs(10)) {
            r.unwrap();
        }
    }

    #[test]
    fn a_rank_that_never_comes_is_named_after_the_timeout() {
        let tmp = tempfile::tempdir().unwrap();
        let rv = Rendezvous::Dir(tmp.path().to_path_buf());
        let mine: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let e = rv
            .exchange(1, 4, mine, Duration::from_millis(100))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "rendezvous dir:{}: ranks 0, 2, 3 of 4 did not appear within 0.1 s",
                tmp.path().display()
            )
        );
        let rv = Rendezvous::Leader(free_port());
        let e = rv
            .exchange(0, 3, mine, Duration::from_millis(100))
            .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("ranks 1, 2 of 3 did not appear within 0.1 s"),
            "{e}"
        );
        // A port bound but not listening, held while it is tried: a port
        // merely freed may be another test's leader by then.
        let (_held, at) = unlistened_port();
        let e = Rendezvous::Leader(at)
            .exchange(2, 3, mine, Duration::from_millis(100))
            .unwrap_err();
        assert!(
            e.to_string()
                .ends_with("rank 0 was not listening within 0.1 s"),
            "{e}"
        );
    }

    #[test]
    fn a_file_of_another_run_is_refused_and_a_stale_one_waited_past() {
        let tmp = tempfile::tempdir().unwrap();
        let rv = Rendezvous::Dir(tmp.path().to_path_buf());
        let mine: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        // Another run's rank 1, alive (this process), of 3 ranks.
        let me = Writer::this_process();
        std::fs::write(
            tmp.path().join("rank-1"),
            format!("3 127.0.0.1:6000 {} {}\n", me.host, me.pid),
        )
        .unwrap();
        let e = rv.exchange(0, 2, mine, Duration::from_secs(5)).unwrap_err();
        assert!(
            e.to_string().contains("was written for a run of 3 ranks"),
            "{e}"
        );
        // The same file from a process of this host that has ended: not
        // rank 1's address, which has not appeared yet.
        let dead = u32::MAX - 1;
        std::fs::write(
            tmp.path().join("rank-1"),
            format!("3 127.0.0.1:6000 {} {dead}\n", me.host),
        )
        .unwrap();
        let e = rv
            .exchange(0, 2, mine, Duration::from_millis(50))
            .unwrap_err();
        assert!(matches!(e, RendezvousError::Missing { ref missing, .. } if missing == &[1]));
        // Rank 1 comes and replaces it.
        let rv1 = rv.clone();
        let t = std::thread::spawn(move || {
            rv1.exchange(
                1,
                2,
                "127.0.0.1:6001".parse().unwrap(),
                Duration::from_secs(5),
            )
        });
        let got = rv.exchange(0, 2, mine, Duration::from_secs(5)).unwrap();
        assert_eq!(got[1], "127.0.0.1:6001".parse().unwrap());
        t.join().unwrap().unwrap();
    }

    #[test]
    fn a_rank_outside_the_run_is_refused() {
        let rv = Rendezvous::Dir(PathBuf::from("/nonexistent/x"));
        let e = rv
            .exchange(4, 4, "127.0.0.1:1".parse().unwrap(), Duration::ZERO)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "rendezvous dir:/nonexistent/x: rank 4 of 4 is not a rank of the run"
        );
    }

    #[test]
    fn a_directory_whose_parent_is_missing_is_refused_not_made() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing");
        let text = format!("dir:{}", missing.join("x").display());
        let e = text.parse::<Rendezvous>().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "--rendezvous {text}: the directory {} does not exist (the rendezvous directory \
                 is made in an existing one); expected dir:PATH (a directory every rank can \
                 read) or HOST:PORT (rank 0's address)",
                missing.display()
            )
        );
        assert!(!missing.exists());
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = format!("dir:{}", file.display())
            .parse::<Rendezvous>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("exists and is not a directory"), "{e}");
        let e = format!("dir:{}", file.join("x").display())
            .parse::<Rendezvous>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} is not a directory", file.display())),
            "{e}"
        );
        // One level below an existing directory: made by the ranks; an
        // existing directory: used.
        let rv: Rendezvous = format!("dir:{}", tmp.path().join("new").display())
            .parse()
            .unwrap();
        for r in meet(&rv, 2, Duration::from_secs(10)) {
            r.unwrap();
        }
        assert!(tmp.path().join("new/rank-1").exists());
        let _: Rendezvous = format!("dir:{}", tmp.path().display()).parse().unwrap();
        // Nor does the library make a path's missing parents itself.
        let deep = Rendezvous::Dir(missing.join("x"));
        let e = deep
            .exchange(0, 2, "127.0.0.1:1".parse().unwrap(), Duration::ZERO)
            .unwrap_err();
        assert!(matches!(e, RendezvousError::Io { .. }), "{e}");
        assert!(!missing.exists());
    }

    /// A rank file as `exchange_dir` writes it, by `host` and `pid`.
    fn rank_file_of(dir: &Path, rank: usize, host: &str, pid: u32) {
        std::fs::write(
            rank_file(dir, rank),
            format!("3 127.0.0.1:{} {host} {pid}\n", 6000 + rank),
        )
        .unwrap();
    }

    /// A pid no process has: one above the kernel's largest.
    fn dead_pid() -> u32 {
        let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(4 << 20);
        max + 1
    }

    #[test]
    fn failed_ranks_leave_and_the_last_one_out_removes_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("job");
        std::fs::create_dir(&dir).unwrap();
        let rv = Rendezvous::Dir(dir.clone());
        let me = Writer::this_process();
        // Rank 0 is this process; rank 1 died; rank 2 is alive (this
        // process again: ranks as threads); rank 3 is on another host; a
        // file that is not a rank's stays too.
        rank_file_of(&dir, 0, &me.host, me.pid);
        rank_file_of(&dir, 1, &me.host, dead_pid());
        rank_file_of(&dir, 2, &me.host, me.pid);
        rank_file_of(&dir, 3, "elsewhere", dead_pid());
        std::fs::write(
            dir.join(format!(".rank-4.{}.tmp", dead_pid())),
            format!("3 127.0.0.1:1 {} {}\n", me.host, dead_pid()),
        )
        .unwrap();
        rv.leave(0);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["rank-2", "rank-3"]);
        // Rank 2 leaves too; rank 3's host is not this one: kept, and the
        // directory with it.
        rv.leave(2);
        assert!(dir.join("rank-3").exists());
        // Once rank 3 is gone the last one out removes the directory.
        std::fs::remove_file(dir.join("rank-3")).unwrap();
        rank_file_of(&dir, 2, &me.host, me.pid);
        rv.leave(2);
        assert!(!dir.exists());
        // Leaving a directory that is gone (rank 0 cleaned up) is nothing.
        rv.leave(0);
    }

    #[test]
    fn the_next_run_sweeps_what_killed_ranks_left_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let me = Writer::this_process();
        let make = |name: &str, files: &[(usize, &str, u32)]| {
            let d = tmp.path().join(name);
            std::fs::create_dir(&d).unwrap();
            for &(rank, host, pid) in files {
                rank_file_of(&d, rank, host, pid);
            }
            d
        };
        let dead = dead_pid();
        let killed = make(
            "smtlab-rendezvous-openmpi-1-2",
            &[(0, &me.host, dead), (1, &me.host, dead)],
        );
        let live = make(
            "smtlab-rendezvous-openmpi-2-2",
            &[(0, &me.host, dead), (1, &me.host, me.pid)],
        );
        let remote = make("smtlab-rendezvous-slurm-3-2", &[(0, "elsewhere", dead)]);
        let fresh = make("smtlab-rendezvous-abc123", &[]);
        let mine = make("smtlab-rendezvous-openmpi-4-2", &[(0, &me.host, dead)]);
        let other = make("someone-elses", &[(0, &me.host, dead)]);
        std::fs::write(tmp.path().join("smtlab-rendezvous-file"), "").unwrap();
        sweep_stale(tmp.path(), Some(&mine));
        assert!(!killed.exists());
        for kept in [&live, &remote, &fresh, &mine, &other] {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert!(
            live.join("rank-0").exists(),
            "a live run's directory is kept whole"
        );
        assert!(tmp.path().join("smtlab-rendezvous-file").exists());
    }

    #[test]
    fn specs_read_back_and_bad_ones_name_the_flag_and_both_forms() {
        for text in ["dir:/tmp/x", "127.0.0.1:7000", "[::1]:7000"] {
            let rv: Rendezvous = text.parse().unwrap();
            assert_eq!(rv.to_string(), text);
        }
        assert_eq!(
            "localhost:7000".parse::<Rendezvous>().unwrap(),
            Rendezvous::Leader("127.0.0.1:7000".parse().unwrap())
        );
        for bad in ["dir:", "7000", "host:port", ":7000", "/tmp/x"] {
            let e = bad.parse::<Rendezvous>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("--rendezvous {bad}: ")), "{e}");
            assert!(
                e.ends_with("expected dir:PATH (a directory every rank can read) or HOST:PORT (rank 0's address)"),
                "{e}"
            );
            assert!(!e.contains('\n'));
        }
    }
}
