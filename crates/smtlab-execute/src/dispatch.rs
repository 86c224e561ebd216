//! One sample of a point, by the kind of its program: a built-in workload
//! a user command, programs co-running, a server, or the ranks of a DSM
//! application, each but the command with its parameters as planned
//! ([`SampleContext::programs`]). Uses `builtin`, `command`, `co_run`,
//! `server`, `chat_sample`, `dsm_sample` and `context`.

use smtlab_plan::ProgramParams;
use smtlab_types::{Outcome, Point, Program, Sample, SampleStatus};

use crate::context::SampleContext;
use crate::{builtin, chat_sample, co_run, command, dsm_sample, server};

/// Take one sample of `point`.
pub fn run_sample(point: &Point, ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    match (&point.program, ctx.programs.get(&point.program)) {
        (Program::Builtin { .. }, Some(ProgramParams::Builtin(c))) => {
            builtin::run(point, c, ctx, seq, warmup)
        }
        (Program::Command { .. }, _) => command::run(point, ctx, seq, warmup),
        (Program::CoRun { .. }, Some(ProgramParams::CoRun(parts))) => {
            co_run::run(point, parts, ctx, seq, warmup)
        }
        (Program::Server { .. }, Some(ProgramParams::Web(p))) => {
            server::run(point, p, ctx, seq, warmup)
        }
        (Program::Server { .. }, Some(ProgramParams::Chat(p))) => {
            chat_sample::run(point, p, ctx, seq, warmup)
        }
        (Program::Ranks { .. }, Some(ProgramParams::Dsm(p))) => {
            dsm_sample::run(point, p, ctx, seq, warmup)
        }
        (
            Program::Builtin { .. }
            | Program::CoRun { .. }
            | Program::Server { .. }
            | Program::Ranks { .. },
            _,
        ) => unplanned(point, seq, warmup),
    }
}

/// A point whose program the context does not hold: a run measured
/// without its plan's parameters (a caller's mistake), failed rather than
/// guessed at.
fn unplanned(point: &Point, seq: usize, warmup: bool) -> Outcome {
    Outcome::Measured(Box::new(Sample::without_result(
        seq,
        warmup,
        SampleStatus::Failed,
        format!(
            "{}: its parameters were not planned with the run",
            point.program.label()
        ),
        smtlab_sys::unix_now_s(),
        0.0,
    )))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    use smtlab_chat::params::ChatParams;
    use smtlab_dsm::DsmPointParams;
    use smtlab_web::params::WebParams;
    use smtlab_workloads::WorkloadConfig;

    use super::*;
    use crate::protocol::WorkerSpec;
    use crate::server_lifecycle::tests::{context, web_point};

    /// A built-in's, a server's and a DSM point's sample take the
    /// parameters planning parsed, in their products' types, and a
    /// built-in's workers are handed them in their spec: these lines
    /// compile only while the samples take them so (and not a map of text
    /// to parse again).
    #[test]
    fn samples_take_their_planned_typed_parameters() {
        type Takes<P> = fn(&Point, &P, &SampleContext, usize, bool) -> Outcome;
        let _: Takes<WorkloadConfig> = builtin::run;
        let _: Takes<[ProgramParams]> = co_run::run;
        let _: Takes<WebParams> = server::run;
        let _: Takes<ChatParams> = chat_sample::run;
        let _: Takes<DsmPointParams> = dsm_sample::run;
        let _ = |spec: WorkerSpec| -> WorkloadConfig { spec.config };
    }

    /// A built-in point (alone or a co-run's part) measured without its
    /// plan's parameters fails its sample, saying so, and starts nothing.
    #[test]
    fn a_builtin_point_without_planned_parameters_fails_and_starts_nothing() {
        let spin = Program::Builtin {
            workload: "spin".into(),
            params: Default::default(),
        };
        let co = Program::CoRun {
            parts: vec![smtlab_types::CoPart {
                name: "spin".into(),
                slot: 0,
                program: Box::new(spin.clone()),
                mode: smtlab_types::Mode::FixedWork { work: 1 },
            }],
        };
        let stop = AtomicBool::new(false);
        let ctx = context(&stop, Duration::from_secs(1));
        for program in [spin, co] {
            let point = Point {
                program,
                ..web_point(None)
            };
            let Outcome::Measured(s) = run_sample(&point, &ctx, 2, false) else {
                panic!("a failed sample, not an interruption");
            };
            assert_eq!(s.status, SampleStatus::Failed);
            let label = point.program.label();
            assert_eq!(
                s.reason,
                Some(format!(
                    "{label}: its parameters were not planned with the run"
                ))
            );
        }
    }

    /// A server point measured without its plan's parameters fails its
    /// sample, saying so, and starts nothing.
    #[test]
    fn a_server_point_without_planned_parameters_fails_and_starts_nothing() {
        let point = web_point(None);
        let stop = AtomicBool::new(false);
        let ctx = context(&stop, Duration::from_secs(1));
        let Outcome::Measured(s) = run_sample(&point, &ctx, 3, false) else {
            panic!("a failed sample, not an interruption");
        };
        assert_eq!(s.status, SampleStatus::Failed);
        assert_eq!(s.seq, 3);
        assert_eq!(
            s.reason.as_deref(),
            Some("web: its parameters were not planned with the run")
        );
    }
}
