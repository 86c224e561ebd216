//! One sample of a point, by the kind of its program: a built-in workload
//! a user command, programs co-running, a server, or the ranks of a DSM
//! application. Uses `builtin`, `command`, `co_run`, `server`,
//! `chat_sample` (through `server_lifecycle`'s `measure`), `dsm_sample`
//! and `context`.

use smtlab_types::{Outcome, Point, Program};

use crate::context::SampleContext;
use crate::{builtin, chat_sample, co_run, command, dsm_sample, server, server_lifecycle};

/// Take one sample of `point`.
pub fn run_sample(point: &Point, ctx: &SampleContext, seq: usize, warmup: bool) -> Outcome {
    match &point.program {
        Program::Builtin { .. } => builtin::run(point, ctx, seq, warmup),
        Program::Command { .. } => command::run(point, ctx, seq, warmup),
        Program::CoRun { .. } => co_run::run(point, ctx, seq, warmup),
        Program::Server { server: s, .. } if chat_sample::CHAT_SERVERS.contains(&s.as_str()) => {
            server_lifecycle::measure(point, ctx, seq, warmup, chat_sample::run_inner)
        }
        Program::Server { .. } => server::run(point, ctx, seq, warmup),
        Program::Ranks { .. } => dsm_sample::run(point, ctx, seq, warmup),
    }
}
