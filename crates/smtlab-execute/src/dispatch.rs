//! One sample of a point, by the kind of its program: a built-in workload
//! a user command, programs co-running, a server, or the ranks of a DSM
//! application, the last two with their parameters as planned
//! ([`SampleContext::programs`]). Uses `builtin`, `command`, `co_run`,
//! `server`, `chat_sample`, `dsm_sample` and `context`.

use smtlab_plan::ProgramParams;
use smtlab_types::{Outcome, Point, Program, Sample, SampleStatus};

use crate::context::SampleContext;
use crate::{builtin, chat_sample, co_run, command, dsm_sample, server};

/// Take one sample of `point`.
pub fn run_sample(point: &Point, ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    match (&point.program, ctx.programs.get(&point.program)) {
        (Program::Builtin { .. }, _) => builtin::run(point, ctx, seq, warmup),
        (Program::Command { .. }, _) => command::run(point, ctx, seq, warmup),
        (Program::CoRun { .. }, _) => co_run::run(point, ctx, seq, warmup),
        (Program::Server { .. }, Some(ProgramParams::Web(p))) => {
            server::run(point, p, ctx, seq, warmup)
        }
        (Program::Server { .. }, Some(ProgramParams::Chat(p))) => {
            chat_sample::run(point, p, ctx, seq, warmup)
        }
        (Program::Ranks { .. }, Some(ProgramParams::Dsm(p))) => {
            dsm_sample::run(point, p, ctx, seq, warmup)
        }
        (Program::Server { .. } | Program::Ranks { .. }, _) => unplanned(point, seq, warmup),
    }
}

/// A server or DSM point whose program the context does not hold: a run
/// measured without its plan's parameters (a caller's mistake), failed
/// rather than guessed at.
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

    use super::*;
    use crate::server_lifecycle::tests::{context, web_point};

    /// A server's and a DSM point's sample take the parameters planning
    /// parsed, in their products' types: these lines compile only while
    /// the samples take them so (and not a map of text to parse again).
    #[test]
    fn server_and_dsm_samples_take_their_planned_typed_parameters() {
        type Takes<P> = fn(&Point, &P, &SampleContext, usize, bool) -> Outcome;
        let _: Takes<WebParams> = server::run;
        let _: Takes<ChatParams> = chat_sample::run;
        let _: Takes<DsmPointParams> = dsm_sample::run;
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
