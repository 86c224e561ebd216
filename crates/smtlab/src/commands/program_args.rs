//! `-w NAME | --cmd TEMPLATE` with its parameters and metric: what a
//! command measures. Shared by `run` and `study`, which measure the same
//! kinds of program.

use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct ProgramArgs {
    /// Built-in workload(s), comma-separated (see `smtlab list`; `study`
    /// defaults to its own)
    #[arg(short = 'w', long, value_name = "NAME", conflicts_with = "cmd")]
    pub workload: Option<String>,
    /// A workload parameter, KEY=VALUE (repeatable; applies to every -w)
    #[arg(long = "param", value_name = "K=V")]
    pub params: Vec<String>,
    /// Run this command instead of a built-in workload; placeholders:
    /// {threads} (threads of this process; short form: n in braces),
    /// {rank}, {cpus} (its CPU list)
    #[arg(long, value_name = "TEMPLATE")]
    pub cmd: Option<String>,
    /// Read the metric from a command's output: NAME=REGEX (first capture
    /// group, last match; summed over processes)
    #[arg(long, value_name = "NAME=REGEX", requires = "cmd")]
    pub metric: Option<String>,
    /// Unit of --metric, for tables
    #[arg(long, value_name = "UNIT", default_value = "", requires = "metric")]
    pub metric_unit: String,
    /// Whether a larger --metric is better (throughput) or worse (time);
    /// with `lower` the slowest process counts instead of the sum
    #[arg(
        long,
        value_name = "higher|lower",
        default_value = "higher",
        requires = "metric"
    )]
    pub metric_better: String,
}
