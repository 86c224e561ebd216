//! The measurements behind the benchmark `dsm_fetch`: a 4 KiB page fetched
//! from its home through the DSM (fault, GETP, reply, page installed, the
//! access retried) against a plain blocking UDP ping-pong of the same size
//! between two threads — the floor any message layer over UDP stands on.
//! Both run two threads of this process, each pinned to its own CPU (the
//! DSM's communication threads inherit their rank's CPU).

use std::collections::BTreeMap;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smtlab_dsm_apps::{Home, Shared, Words};
use smtlab_types::{Comm, CpuSet};

use crate::rank::{start_node, RankArgs, RankError};
use crate::rendezvous::Rendezvous;

fn pin(cpu: Option<u32>) {
    if let Some(c) = cpu {
        let tid = nix::unistd::gettid().as_raw();
        let _ = smtlab_sys::set_affinity(tid, &CpuSet::from_iter([c]));
    }
}

/// Mean nanoseconds per page fetch of `rounds` fetches by rank 1 from rank
/// 0 (the page's home), after `rounds / 10` unmeasured ones.
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
                let region = node.alloc(512, Home::Rank(0));
                if rank == 0 {
                    node.words(region).set_u64(0, 42);
                }
                node.barrier();
                if rank == 1 {
                    let words = node.words(region);
                    let page = region.offset / 512;
                    let mut seen = 0;
                    for _ in 0..rounds / 10 {
                        node.forget_page(page);
                        seen += words.u64_at(0);
                    }
                    let t0 = Instant::now();
                    for _ in 0..rounds {
                        node.forget_page(page);
                        seen += words.u64_at(0);
                    }
                    let ns = t0.elapsed().as_nanos() as f64 / rounds as f64;
                    assert_eq!(
                        seen,
                        42 * (rounds + rounds / 10) as u64,
                        "a fetched page held its value"
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
/// `size` bytes each way between two threads on 127.0.0.1.
pub fn udp_ping_pong_ns(
    rounds: usize,
    size: usize,
    cpus: [Option<u32>; 2],
) -> std::io::Result<f64> {
    let a = UdpSocket::bind("127.0.0.1:0")?;
    let b = UdpSocket::bind("127.0.0.1:0")?;
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    let warm = rounds / 10;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        pin(cpus[0]);
        let mut buf = vec![0u8; size + 64];
        for _ in 0..warm + rounds {
            let n = b.recv(&mut buf)?;
            b.send(&buf[..n])?;
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
            a.send(&msg)?;
            let n = a.recv(&mut buf)?;
            assert_eq!(n, size, "the echo came back whole");
        }
        Ok(t0.elapsed().as_nanos() as f64 / rounds as f64)
    });
    let ns = ping.join().expect("the ping thread")?;
    echo.join().expect("the echo thread")?;
    Ok(ns)
}
