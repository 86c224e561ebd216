//! The engine against a mock sampler and an in-memory log: the order of
//! rounds, warm-ups, the stop rule, failures, resume, what is committed
//! before it is announced, and outliers. Nothing runs a workload.

use super::*;
use crate::schedule::round_order;
use crate::testing::{points, spec, value, MemoryLog, MockSampler, RecordingSink, Take};

/// Run the engine to its end; the log's journal gets the events too.
fn run(log: &MemoryLog, n: usize, spec: &RunSpec, sampler: &mut MockSampler) -> RunEnd {
    let mut sink = RecordingSink(log.journal.clone());
    measure(log, &points(n), spec, sampler, &mut sink).expect("the memory log never fails")
}

/// Values that never reach a 2% CI: 1, 2, 1, 2, ...
fn noisy() -> Vec<Take> {
    (0..200)
        .map(|i| value(if i % 2 == 0 { 1.0 } else { 2.0 }))
        .collect()
}

/// The journal's `done` lines.
fn done_lines(log: &MemoryLog) -> Vec<String> {
    log.journal
        .borrow()
        .iter()
        .filter(|l| l.starts_with("done"))
        .cloned()
        .collect()
}

#[test]
fn each_round_measures_every_active_point_once_in_the_seeded_order() {
    let s = spec();
    let log = MemoryLog::default();
    let mut m = MockSampler::same(4, vec![value(10.0)]);
    assert_eq!(run(&log, 4, &s, &mut m), RunEnd::Complete);
    // Constant values stop at min_samples: 5 rounds of all 4 points.
    assert_eq!(m.calls.len(), 20);
    for (r, round) in m.calls.chunks(4).enumerate() {
        let order: Vec<usize> = round.iter().map(|c| c.0).collect();
        assert_eq!(
            order,
            round_order(s.seed, r as u64, &[0, 1, 2, 3]),
            "round {r}"
        );
        assert!(round.iter().all(|c| c.1 == r), "round {r}: {round:?}");
    }
    // Another seed, another order.
    let mut other = MockSampler::same(4, vec![value(10.0)]);
    let s8 = RunSpec { seed: 8, ..spec() };
    run(&MemoryLog::default(), 4, &s8, &mut other);
    assert_ne!(m.calls, other.calls);
}

#[test]
fn a_point_that_stops_leaves_the_later_rounds() {
    let s = spec();
    let log = MemoryLog::default();
    let mut m = MockSampler::new([
        (0, vec![value(10.0)]),
        (1, vec![Take::Fail("boom")]),
        (2, vec![value(10.0)]),
    ]);
    run(&log, 3, &s, &mut m);
    // Point 1 fails in rounds 0, 1, 2 and is given up; rounds 3 and 4
    // interleave points 0 and 2 only, in the order of that active set.
    let rounds: Vec<Vec<usize>> = (0..5)
        .map(|r| m.calls.iter().filter(|c| c.1 == r).map(|c| c.0).collect())
        .collect();
    for (r, order) in rounds.iter().enumerate() {
        let active: &[usize] = if r < 3 { &[0, 1, 2] } else { &[0, 2] };
        assert_eq!(*order, round_order(s.seed, r as u64, active), "round {r}");
    }
}

#[test]
fn warm_ups_come_first_are_flagged_and_do_not_count() {
    let s = RunSpec {
        warmup: 2,
        min_samples: 3,
        ..spec()
    };
    // Wild warm-ups, steady measurements: if the warm-ups counted, the
    // point could not reach 2% at 3 samples and 1000 would be an outlier.
    let script = vec![value(1000.0), value(1000.0), value(10.0)];
    let log = MemoryLog::default();
    let mut m = MockSampler::same(3, script);
    run(&log, 3, &s, &mut m);
    for p in 0..3 {
        let calls: Vec<(usize, bool)> = m
            .calls
            .iter()
            .filter(|c| c.0 == p)
            .map(|c| (c.1, c.2))
            .collect();
        assert_eq!(
            calls,
            [(0, true), (1, true), (2, false), (3, false), (4, false)],
            "point {p}"
        );
        let stored = log.samples.borrow()[&(p as i64 + 1)].clone();
        assert_eq!(
            stored.iter().map(|x| x.warmup).collect::<Vec<_>>(),
            [true, true, false, false, false]
        );
        assert_eq!(log.outliers.borrow()[&(p as i64 + 1)], Vec::<usize>::new());
    }
    // Warm-ups take each point's first rounds, all points alike.
    assert!(m.calls[..6].iter().all(|c| c.2));
    assert!(done_lines(&log)
        .iter()
        .all(|l| l.ends_with("precision_reached")));
}

#[test]
fn the_stop_rule_ends_each_point_for_its_reason() {
    // Precision: constant values stop at exactly min_samples.
    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, vec![value(5.0)]);
    run(&log, 1, &spec(), &mut m);
    assert_eq!(m.calls.len(), 5);
    assert_eq!(done_lines(&log), ["done 0 precision_reached"]);

    // The sample cap: noisy values run to max_samples.
    let s = RunSpec {
        max_samples: 8,
        ..spec()
    };
    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, noisy());
    run(&log, 1, &s, &mut m);
    assert_eq!(m.calls.len(), 8);
    assert_eq!(done_lines(&log), ["done 0 max_samples"]);

    // The time budget, on the sampler's clock: 2 s samples against 5 s.
    let s = RunSpec {
        min_samples: 10,
        max_time_s: 5.0,
        ..spec()
    };
    let two_seconds: Vec<Take> = (0..20)
        .map(|i| Take::Value {
            metric: if i % 2 == 0 { 1.0 } else { 2.0 },
            seconds: 2.0,
        })
        .collect();
    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, two_seconds);
    run(&log, 1, &s, &mut m);
    assert_eq!(m.calls.len(), 3, "4 s spent after 2 samples, 6 s after 3");
    assert_eq!(done_lines(&log), ["done 0 max_time"]);
}

#[test]
fn warm_ups_stop_when_the_time_budget_is_spent_and_a_short_point_is_said() {
    // 5 warm-ups of 2 s against --max-time 3 s: two warm-ups spend the
    // budget; then one measured sample (a point never ends without one).
    let s = RunSpec {
        warmup: 5,
        min_samples: 4,
        max_time_s: 3.0,
        ..spec()
    };
    let two_seconds = vec![Take::Value {
        metric: 1.0,
        seconds: 2.0,
    }];
    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, two_seconds);
    run(&log, 1, &s, &mut m);
    assert_eq!(m.calls, [(0, 0, true), (0, 1, true), (0, 2, false)]);
    assert_eq!(done_lines(&log), ["done 0 max_time"]);
    let warnings: Vec<String> = log
        .journal
        .borrow()
        .iter()
        .filter(|l| l.starts_with("warning"))
        .cloned()
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .contains("1 of --min-samples 4 samples measured when its --max-time 3 s ran out"),
        "{}",
        warnings[0]
    );
}

#[test]
fn three_failures_in_a_row_give_up_on_a_point_and_the_others_go_on() {
    let log = MemoryLog::default();
    let mut m = MockSampler::new([(0, vec![value(10.0)]), (1, vec![Take::Fail("it crashed")])]);
    assert_eq!(run(&log, 2, &spec(), &mut m), RunEnd::Complete);
    assert_eq!(m.seqs_of(1), [0, 1, 2]);
    assert_eq!(m.seqs_of(0), [0, 1, 2, 3, 4]);
    let journal = log.journal.borrow();
    let warning = journal
        .iter()
        .find(|l| l.starts_with("warning"))
        .expect("a warning");
    assert!(
        warning.contains("point 1") && warning.contains("failed 3 times in a row"),
        "{warning}"
    );
    assert!(warning.ends_with("it crashed"), "{warning}");
    assert!(journal.contains(&"done 1 failed".to_string()));
}

#[test]
fn scattered_failures_do_not_stop_a_point_but_count_toward_the_cap() {
    // Fail, fail, succeed, ...: never three in a row, so the point is not
    // given up; only 1 attempt in 3 succeeds, so it never reaches
    // min_samples, and the cap on attempts (2 x max_samples) ends it.
    let pattern: Vec<Take> = (0..30)
        .map(|i| {
            if i % 3 == 2 {
                value(10.0)
            } else {
                Take::Fail("flaky")
            }
        })
        .collect();
    let s = RunSpec {
        max_samples: 4,
        ..spec()
    };
    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, pattern);
    run(&log, 1, &s, &mut m);
    assert_eq!(m.calls.len(), 8);
    assert_eq!(done_lines(&log), ["done 0 max_samples"]);
    assert!(!log
        .journal
        .borrow()
        .iter()
        .any(|l| l.starts_with("warning")));
}

/// Three points that stop at different rounds, with a warm-up each.
fn resume_scripts() -> MockSampler {
    MockSampler::new([
        (0, vec![value(10.0)]),
        (1, noisy()),
        (2, [vec![Take::Fail("once")], noisy()].concat()),
    ])
}

fn resume_spec() -> RunSpec {
    RunSpec {
        warmup: 1,
        max_samples: 8,
        ..spec()
    }
}

#[test]
fn a_resumed_run_goes_on_exactly_where_it_stopped() {
    let s = resume_spec();
    let whole_log = MemoryLog::default();
    let mut whole = resume_scripts();
    run(&whole_log, 3, &s, &mut whole);
    assert!(whole.calls.len() > 10);
    for k in 1..whole.calls.len() {
        // Interrupted (Ctrl-C seen between samples) after k samples ...
        let log = MemoryLog::default();
        let mut first = resume_scripts();
        first.interrupt_after = Some(k);
        assert_eq!(run(&log, 3, &s, &mut first), RunEnd::Interrupted, "k = {k}");
        assert_eq!(first.calls.len(), k);
        // ... then resumed from what the log holds.
        let mut rest = resume_scripts();
        assert_eq!(run(&log, 3, &s, &mut rest), RunEnd::Complete, "k = {k}");
        let both: Vec<_> = first.calls.iter().chain(&rest.calls).cloned().collect();
        assert_eq!(
            both, whole.calls,
            "k = {k}: the resumed run took another course"
        );
        assert_eq!(log.committed(), whole_log.committed(), "k = {k}");
        // Nothing committed was sampled again: seqs go on.
        for p in 0..3 {
            let before = first.seqs_of(p).len();
            assert!(
                rest.seqs_of(p).iter().all(|&q| q >= before),
                "k = {k}, point {p}"
            );
        }
    }
}

#[test]
fn a_sample_interrupted_midway_is_not_stored_and_is_taken_again() {
    let s = resume_spec();
    let log = MemoryLog::default();
    // Point 1's third sample is cut short by Ctrl-C.
    let mut broken = noisy();
    broken[2] = Take::Interrupt;
    let mut first = MockSampler::new([
        (0, vec![value(10.0)]),
        (1, broken),
        (2, [vec![Take::Fail("once")], noisy()].concat()),
    ]);
    assert_eq!(run(&log, 3, &s, &mut first), RunEnd::Interrupted);
    assert!(first.calls.contains(&(1, 2, false)));
    assert!(!log.committed().contains(&(2, 2, false)), "not stored");
    let mut rest = resume_scripts();
    run(&log, 3, &s, &mut rest);
    assert_eq!(rest.seqs_of(1).first(), Some(&2), "taken again");
}

#[test]
fn points_already_done_are_announced_and_not_sampled_again() {
    let s = resume_spec();
    let log = MemoryLog::default();
    let mut whole = resume_scripts();
    run(&log, 3, &s, &mut whole);
    log.journal.borrow_mut().clear();
    let mut again = resume_scripts();
    assert_eq!(run(&log, 3, &s, &mut again), RunEnd::Complete);
    assert!(again.calls.is_empty());
    assert_eq!(done_lines(&log).len(), 3);
}

#[test]
fn every_sample_is_committed_before_it_is_announced() {
    let log = MemoryLog::default();
    let mut m = MockSampler::same(3, noisy());
    run(
        &log,
        3,
        &RunSpec {
            warmup: 1,
            ..spec()
        },
        &mut m,
    );
    let journal = log.journal.borrow();
    let mut announced = 0;
    for (i, line) in journal.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("sample ") {
            let (p, seq) = rest.split_once(' ').unwrap();
            let id: i64 = p.parse::<i64>().unwrap() + 1;
            assert_eq!(journal[i - 1], format!("commit {id} {seq}"), "line {i}");
            announced += 1;
        }
    }
    assert_eq!(announced, m.calls.len());
}

#[test]
fn a_log_that_cannot_commit_stops_the_run_with_its_error() {
    let log = MemoryLog {
        fail_after: Some(3),
        ..MemoryLog::default()
    };
    let mut sink = RecordingSink(log.journal.clone());
    let mut m = MockSampler::same(2, vec![value(10.0)]);
    let end = measure(&log, &points(2), &spec(), &mut m, &mut sink);
    assert_eq!(end, Err(crate::testing::LogFull));
    assert_eq!(
        m.calls.len(),
        4,
        "the fourth sample was taken, not committed"
    );
    let announced = log
        .journal
        .borrow()
        .iter()
        .filter(|l| l.starts_with("sample"))
        .count();
    assert_eq!(announced, 3, "only committed samples are announced");
}

#[test]
fn outliers_are_flagged_at_the_end_and_on_interruption() {
    let mut script = vec![value(10.0); 12];
    script[3] = value(100.0);
    let s = RunSpec {
        min_samples: 10,
        ..spec()
    };
    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, script.clone());
    run(&log, 1, &s, &mut m);
    assert_eq!(log.outliers.borrow()[&1], [3]);

    let log = MemoryLog::default();
    let mut m = MockSampler::same(1, script);
    m.interrupt_after = Some(6);
    assert_eq!(run(&log, 1, &s, &mut m), RunEnd::Interrupted);
    assert_eq!(log.outliers.borrow()[&1], [3]);
}
