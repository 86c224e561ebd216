//! Which CPUs `smtlab load` runs on: the ones it is given, or else the CPUs
//! the server does not use, so that client and server do not take turns on
//! one CPU and the client measures the server rather than itself.
//!
//! The server is found when it runs on this machine: the listening socket
//! on the target's port in `/proc/net/tcp` and `/proc/net/tcp6` gives a
//! socket inode; the processes with an fd linked to `socket:[inode]` under
//! `/proc/PID/fd` are the server (a prefork server's workers share the
//! socket); the CPUs its threads may run on (`Cpus_allowed_list` of
//! `/proc/PID/task/TID/status`, united) are the server's. The client takes
//! the CPUs this process may use that are not among them. Processes of
//! other users cannot be read without privileges: then the server is not
//! found and the client runs unpinned, and says why.

use std::fmt;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

use smtlab_types::CpuSet;

/// The CPUs chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientCpus {
    /// The CPUs the caller gave.
    Given(CpuSet),
    /// The server (these processes) may run on `server`; the client takes
    /// `cpus`, the others it may use.
    AwayFromServer {
        cpus: CpuSet,
        pids: Vec<i32>,
        server: CpuSet,
    },
    /// Not pinned, for this reason.
    Unpinned(Unpinned),
}

/// Why the client runs unpinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpinned {
    /// The target is another machine's address.
    NotLocal(IpAddr),
    /// Nothing on this machine listens on the port (that this user sees).
    NoListener(u16),
    /// A socket listens, but no process of this user holds it.
    NoProcess(u16),
    /// The server may run on every CPU the client may use.
    ServerEverywhere { pids: Vec<i32>, server: CpuSet },
    /// This process's own affinity could not be read.
    NoAffinity,
}

impl ClientCpus {
    /// The CPUs to pin the client threads to (empty: not pinned).
    pub fn cpus(&self) -> Vec<u32> {
        match self {
            ClientCpus::Given(c) | ClientCpus::AwayFromServer { cpus: c, .. } => c.iter().collect(),
            ClientCpus::Unpinned(_) => Vec::new(),
        }
    }
}

impl fmt::Display for ClientCpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientCpus::Given(c) => write!(f, "CPUs {c}, as given"),
            ClientCpus::AwayFromServer { cpus, pids, server } => write!(
                f,
                "CPUs {cpus}: the server (pid {}) runs on CPUs {server}",
                join(pids)
            ),
            ClientCpus::Unpinned(why) => write!(f, "not pinned: {why}"),
        }
    }
}

impl fmt::Display for Unpinned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unpinned::NotLocal(ip) => write!(f, "{ip} is not an address of this machine"),
            Unpinned::NoListener(port) => {
                write!(f, "no socket on this machine listens on port {port}")
            }
            Unpinned::NoProcess(port) => write!(
                f,
                "the process listening on port {port} is not one this user can see"
            ),
            Unpinned::ServerEverywhere { pids, server } => write!(
                f,
                "the server (pid {}) may run on every CPU this client may use ({server}); \
                 restrict it (e.g. smtlab serve --cpus) or give the client --cpus",
                join(pids)
            ),
            Unpinned::NoAffinity => write!(f, "this process's CPU affinity cannot be read"),
        }
    }
}

fn join(pids: &[i32]) -> String {
    pids.iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The client's CPUs for a server at `target`: `given` if any, else the
/// CPUs the server does not use.
pub fn choose(target: SocketAddr, given: Option<&CpuSet>) -> ClientCpus {
    if let Some(c) = given {
        return ClientCpus::Given(c.clone());
    }
    let ip = target.ip();
    // Binding succeeds only to an address of this machine.
    if !ip.is_unspecified() && UdpSocket::bind((ip, 0)).is_err() {
        return ClientCpus::Unpinned(Unpinned::NotLocal(ip));
    }
    let port = target.port();
    let mut inodes = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        if let Ok(text) = fs::read_to_string(file) {
            inodes.extend(listening_inodes(&text, v6, ip, port));
        }
    }
    if inodes.is_empty() {
        return ClientCpus::Unpinned(Unpinned::NoListener(port));
    }
    let pids = holders(&inodes);
    if pids.is_empty() {
        return ClientCpus::Unpinned(Unpinned::NoProcess(port));
    }
    let server = pids
        .iter()
        .fold(CpuSet::new(), |acc, &pid| acc.union(&process_cpus(pid)));
    let Ok(mine) = smtlab_sys::current_affinity() else {
        return ClientCpus::Unpinned(Unpinned::NoAffinity);
    };
    let cpus = mine.difference(&server);
    if cpus.is_empty() {
        return ClientCpus::Unpinned(Unpinned::ServerEverywhere { pids, server });
    }
    ClientCpus::AwayFromServer { cpus, pids, server }
}

/// The inodes of the sockets in `text` (`/proc/net/tcp` or, `v6`,
/// `tcp6`) that listen on `port` and accept connections to `ip`.
pub fn listening_inodes(text: &str, v6: bool, ip: IpAddr, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] != LISTEN {
                return None;
            }
            let (addr, p) = f[1].split_once(':')?;
            if u16::from_str_radix(p, 16).ok()? != port {
                return None;
            }
            let local = if v6 {
                IpAddr::V6(hex_ipv6(addr)?)
            } else {
                IpAddr::V4(hex_ipv4(addr)?)
            };
            accepts(local, ip).then(|| f[9].parse().ok()).flatten()
        })
        .filter(|&inode| inode != 0)
        .collect()
}

/// Whether a socket listening on `local` takes connections to `target`.
fn accepts(local: IpAddr, target: IpAddr) -> bool {
    if local.is_unspecified() || target.is_unspecified() || local == target {
        return true;
    }
    // A v6 socket sees v4 peers as ::ffff:a.b.c.d.
    match (local, target) {
        (IpAddr::V6(l), IpAddr::V4(t)) => l.to_ipv4_mapped() == Some(t),
        (IpAddr::V4(l), IpAddr::V6(t)) => t.to_ipv4_mapped() == Some(l),
        _ => false,
    }
}

/// The kernel prints an IPv4 address as its 32-bit word in host order.
fn hex_ipv4(hex: &str) -> Option<Ipv4Addr> {
    let word = u32::from_str_radix(hex, 16).ok()?;
    (hex.len() == 8).then(|| Ipv4Addr::from(word.to_ne_bytes()))
}

/// An IPv6 address: four such words.
fn hex_ipv6(hex: &str) -> Option<Ipv6Addr> {
    if hex.len() != 32 {
        return None;
    }
    let mut bytes = [0u8; 16];
    for i in 0..4 {
        let word = u32::from_str_radix(&hex[8 * i..8 * i + 8], 16).ok()?;
        bytes[4 * i..4 * i + 4].copy_from_slice(&word.to_ne_bytes());
    }
    Some(Ipv6Addr::from(bytes))
}

/// The processes with an fd on one of the sockets `inodes`.
fn holders(inodes: &[u64]) -> Vec<i32> {
    let links: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            // Other users' fds are not readable: skipped.
            fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    fs::read_link(fd.path())
                        .is_ok_and(|l| links.iter().any(|s| l.as_os_str() == s.as_str()))
                })
            })
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The CPUs any thread of `pid` may run on.
fn process_cpus(pid: i32) -> CpuSet {
    let allowed = |status: &str| -> Option<CpuSet> {
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
        CpuSet::parse_list(line.trim()).ok()
    };
    let tasks = fs::read_dir(format!("/proc/{pid}/task"));
    let mut cpus = CpuSet::new();
    for t in tasks.into_iter().flatten().flatten() {
        if let Some(c) = fs::read_to_string(t.path().join("status"))
            .ok()
            .and_then(|s| allowed(&s))
        {
            cpus = cpus.union(&c);
        }
    }
    if cpus.is_empty() {
        if let Some(c) = fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| allowed(&s))
        {
            cpus = c;
        }
    }
    cpus
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 999 1 0000000000000000 100 0 0 10 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5151 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 6161 1 0000000000000000 100 0 0 10 0
";

    #[test]
    fn listeners_are_found_by_port_and_address() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let other: IpAddr = "10.1.2.3".parse().unwrap();
        // Only on little-endian hosts is the fixture's byte order right.
        if cfg!(target_endian = "little") {
            assert_eq!(listening_inodes(TCP, false, lo, 8080), vec![4242]);
            assert_eq!(listening_inodes(TCP, false, other, 8080), Vec::<u64>::new());
            assert_eq!(listening_inodes(TCP, false, other, 80), vec![777]);
            assert_eq!(listening_inodes(TCP6, true, lo, 8081), vec![5151]);
            assert_eq!(listening_inodes(TCP6, true, lo, 8082), vec![6161]);
            assert_eq!(listening_inodes(TCP6, true, other, 8082), Vec::<u64>::new());
        }
        assert!(listening_inodes("garbage\nmore garbage", false, lo, 1).is_empty());
    }

    #[test]
    fn a_server_of_this_process_is_found_with_its_cpus() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mine = smtlab_sys::current_affinity().unwrap();
        match choose(addr, None) {
            // This process is the server, so it may run on every CPU the
            // client may use.
            ClientCpus::Unpinned(Unpinned::ServerEverywhere { pids, server }) => {
                assert_eq!(pids, vec![std::process::id() as i32]);
                assert!(mine.is_subset(&server));
            }
            other => panic!("{other:?}"),
        }
        drop(listener);
        assert_eq!(
            choose(addr, None),
            ClientCpus::Unpinned(Unpinned::NoListener(addr.port()))
        );
        let given: CpuSet = [0].into_iter().collect();
        assert_eq!(choose(addr, Some(&given)).cpus(), vec![0]);
        let far: SocketAddr = "192.0.2.1:80".parse().unwrap();
        assert!(matches!(
            choose(far, None),
            ClientCpus::Unpinned(Unpinned::NotLocal(_))
        ));
    }
}
