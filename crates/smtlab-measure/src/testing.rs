//! Test doubles for the engine's seams: a [`MockSampler`] that returns
//! scripted samples (values, failures, an interruption) on a clock of its
//! own, a [`MemoryLog`] that keeps samples in memory, and a
//! [`RecordingSink`] that writes events into the same [`Journal`] as the
//! log, so a test can see what happened in which order. Like hyperfine's
//! `MockExecutor`: the engine's logic is tested without running anything.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use smtlab_types::{
    Metric, Mode, Model, Outcome, Point, Program, ResourceUsage, RunSpec, Sample, SampleLog,
    SampleStatus, Spawn,
};

use crate::engine::{Event, EventSink};
use crate::sampler::Sampler;

/// One scripted sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Take {
    /// A successful sample with this metric, taking `seconds`.
    Value { metric: f64, seconds: f64 },
    /// A failed sample with this reason.
    Fail(&'static str),
    /// The user pressed Ctrl-C during this sample.
    Interrupt,
}

/// A successful sample of one second.
pub fn value(metric: f64) -> Take {
    Take::Value {
        metric,
        seconds: 1.0,
    }
}

/// Samples scripted per point (by `Point::index`): a point's k-th sample
/// (its seq, warm-ups included) is `script[k]`, the last entry repeating.
pub struct MockSampler {
    scripts: BTreeMap<usize, Vec<Take>>,
    /// Every call: (point index, seq, warm-up).
    pub calls: Vec<(usize, usize, bool)>,
    /// `interrupted()` turns true once this many samples were taken.
    pub interrupt_after: Option<usize>,
    clock_s: f64,
}

impl MockSampler {
    pub fn new(scripts: impl IntoIterator<Item = (usize, Vec<Take>)>) -> MockSampler {
        MockSampler {
            scripts: scripts.into_iter().collect(),
            calls: Vec::new(),
            interrupt_after: None,
            clock_s: 0.0,
        }
    }

    /// The same script for points `0..n`.
    pub fn same(n: usize, script: Vec<Take>) -> MockSampler {
        MockSampler::new((0..n).map(|i| (i, script.clone())))
    }

    /// The seqs sampled of `point`, in order.
    pub fn seqs_of(&self, point: usize) -> Vec<usize> {
        self.calls
            .iter()
            .filter(|c| c.0 == point)
            .map(|c| c.1)
            .collect()
    }
}

impl Sampler for MockSampler {
    fn sample(&mut self, point: &Point, seq: usize, warmup: bool) -> Outcome {
        self.calls.push((point.index, seq, warmup));
        let script = &self.scripts[&point.index];
        let take = script.get(seq).unwrap_or(script.last().expect("a script"));
        let (status, metric, reason, seconds) = match take {
            Take::Value { metric, seconds } => (SampleStatus::Ok, Some(*metric), None, *seconds),
            Take::Fail(why) => (SampleStatus::Failed, None, Some(why.to_string()), 1.0),
            Take::Interrupt => return Outcome::Interrupted,
        };
        self.clock_s += seconds;
        Outcome::Measured(Box::new(Sample {
            seq,
            warmup,
            status,
            reason,
            started_at: self.clock_s - seconds,
            wall_s: seconds,
            ops: metric.map(|_| 1),
            metric,
            usage: ResourceUsage::default(),
            counters: Vec::new(),
            workers: Vec::new(),
            extras: BTreeMap::new(),
        }))
    }

    fn interrupted(&self) -> bool {
        self.interrupt_after.is_some_and(|k| self.calls.len() >= k)
    }

    fn now_s(&self) -> f64 {
        self.clock_s
    }
}

/// What happened, in order: `commit P S` when the log stored sample S of
/// point P, `sample P S` when the engine announced it, `done P WHY`,
/// `warning TEXT`.
pub type Journal = Rc<RefCell<Vec<String>>>;

/// A sample log in memory.
#[derive(Default)]
pub struct MemoryLog {
    pub samples: RefCell<BTreeMap<i64, Vec<Sample>>>,
    pub outliers: RefCell<BTreeMap<i64, Vec<usize>>>,
    pub journal: Journal,
    /// `add_sample` fails from this many commits on.
    pub fail_after: Option<usize>,
}

/// Why the memory log refused a sample.
#[derive(Debug, PartialEq, Eq)]
pub struct LogFull;

impl MemoryLog {
    /// Every committed sample as (point id, seq, warm-up), by point.
    pub fn committed(&self) -> Vec<(i64, usize, bool)> {
        self.samples
            .borrow()
            .iter()
            .flat_map(|(id, v)| v.iter().map(move |s| (*id, s.seq, s.warmup)))
            .collect()
    }

    fn commits(&self) -> usize {
        self.samples.borrow().values().map(Vec::len).sum()
    }
}

impl SampleLog for MemoryLog {
    type Error = LogFull;

    fn samples(&self, point_id: i64) -> Result<Vec<Sample>, LogFull> {
        Ok(self
            .samples
            .borrow()
            .get(&point_id)
            .cloned()
            .unwrap_or_default())
    }

    fn add_sample(&self, point_id: i64, sample: &Sample) -> Result<(), LogFull> {
        if self.fail_after.is_some_and(|k| self.commits() >= k) {
            return Err(LogFull);
        }
        self.samples
            .borrow_mut()
            .entry(point_id)
            .or_default()
            .push(sample.clone());
        self.journal
            .borrow_mut()
            .push(format!("commit {point_id} {}", sample.seq));
        Ok(())
    }

    fn set_outliers(&self, point_id: i64, seqs: &[usize]) -> Result<(), LogFull> {
        self.outliers.borrow_mut().insert(point_id, seqs.to_vec());
        Ok(())
    }
}

/// An event sink writing into a journal.
pub struct RecordingSink(pub Journal);

impl EventSink for RecordingSink {
    fn event(&mut self, e: Event<'_>) {
        let line = match e {
            Event::Sample { point, sample, .. } => format!("sample {} {}", point.index, sample.seq),
            Event::PointDone { point, why } => format!("done {} {why}", point.index),
            Event::Warning(w) => format!("warning {w}"),
        };
        self.0.borrow_mut().push(line);
    }
}

/// `n` points of a built-in workload, ids 1..=n (index 0..n).
pub fn points(n: usize) -> Vec<(i64, Point)> {
    (0..n)
        .map(|i| {
            let point = Point {
                index: i,
                program: Program::Builtin {
                    workload: "spin".into(),
                    params: BTreeMap::new(),
                },
                model: Model::Thread,
                spawn: Spawn::Exec,
                placement: "compact".into(),
                workers: 1,
                cpus: Some(vec![0]),
                oversubscription: 1.0,
                alloc: "glibc".into(),
                mode: Mode::FixedTime { seconds: 1.0 },
                metric: Metric {
                    name: "throughput".into(),
                    unit: "ops/s".into(),
                    higher_is_better: true,
                },
            };
            (i as i64 + 1, point)
        })
        .collect()
}

/// A run specification with the given sampling: no warm-up, 5 to 20
/// samples to 2%, 100 s per point, seed 7.
pub fn spec() -> RunSpec {
    RunSpec {
        comms: Vec::new(),
        programs: Vec::new(),
        models: vec![Model::Thread],
        placements: vec!["compact".parse().expect("a placement")],
        threads: vec![1],
        allocs: vec!["glibc".into()],
        spawn: Spawn::Exec,
        mode: None,
        metric: None,
        warmup: 0,
        min_samples: 5,
        max_samples: 20,
        precision: 0.02,
        max_time_s: 100.0,
        timeout_s: None,
        seed: 7,
        counters: false,
        study: None,
    }
}
