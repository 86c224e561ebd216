//! Machines at the size limit (65536 PUs, 1024 NUMA nodes) go through
//! everything `smtlab topology` and `smtlab place` do with them: build,
//! render, restrict, list affinity domains, place the most workers a run
//! takes. Each machine stresses one dimension (one core of every PU, a core
//! per PU, the most NUMA nodes, a cache per core at every level, the most
//! last-level caches), where a step once searched a list per PU or per
//! object: 374 s to build `l3:64 l2:16 l1:64 core:1`, 57 s to list the
//! domains of 3137 caches and nodes, minutes for scatter over 32768 L2s.
//!
//! Timing is not what is asserted: performance claims belong in
//! benchmarks, and a bound close to the real time would fail on a busy
//! machine. Each step runs under a watchdog 30 times longer than it takes
//! in a debug build here (about a second at most), so a quadratic step
//! (minutes at this size) fails by name instead of stalling the suite,
//! and a linear one never trips it.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use smtlab_topology::placement::{place, Policy};
use smtlab_topology::{cpu_expr, render_tree, summary_line, synthetic, Topology};

/// Generous: see the module comment.
const WATCHDOG: Duration = Duration::from_secs(30);

/// `f()`, on its own thread; fails naming `what` when it is not done in
/// [`WATCHDOG`] (the thread is left running; the test process ends).
fn finishes<T: Send + 'static>(what: String, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(v) => v,
        Err(RecvTimeoutError::Timeout) => {
            panic!("{what}: not done after {WATCHDOG:?}; a step is quadratic again")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("{what}: panicked"),
    }
}

#[test]
fn machines_at_the_size_limit_build_render_and_place() {
    for spec in [
        "core:1 pu:65536",
        "core:65536",
        "numa:1024 core:64",
        "l3:64 l2:16 l1:64 core:1",
        "l2:32768 core:2",
    ] {
        let t: Topology = finishes(format!("building `{spec}`"), move || {
            synthetic::parse(spec).unwrap()
        });
        assert_eq!(t.pus.len(), 65536, "{spec}");
        let t = std::sync::Arc::new(t);
        let step = |what: &str, f: fn(&Topology) -> usize| {
            let t = t.clone();
            finishes(format!("{what} of `{spec}`"), move || f(&t))
        };
        // The tree has a line per PU at least.
        assert!(step("render_tree", |t| render_tree(t).lines().count()) > 65536);
        assert!(step("summary_line", |t| summary_line(t).len()) > 0);
        assert_eq!(
            step("restricted_to_allowed", |t| t
                .restricted_to_allowed()
                .pus
                .len()),
            65536
        );
        let domains = step("domains", |t| cpu_expr::domains(t).len());
        assert!(domains >= 2, "{spec}: N and S0 at least");
        for policy in ["compact", "scatter"] {
            let p: Policy = policy.parse().unwrap();
            let n = finishes(format!("placing {policy} on `{spec}`"), {
                let t = t.clone();
                move || {
                    let cpus = place(&t, &p, 65535).unwrap().cpus.unwrap();
                    cpus.iter().collect::<std::collections::HashSet<_>>().len()
                }
            });
            assert_eq!(n, 65535, "{policy} on {spec}: every worker its own PU");
        }
    }
}
