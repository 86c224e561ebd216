//! Every mechanism runs every application to a verified result, with the
//! ranks as threads of this process (the CLI tests run them as processes).

use std::collections::BTreeMap;
use std::time::Duration;

use smtlab_dsm::{run_local_threads, DsmPointParams, RankArgs, Rendezvous};
use smtlab_types::Comm;

fn args(app: &str, comm: Comm, ranks: usize, params: &[(&str, &str)]) -> RankArgs {
    RankArgs {
        comm,
        params: DsmPointParams::parse(
            app,
            &params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        )
        .unwrap_or_else(|e| panic!("{app} {params:?}: {e}")),
        rank: 0,
        ranks,
        rendezvous: Rendezvous::Dir(std::env::temp_dir()),
        bind: "127.0.0.1".parse().unwrap(),
        seed: 7,
        meet_timeout: Duration::from_secs(20),
        stall_timeout: smtlab_dsm::DEFAULT_STALL_TIMEOUT,
    }
}

#[test]
fn sor_verifies_under_every_mechanism() {
    for comm in Comm::ALL {
        let r = run_local_threads(&args("sor", comm, 2, &[("n", "64"), ("iterations", "4")]))
            .unwrap_or_else(|e| panic!("{comm}: {e}"));
        assert!(r.verified, "{comm}: {}", r.verify_detail);
        let getp: u64 = r.per_rank.iter().map(|s| s.getp).sum();
        let barriers = r.per_rank[0].barriers;
        assert!(getp > 0, "{comm}: no page fetched");
        assert!(
            barriers >= 8,
            "{comm}: two barriers per iteration, {barriers}"
        );
        eprintln!(
            "{comm}: {:.3} s, getp {getp}, msgs {}",
            r.wall_s,
            r.per_rank.iter().map(|s| s.messages_sent).sum::<u64>()
        );
    }
}

#[test]
fn lu_and_tsp_verify_under_every_mechanism_at_three_ranks() {
    for comm in Comm::ALL {
        let lu = run_local_threads(&args("lu", comm, 3, &[("n", "64"), ("block", "16")]))
            .unwrap_or_else(|e| panic!("lu {comm}: {e}"));
        assert!(lu.verified, "lu {comm}: {}", lu.verify_detail);
        let diffs: u64 = lu.per_rank.iter().map(|s| s.diffs).sum();
        let getp: u64 = lu.per_rank.iter().map(|s| s.getp).sum();
        assert!(getp > 0, "lu {comm}: no page fetched");
        let tsp = run_local_threads(&args("tsp", comm, 3, &[("cities", "9")]))
            .unwrap_or_else(|e| panic!("tsp {comm}: {e}"));
        assert!(tsp.verified, "tsp {comm}: {}", tsp.verify_detail);
        let locks: u64 = tsp.per_rank.iter().map(|s| s.locks).sum();
        assert!(locks > 0, "tsp {comm}: no lock taken");
        eprintln!("{comm}: lu getp {getp} diffs {diffs}; tsp locks {locks}");
    }
}

#[test]
fn five_percent_loss_still_verifies_and_counts_retransmissions() {
    for comm in Comm::ALL {
        // Totals over the three applications: a small SOR or LU run sends
        // a few dozen datagrams, and its one or two drops may all be
        // stand-alone acks, which a later cumulative ack makes good without
        // a retransmission; TSP's hundreds of messages lose data for sure.
        let (mut dropped, mut retx) = (0u64, 0u64);
        for app in ["sor", "lu", "tsp"] {
            let params: &[(&str, &str)] = match app {
                "sor" => &[("n", "64"), ("iterations", "4"), ("loss", "0.05")],
                "lu" => &[("n", "64"), ("block", "16"), ("loss", "0.05")],
                _ => &[("cities", "8"), ("loss", "0.05")],
            };
            let r = run_local_threads(&args(app, comm, 2, params))
                .unwrap_or_else(|e| panic!("{app} {comm}: {e}"));
            assert!(r.verified, "{app} {comm}: {}", r.verify_detail);
            let d: u64 = r.per_rank.iter().map(|s| s.injected_drops).sum();
            let x: u64 = r.per_rank.iter().map(|s| s.retransmissions).sum();
            // Exactly-once delivery is the message layer's (its own tests);
            // here a lost reply would hang the run and a diff applied twice
            // or lost would fail its verification.
            eprintln!(
                "{app} {comm}: {:.3} s, drops {d}, retransmissions {x}",
                r.wall_s
            );
            dropped += d;
            retx += x;
        }
        assert!(
            dropped > 0 && retx > 0,
            "{comm}: drops {dropped}, retransmissions {retx} over SOR, LU and TSP"
        );
    }
}

#[test]
fn a_page_fetch_round_trip_is_measured_for_every_mechanism() {
    let plain = smtlab_dsm::udp_ping_pong_ns(2000, 4096, [Some(0), Some(1)], true).unwrap();
    assert!(plain > 0.0);
    let unconnected = smtlab_dsm::udp_ping_pong_ns(2000, 4096, [Some(0), Some(1)], false).unwrap();
    assert!(unconnected > 0.0);
    let floor = smtlab_dsm::fault_floor_ns(2000, [Some(0), Some(1)]).unwrap();
    assert!(floor.is_finite() && floor > 0.0, "{floor}");
    for comm in Comm::ALL {
        let ns = smtlab_dsm::page_fetch_ns(comm, 2000, [Some(0), Some(1)])
            .unwrap_or_else(|e| panic!("{comm}: {e}"));
        assert!(ns.is_finite() && ns > 0.0, "{comm}: {ns}");
        eprintln!(
            "{comm}: {:.1} us per fetch (plain UDP {:.1} us)",
            ns / 1e3,
            plain / 1e3
        );
    }
}

#[test]
fn the_time_split_adds_up_and_thread_mechanisms_report_their_threads() {
    for comm in Comm::ALL {
        let r = run_local_threads(&args("lu", comm, 2, &[("n", "128"), ("block", "16")]))
            .unwrap_or_else(|e| panic!("{comm}: {e}"));
        for s in &r.per_rank {
            let section = s.end_s - s.start_s;
            let t = &s.time;
            let parts = t.compute_s + t.fault_s + t.sync_s + t.serve_s;
            assert!(
                (parts - section).abs() < 1e-6 || t.compute_s == 0.0,
                "{comm}: {t:?} vs {section}"
            );
            assert!(
                t.wait_s <= t.fault_s + t.sync_s + 1e-6,
                "{comm}: wait is inside fault and sync: {t:?}"
            );
            let names: Vec<&str> = s.threads.iter().map(|t| t.name.as_str()).collect();
            let expected: &[&str] = match comm {
                Comm::Thr1 => &["main", "comm"],
                Comm::Thr2 => &["main", "send", "recv"],
                Comm::Thr3 => &["main", "send", "recv", "serve"],
                _ => &["main"],
            };
            assert_eq!(names, expected, "{comm}");
            if matches!(comm, Comm::Sigio | Comm::Poll) {
                // Requests are served on the computing thread.
                assert!(
                    s.served == 0 || t.serve_s > 0.0 || t.wait_s > 0.0,
                    "{comm}: {s:?}"
                );
            } else {
                assert_eq!(t.serve_s, 0.0, "{comm}: threads serve, not the computation");
            }
        }
    }
}
