//! The measurements behind the benchmark `dsm_fetch`: a 4 KiB page fetched
//! from its home through the DSM (fault, GETP, reply, page installed, the
//! access retried) against a plain blocking UDP ping-pong of the same size
//! between two threads — the floor any message layer over UDP stands on.
//! Both run two threads of this process, each pinned to its own CPU (the
//! DSM's communication threads inherit their rank's CPU). The two ranks'
//! sockets are connected to each other (as in every two-rank job), so the
//! ping-pong held against them is the connected one; the unconnected one is
//! there to show what a socket with several peers pays.

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smtlab_dsm_apps::{Home, Shared, Words};
use smtlab_dsm_params::DsmPointParams;
use smtlab_sys::{DsmRegion, PageAccess, DSM_PAGE};
use smtlab_types::{Comm, CpuSet};

use crate::error::RankError;
use crate::protocol::PAGE_WORDS;
use crate::rank::{start_node, RankArgs};
use crate::registry::SignalTarget;
use crate::rendezvous::Rendezvous;

fn pin(cpu: Option<u32>) {
    if let Some(c) = cpu {
        let tid = nix::unistd::gettid().as_raw();
        let _ = smtlab_sys::set_affinity(tid, &CpuSet::from_iter([c]));
    }
}

/// Pages fetched between two invalidations.
const BATCH: usize = 64;

/// Mean nanoseconds per fetch of `rounds` fetches after `rounds / 10`
/// unmeasured ones, in batches: `invalidate(n)` drops the first `n` of
/// [`BATCH`] pages at once, untimed (a DSM invalidates at acquires and
/// barriers, not as part of a fetch), then `read(i)` reads page `i`'s first
/// word, each read a fetch, timed. Also the sum of the words read, which
/// [`check_seen`] checks.
fn fetch_batches<E>(
    rounds: usize,
    mut invalidate: impl FnMut(usize) -> Result<(), E>,
    read: impl Fn(usize) -> u64,
) -> Result<(f64, u64), E> {
    let warm = rounds / 10;
    let mut seen = 0;
    let mut batches = |fetches: usize| -> Result<u128, E> {
        let mut ns = 0;
        let mut left = fetches;
        while left > 0 {
            let n = left.min(BATCH);
            invalidate(n)?;
            let t0 = Instant::now();
            for i in 0..n {
                seen += read(i);
            }
            ns += t0.elapsed().as_nanos();
            left -= n;
        }
        Ok(ns)
    };
    batches(warm)?;
    let ns = batches(rounds)? as f64 / rounds as f64;
    Ok((ns, seen))
}

/// Every page fetched by [`fetch_batches`] held its value, 42.
fn check_seen(seen: u64, rounds: usize) {
    assert_eq!(
        seen,
        42 * (rounds + rounds / 10) as u64,
        "a fetched page held its value"
    );
}

/// Mean nanoseconds per page fetch of `rounds` fetches by rank 1 from rank
/// 0 (the pages' home), after `rounds / 10` unmeasured ones: batches of
/// 64 distinct pages, invalidated together between batches.
pub fn page_fetch_ns(comm: Comm, rounds: usize, cpus: [Option<u32>; 2]) -> Result<f64, RankError> {
    let dir = std::env::temp_dir().join(format!(
        "smtlab-fetch-{}-{}",
        std::process::id(),
        crate::clock::now_ns()
    ));
    let result = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..2)
        .map(|rank| {
            let args = RankArgs {
                comm,
                params: DsmPointParams::parse("sor", &BTreeMap::new())
                    .expect("sor's defaults are valid"),
                rank,
                ranks: 2,
                rendezvous: Rendezvous::Dir(dir.clone()),
                bind: "127.0.0.1".parse().expect("an address"),
                seed: 1,
                meet_timeout: Duration::from_secs(20),
                stall_timeout: crate::DEFAULT_STALL_TIMEOUT,
            };
            let result = Arc::clone(&result);
            std::thread::spawn(move || -> Result<(), RankError> {
                pin(cpus[rank]);
                // One allocation of BATCH pages.
                let (node, threads) = start_node(&args, 0.0, BATCH)?;
                let region = node.alloc(BATCH * PAGE_WORDS, Home::Rank(0));
                let first = region.offset / PAGE_WORDS;
                if rank == 0 {
                    let words = node.words(region);
                    for i in 0..BATCH {
                        words.set_u64(i * PAGE_WORDS, 42);
                    }
                }
                node.barrier();
                if rank == 1 {
                    let words = node.words(region);
                    let getp = node.snapshot().getp;
                    let (ns, seen) = fetch_batches(
                        rounds,
                        |n| {
                            node.forget_pages(first, n);
                            Ok::<(), RankError>(())
                        },
                        |i| words.u64_at(i * PAGE_WORDS),
                    )?;
                    check_seen(seen, rounds);
                    // Every access measured was a fetch, not a hit on a
                    // copy the invalidation missed.
                    assert_eq!(
                        node.snapshot().getp - getp,
                        (rounds + rounds / 10) as u64,
                        "page fetches"
                    );
                    result.store(ns.to_bits(), Ordering::Relaxed);
                }
                node.barrier();
                let _ = node.finish(b"{}", Duration::from_secs(10));
                node.stop(threads);
                Ok(())
            })
        })
        .collect();
    let mut error = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => error = error.or(Some(e)),
            Err(_) => {
                error = error.or(Some(RankError::Failed {
                    rank: 1,
                    what: "panicked".into(),
                }))
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    match error {
        Some(e) => Err(e),
        None => Ok(f64::from_bits(result.load(Ordering::Relaxed))),
    }
}

/// Mean nanoseconds per round trip of a plain blocking UDP ping-pong:
/// `size` bytes each way between two threads on 127.0.0.1. `connected`:
/// each socket connected to the other (`send`/`recv`, the kernel keeps the
/// route), as a two-rank DSM's are; otherwise `send_to`/`recv_from`, as a
/// socket serving several peers must.
pub fn udp_ping_pong_ns(
    rounds: usize,
    size: usize,
    cpus: [Option<u32>; 2],
    connected: bool,
) -> std::io::Result<f64> {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    let (a_addr, b_addr) = (a.local_addr()?, b.local_addr()?);
    if connected {
        a.connect(b_addr)?;
        b.connect(a_addr)?;
    }
    let warm = rounds / 10;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        pin(cpus[0]);
        let mut buf = vec![0u8; size + 64];
        for _ in 0..warm + rounds {
            if connected {
                let n = b.recv(&mut buf)?;
                b.send(&buf[..n])?;
            } else {
                let (n, from) = b.recv_from(&mut buf)?;
                b.send_to(&buf[..n], from)?;
            }
        }
        Ok(())
    });
    let ping = std::thread::spawn(move || -> std::io::Result<f64> {
        pin(cpus[1]);
        let msg = vec![7u8; size];
        let mut buf = vec![0u8; size + 64];
        let mut t0 = Instant::now();
        for i in 0..warm + rounds {
            if i == warm {
                t0 = Instant::now();
            }
            let n = if connected {
                a.send(&msg)?;
                a.recv(&mut buf)?
            } else {
                a.send_to(&msg, b_addr)?;
                a.recv_from(&mut buf)?.0
            };
            assert_eq!(n, size, "the echo came back whole");
        }
        Ok(t0.elapsed().as_nanos() as f64 / rounds as f64)
    });
    let ns = ping.join().expect("the ping thread")?;
    echo.join().expect("the echo thread")?;
    Ok(ns)
}

/// The floor of a fault-driven page fetch on this machine: what the
/// DSM's fetch does in the kernel, and nothing else. The faulting thread's
/// SIGSEGV handler sends the page's number on a connected UDP socket, opens
/// the page for reading while the request travels, sleeps in a blocking
/// read of the 4 KiB reply and copies it into the page through the
/// region's second view; the other thread answers with a blocking read and
/// a send. No message layer (sequence numbers, acknowledgements,
/// retransmission timers, serving): the DSM's fetch can approach this, not
/// beat it.
struct FaultFloor {
    region: DsmRegion,
    socket: UdpSocket,
    reply: std::sync::Mutex<Vec<u8>>,
    /// A send or read failed (a fetch then completes with whatever the
    /// page holds, and the measurement is an error).
    failed: std::sync::atomic::AtomicBool,
}

impl SignalTarget for FaultFloor {
    fn owns(&self, addr: usize) -> bool {
        self.region.app_range().contains(&addr)
    }

    fn fault(&self, addr: usize) -> bool {
        let p = (addr - self.region.app_range().start) / DSM_PAGE;
        // Only this thread faults here, so the lock is always free.
        let mut reply = self.reply.lock().unwrap_or_else(|e| e.into_inner());
        let sent = self.socket.send(&(p as u32).to_le_bytes()).is_ok();
        if self.region.protect(p, 1, PageAccess::Read).is_err() {
            return false;
        }
        if !sent || !matches!(self.socket.recv(&mut reply), Ok(DSM_PAGE)) {
            self.failed.store(true, Ordering::Relaxed);
            return true;
        }
        let words = &self.region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
        for (w, b) in words.iter().zip(reply.chunks_exact(8)) {
            w.store(
                u64::from_le_bytes(b.try_into().expect("8 bytes")),
                Ordering::Relaxed,
            );
        }
        true
    }

    fn on_io_signal(&self) {}
}

/// Mean nanoseconds per fault-driven page fetch at the floor: the fault,
/// the page's number sent on a connected UDP socket, the page opened while
/// it travels, the 4 KiB reply read and copied in, the access retried —
/// the kernel's part of a DSM fetch, with no message layer. `rounds`
/// fetches after `rounds / 10` unmeasured ones, in batches of 64 distinct
/// pages invalidated together, untimed, as [`page_fetch_ns`] does. The
/// thread answering runs on `cpus[0]`, the faulting one on `cpus[1]`.
pub fn fault_floor_ns(rounds: usize, cpus: [Option<u32>; 2]) -> std::io::Result<f64> {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    // A lost datagram (loopback drops none unless a buffer is full) ends
    // the measurement instead of hanging it.
    a.set_read_timeout(Some(Duration::from_secs(10)))?;
    b.set_read_timeout(Some(Duration::from_secs(10)))?;
    let warm = rounds / 10;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        pin(cpus[0]);
        // One page per page fetched, as the DSM's home serves them (the
        // same page every time would be served from the cache).
        let mut pages = vec![0u8; BATCH * DSM_PAGE];
        for page in pages.chunks_exact_mut(DSM_PAGE) {
            page[..8].copy_from_slice(&42u64.to_le_bytes());
        }
        let mut request = [0u8; 64];
        for _ in 0..warm + rounds {
            b.recv(&mut request)?;
            let p = u32::from_le_bytes(request[..4].try_into().expect("4 bytes")) as usize % BATCH;
            let page = &pages[p * DSM_PAGE..(p + 1) * DSM_PAGE];
            b.send(page)?;
        }
        Ok(())
    });
    let fetch = std::thread::spawn(move || -> std::io::Result<f64> {
        pin(cpus[1]);
        let floor = Arc::new(FaultFloor {
            region: DsmRegion::new(BATCH)?,
            socket: a,
            reply: std::sync::Mutex::new(vec![0u8; DSM_PAGE + 64]),
            failed: std::sync::atomic::AtomicBool::new(false),
        });
        crate::registry::register(Arc::clone(&floor) as Arc<dyn SignalTarget>)?;
        let words = floor.region.app_words();
        let measured = fetch_batches(
            rounds,
            |n| floor.region.protect(0, n, PageAccess::None),
            |i| words[i * PAGE_WORDS].load(Ordering::Relaxed),
        );
        crate::registry::unregister();
        if floor.failed.load(Ordering::Relaxed) {
            return Err(std::io::Error::other(
                "a fetch at the floor lost its request or reply",
            ));
        }
        let (ns, seen) = measured?;
        check_seen(seen, rounds);
        Ok(ns)
    });
    let ns = fetch.join().expect("the faulting thread")?;
    echo.join().expect("the answering thread")?;
    Ok(ns)
}
