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
use smtlab_types::{Comm, CpuSet};

use crate::protocol::PAGE_WORDS;
use crate::rank::{start_node, RankArgs, RankError};
use crate::rendezvous::Rendezvous;

fn pin(cpu: Option<u32>) {
    if let Some(c) = cpu {
        let tid = nix::unistd::gettid().as_raw();
        let _ = smtlab_sys::set_affinity(tid, &CpuSet::from_iter([c]));
    }
}

/// Pages fetched between two invalidations.
const BATCH: usize = 64;

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
                app: "sor".into(),
                comm,
                params: BTreeMap::new(),
                rank,
                ranks: 2,
                rendezvous: Rendezvous::Dir(dir.clone()),
                bind: "127.0.0.1".parse().expect("an address"),
                seed: 1,
                meet_timeout: Duration::from_secs(20),
            };
            let result = Arc::clone(&result);
            std::thread::spawn(move || -> Result<(), RankError> {
                pin(cpus[rank]);
                let (node, threads) = start_node(&args, 0.0)?;
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
                    let mut seen = 0;
                    // Each batch: every page invalidated at once (one
                    // mprotect, untimed: a DSM invalidates at acquires and
                    // barriers, not as part of a fetch), then each fetched
                    // by one access.
                    let mut batch = |timed: usize| {
                        let mut ns = 0;
                        let mut left = timed;
                        while left > 0 {
                            let n = left.min(BATCH);
                            node.forget_pages(first, n);
                            let t0 = Instant::now();
                            for i in 0..n {
                                seen += words.u64_at(i * PAGE_WORDS);
                            }
                            ns += t0.elapsed().as_nanos();
                            left -= n;
                        }
                        ns
                    };
                    let getp = node.snapshot().getp;
                    batch(rounds / 10);
                    let ns = batch(rounds) as f64 / rounds as f64;
                    assert_eq!(
                        seen,
                        42 * (rounds + rounds / 10) as u64,
                        "a fetched page held its value"
                    );
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
