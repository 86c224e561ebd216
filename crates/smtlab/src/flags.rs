//! Typed flag values: the clap value parsers of every flag whose value is
//! more than a plain number or path. Each turns the text into the type the
//! library takes, once, when the command line is parsed; nothing downstream
//! parses it again. An error names the flag and the value and says what
//! would be valid: it becomes the one line of a usage error (exit 2), see
//! `exit::clap_error`.
//!
//! Two kinds of input are checked later, when there is what they need: a
//! CPU expression (`--placement S0:0-3`, `pin -c`) against the machine it
//! names, and workload parameters (`--param`) against the workload.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use clap::builder::{PossibleValue, TypedValueParser};
use smtlab_allocators::Allocator;
use smtlab_dsm_apps::APPS;
use smtlab_study::pairs_plan::Share;
use smtlab_topology::Topology;
use smtlab_types::cpuset::{CpuSet, CpuSetError, MAX_CPU};
use smtlab_types::{Comm, MetricRegex, Policy, PolicySpec, ServerKind, Spawn, MAX_WORKERS};
use smtlab_web::fileset::{parse_size, FileSet};
use smtlab_workloads as workload;

/// A flag value that is not one; the message is the whole usage error.
#[derive(Debug)]
pub struct BadValue(String);

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}

fn bad(message: String) -> BadValue {
    BadValue(message)
}

/// What `-w NAME` names, found once: a built-in workload (an entry of the
/// workloads' registry), a server, or a DSM application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadName {
    Builtin(String),
    Server(ServerKind),
    Dsm(String),
}

impl WorkloadName {
    /// The name as given (trimmed).
    pub fn as_str(&self) -> &str {
        match self {
            WorkloadName::Builtin(name) | WorkloadName::Dsm(name) => name,
            WorkloadName::Server(server) => server.as_str(),
        }
    }
}

impl fmt::Display for WorkloadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `-w NAME`: a built-in workload, a server or a DSM application.
pub fn workload(text: &str) -> Result<WorkloadName, BadValue> {
    let w = text.trim();
    if workload::builtin(w).is_some() {
        return Ok(WorkloadName::Builtin(w.to_string()));
    }
    if let Some(server) = ServerKind::from_name(w) {
        return Ok(WorkloadName::Server(server));
    }
    if APPS.contains(&w) {
        return Ok(WorkloadName::Dsm(w.to_string()));
    }
    Err(bad(format!(
        "--workload {w}: no such workload; built in: {}; servers: {}; DSM applications: {}",
        workload::builtin_names().join(", "),
        ServerKind::ALL.map(ServerKind::as_str).join(", "),
        APPS.join(", ")
    )))
}

/// `smtlab rank -w APP`: a DSM application.
pub fn dsm_app(text: &str) -> Result<String, BadValue> {
    let w = text.trim();
    if APPS.contains(&w) {
        return Ok(w.to_string());
    }
    Err(bad(format!(
        "--workload {w}: not a DSM application; expected one of {}",
        APPS.join(", ")
    )))
}

/// `--bind IP`: the address a rank's UDP socket binds and tells the
/// others.
pub fn bind_ip(text: &str) -> Result<IpAddr, BadValue> {
    text.trim().parse().map_err(|_| {
        bad(format!(
            "--bind {text}: expected an IP address of this host, such as 127.0.0.1 or 10.0.0.5"
        ))
    })
}

/// A CPU-list flag's value (`--cpus`, `--client-cpus`): a non-empty list
/// (`1`, `0,2-3`). One that is not says which CPUs this process may run on:
/// the valid range.
pub fn cpu_list(flag: &str, text: &str) -> Result<CpuSet, String> {
    let range = || {
        smtlab_sys::current_affinity()
            .map(|a| format!("; this process may run on CPUs {a}"))
            .unwrap_or_default()
    };
    match CpuSet::parse_list(text) {
        Ok(set) if !set.is_empty() => Ok(set),
        Ok(_) => Err(format!(
            "{flag} {text}: no CPU listed; expected a list such as 1 or 2-3{}",
            range()
        )),
        Err(e) => Err(format!("{flag} {text}: {e}{}", range())),
    }
}

/// `--cpus LIST` (`load http`, `load chat`, `serve web`, `serve chat`): a
/// non-empty CPU list; whether this process may run on it is checked when
/// the command starts, where the affinity is read anyway.
pub fn cpus(text: &str) -> Result<CpuSet, BadValue> {
    cpu_list("--cpus", text).map_err(bad)
}

/// `--files SIZE` (`serve web`, `load http`): the SPECweb96-like file set
/// of about that size (`5MB`, `500MB`, `2GB`).
pub fn file_set(text: &str) -> Result<FileSet, BadValue> {
    let bytes = parse_size(text).ok_or_else(|| {
        bad(format!(
            "--files {text}: expected a size such as 5MB, 50MB, 500MB or 2GB"
        ))
    })?;
    FileSet::with_total_bytes(bytes).map_err(|e| bad(format!("--files {text}: {e}")))
}

/// `--client-cpus LIST`: a CPU list of CPUs this process may run on (the
/// load generator runs here: a CPU it cannot use would fail every sample
/// of the run, one by one); the set is what the load generator gets.
pub fn client_cpus(text: &str) -> Result<CpuSet, BadValue> {
    let set = cpu_list("--client-cpus", text).map_err(bad)?;
    if let Ok(allowed) = smtlab_sys::current_affinity() {
        if let Some(cpu) = set.difference(&allowed).first() {
            return Err(bad(format!(
                "--client-cpus {text}: CPU {cpu} is not one this process may run on; allowed: \
                 {allowed}"
            )));
        }
    }
    Ok(set)
}

/// `--param KEY=VALUE`; whether the workload has such a parameter is
/// checked with the workload, when the run is planned.
pub fn param(text: &str) -> Result<(String, String), BadValue> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| bad(format!("--param {text}: expected KEY=VALUE")))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

/// `--cmd TEMPLATE`: a command whose placeholders are all known.
pub fn cmd_template(text: &str) -> Result<String, BadValue> {
    smtlab_execute::command::check_template(text).map_err(|e| bad(e.to_string()))?;
    Ok(text.to_string())
}

/// `--metric NAME=REGEX`, the regex compiled.
#[derive(Debug, Clone)]
pub struct MetricArg {
    pub name: String,
    pub regex: MetricRegex,
}

pub fn metric(text: &str) -> Result<MetricArg, BadValue> {
    let (name, re) = text
        .split_once('=')
        .ok_or_else(|| bad(format!("--metric {text}: expected NAME=REGEX")))?;
    // The name labels every table and report of the run.
    if name.trim().is_empty() {
        return Err(bad(format!(
            "--metric {text}: no name before `=`; expected NAME=REGEX, e.g. \
             'rate=([0-9.]+) ops/s'"
        )));
    }
    let regex = MetricRegex::new(re).map_err(|e| {
        // regex's message draws a caret under the fault over several
        // lines; its last line says what is wrong.
        let what = e.to_string();
        let what = what.lines().last().unwrap_or_default().trim();
        bad(format!(
            "--metric {text}: bad regex: {}",
            what.strip_prefix("error: ").unwrap_or(what)
        ))
    })?;
    Ok(MetricArg {
        name: name.trim().to_string(),
        regex,
    })
}

/// `--metric-better higher|lower`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

fn better(text: &str) -> Result<Better, BadValue> {
    match text {
        "higher" => Ok(Better::Higher),
        "lower" => Ok(Better::Lower),
        other => Err(bad(format!(
            "--metric-better {other}: expected higher or lower"
        ))),
    }
}

/// The value parser of a flag that takes one of a few names (`--spawn`,
/// `--comm`, `--share`, `--metric-better`): clap is told the names, so
/// shell completions and `--help` offer them, and the text is parsed by
/// `parse`, the type's own parser, whose error is the flag's usage error
/// (clap's own check of possible values would word it otherwise). Its
/// types live in crates without clap, so this is not a `clap::ValueEnum`.
#[derive(Clone)]
pub struct OneOf<T> {
    names: Vec<&'static str>,
    parse: fn(&str) -> Result<T, BadValue>,
}

/// [`OneOf`] with its names and parser.
fn one_of<T>(
    names: impl IntoIterator<Item = &'static str>,
    parse: fn(&str) -> Result<T, BadValue>,
) -> OneOf<T> {
    OneOf {
        names: names.into_iter().collect(),
        parse,
    }
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for OneOf<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        // clap's parser for a function: a refusal is a value-validation
        // error with ours as its source (`own_message`).
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().copied().map(PossibleValue::new)))
    }
}

/// `--metric-better higher|lower`.
pub fn metric_better() -> OneOf<Better> {
    one_of(["higher", "lower"], better)
}

/// `--spawn exec|fork`.
pub fn spawn() -> OneOf<Spawn> {
    one_of(Spawn::ALL.map(Spawn::as_str), parsed::<Spawn>)
}

/// `--comm MECHANISM`: how a DSM rank notices requests.
pub fn comm() -> OneOf<Comm> {
    one_of(Comm::ALL.map(Comm::as_str), parsed::<Comm>)
}

/// `study pairs --share LEVEL`: what the two PUs of a pair share.
pub fn share() -> OneOf<Share> {
    one_of(Share::ALL.map(Share::name), parsed::<Share>)
}

/// One `--placement` flag: a comma list of named placements, or else one
/// CPU expression (whose own commas are part of it).
#[derive(Debug, Clone)]
pub struct Placements(pub Vec<PolicySpec>);

pub fn placements(text: &str) -> Result<Placements, BadValue> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let named: Option<Vec<PolicySpec>> = parts
        .iter()
        .map(|p| p.parse::<PolicySpec>().ok())
        .collect::<Option<Vec<_>>>()
        .filter(|specs| specs.iter().all(|s| !matches!(s.policy, Policy::Expr(_))));
    match named {
        Some(specs) => Ok(Placements(specs)),
        None => text
            .parse::<PolicySpec>()
            .map(|one| Placements(vec![one]))
            .map_err(|e| bad(format!("--placement: {e}"))),
    }
}

/// `place -p POLICY`: one placement policy.
pub fn policy(text: &str) -> Result<Policy, BadValue> {
    text.parse().map_err(|e| bad(format!("--placement: {e}")))
}

/// `--threads 1,2,4` or `1-8`: worker counts, each 1 or more.
#[derive(Debug, Clone)]
pub struct WorkerCounts(pub Vec<usize>);

pub fn worker_counts(text: &str) -> Result<WorkerCounts, BadValue> {
    // Worker counts have the syntax of CPU lists (1,2,4 or 1-8), so the
    // CPU-list parser reads them; its errors are worded here for worker
    // counts instead of CPUs.
    let wrong = |why: String| {
        bad(format!(
            "--threads {text}: {why}; expected worker counts 1..={MAX_CPU} as a list or \
             ranges, e.g. 1,2,4 or 1-8"
        ))
    };
    let set = CpuSet::parse_list(text).map_err(|e| match e {
        CpuSetError::BadToken { token } if token.is_empty() => wrong("an empty item".into()),
        CpuSetError::BadToken { token } => wrong(format!("`{token}` is not a number")),
        CpuSetError::Descending { token } => wrong(format!("`{token}` is a descending range")),
        CpuSetError::TooLarge { cpu, .. } => wrong(format!("{cpu} is out of range")),
        CpuSetError::BadMask { .. } => wrong(e.to_string()),
    })?;
    if set.is_empty() {
        return Err(wrong("an empty item".into()));
    }
    if set.contains(0) {
        return Err(wrong("0 is out of range".into()));
    }
    Ok(WorkerCounts(set.iter().map(|n| n as usize).collect()))
}

/// `--alloc NAME`: an allocator, found (its library located) now, so a
/// missing one is refused before anything runs and found only once.
/// Its library must also load: one that does not would be ignored by the
/// loader, and the run would measure glibc under its name.
pub fn allocator(text: &str) -> Result<Allocator, BadValue> {
    let a = Allocator::find(text.trim()).map_err(|e| bad(format!("--alloc: {e}")))?;
    if let Some(preload) = &a.preload {
        loadable(preload).map_err(|e| bad(format!("--alloc {}: {e}", a.name)))?;
    }
    Ok(a)
}

/// [`smtlab_execute::preload_check::check_loadable`] with this binary.
pub fn loadable(preload: &smtlab_allocators::Preload) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating the smtlab binary: {e}"))?;
    smtlab_execute::preload_check::check_loadable(&exe, preload).map_err(|e| e.to_string())
}

/// The longest duration a flag takes: 30 days. Longer is a typo, and a
/// deadline that far off would overflow the clock arithmetic of a wait.
pub const MAX_SECONDS: f64 = 30.0 * 86_400.0;

/// A duration flag (`--duration`, `--max-time`, `--timeout`) in seconds,
/// longer than zero and at most [`MAX_SECONDS`]: `500ms`, `2s`, `1m`.
pub fn seconds(flag: &'static str) -> impl Fn(&str) -> Result<f64, BadValue> + Clone {
    move |text: &str| {
        let range = "expected a duration above 0 and at most 30 days, such as 500ms, 2s or 1m";
        let t = text.trim();
        // Values may start with `-` (so that `-1s` reaches this parser):
        // one that is a flag means the value was left out.
        if t.starts_with("--") {
            return Err(bad(format!("{flag}: no value before {t}; {range}")));
        }
        if t.starts_with('-') {
            return Err(bad(format!("{flag} {text}: a negative duration; {range}")));
        }
        let d = humantime::parse_duration(t)
            .map_err(|e| bad(format!("{flag} {text}: {e}; {range}")))?;
        if d.is_zero() {
            return Err(bad(format!(
                "{flag} {text}: must be longer than zero; {range}"
            )));
        }
        if d.as_secs_f64() > MAX_SECONDS {
            return Err(bad(format!("{flag} {text}: at most 30 days; {range}")));
        }
        Ok(d.as_secs_f64())
    }
}

/// A whole-number flag from `min` to `max` (`--warmup`, `--min-samples`,
/// `--seed`...): a negative number, a fraction, text or a number past
/// `max` is refused naming the flag and the range.
pub fn whole<T>(
    flag: &'static str,
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, BadValue> + Clone
where
    T: TryFrom<u64>,
{
    move |text: &str| {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| {
                bad(format!(
                    "{flag} {text}: expected a whole number from {min} to {max}"
                ))
            })
    }
}

/// A count flag from `min` to `max` whose message says what it counts
/// (`--connections`, `serve --threads`...): `{flag} {text}: expected
/// {what} from {min} to {max}`.
pub fn count(
    flag: &'static str,
    what: &'static str,
    min: usize,
    max: usize,
) -> impl Fn(&str) -> Result<usize, BadValue> + Clone {
    move |text: &str| {
        whole::<usize>(flag, min as u64, max as u64)(text).map_err(|_| {
            bad(format!(
                "{flag} {text}: expected {what} from {min} to {max}"
            ))
        })
    }
}

/// `--warmup`, `--min-samples`, `--max-samples`: at most a million samples
/// of one point (a sample takes at least milliseconds; more is a typo).
pub const MAX_SAMPLES: u64 = 1_000_000;

/// `place -n N`: a worker count, 1 to [`MAX_WORKERS`].
pub fn worker_count(text: &str) -> Result<usize, BadValue> {
    whole("--threads", 1, MAX_WORKERS as u64)(text).map_err(|_| {
        bad(format!(
            "--threads {text}: expected a number of workers, at least 1 and at most \
             {MAX_WORKERS} workers"
        ))
    })
}

/// A fraction flag (`--precision`): `0.02` or `2%`, strictly between 0 and 1.
pub fn fraction(flag: &'static str) -> impl Fn(&str) -> Result<f64, BadValue> + Clone {
    move |text: &str| {
        let v = match text.trim().strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
            None => text.trim().parse::<f64>(),
        };
        match v {
            Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
            _ => Err(bad(format!(
                "{flag} {text}: expected a fraction between 0 and 1, such as 0.02 or 2%"
            ))),
        }
    }
}

/// `--work N`: a positive amount of work, at most `i64::MAX` (the store
/// keeps it as a SQLite INTEGER, so a larger one could not be recorded).
pub fn work(text: &str) -> Result<u64, BadValue> {
    whole("--work", 1, i64::MAX as u64)(text)
        .map_err(|e| bad(format!("{e} (operations per sample)")))
}

/// `--skip HEXMASK` of `smtlab pin`.
pub fn skip_mask(text: &str) -> Result<u64, BadValue> {
    smtlab_execute::pin::parse_skip_mask(text).map_err(|e| {
        bad(format!(
            "--skip {text}: {e}; a mask from 0x0 to 0xffffffffffffffff"
        ))
    })
}

/// `--synthetic SPEC`: a machine described in hwloc's synthetic syntax.
pub fn synthetic(text: &str) -> Result<Topology, BadValue> {
    smtlab_topology::synthetic::parse(text).map_err(|e| bad(e.to_string()))
}

/// `--db PATH`: the store, its `{host}` and `{rank}` filled in
/// (`db_path`).
pub fn db(text: &str) -> Result<std::path::PathBuf, BadValue> {
    placeholders("--db", text)
}

/// `-o DIR` of a report: its `{host}` and `{rank}` filled in, so the
/// tasks of a fleet on a shared directory write apart.
pub fn report_dir(text: &str) -> Result<std::path::PathBuf, BadValue> {
    placeholders("-o", text)
}

/// A store named by another flag or argument than `--db` (`merge`'s
/// inputs and `-o`): its `{host}` and `{rank}` filled in as `--db`'s are.
pub fn store_path(
    flag: &'static str,
) -> impl Fn(&str) -> Result<std::path::PathBuf, BadValue> + Clone {
    move |text: &str| placeholders(flag, text)
}

fn placeholders(flag: &str, text: &str) -> Result<std::path::PathBuf, BadValue> {
    let host = || smtlab_store::host_name().map_err(|e| e.to_string());
    crate::db_path::expand(flag, text, host, || {
        smtlab_dsm::launcher_from_env(|k| std::env::var(k).ok())
            .map(|l| l.map(|l| l.rank))
            .map_err(|e| e.to_string())
    })
    .map_err(bad)
}

/// A run named on the command line: its id, or `latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    Latest,
    Id(i64),
}

/// The parser of a run argument named `what` (`RUN`, `RUN_A`, ...).
pub fn run_ref(what: &'static str) -> impl Fn(&str) -> Result<RunRef, BadValue> + Clone {
    move |text: &str| {
        if text == "latest" {
            return Ok(RunRef::Latest);
        }
        text.parse::<i64>().map(RunRef::Id).map_err(|_| {
            bad(format!(
                "{what} {text}: expected a run id (see `smtlab runs`) or latest"
            ))
        })
    }
}

/// Any `FromStr` type whose error already names its flag and value
/// (`--model`, `--spawn`, a study name), as a clap value parser.
pub fn parsed<T>(text: &str) -> Result<T, BadValue>
where
    T: FromStr,
    T::Err: fmt::Display,
{
    text.parse().map_err(|e: T::Err| bad(e.to_string()))
}

/// The message of a value parser's error, when it is one of ours: the
/// complete one-line usage error. `None` for clap's own parsers (integers),
/// whose message clap writes itself.
pub fn own_message(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    e.downcast_ref::<BadValue>().map(|b| b.0.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-w` is read once into what it names: the program is built from
    /// that, not from a second look at the text.
    #[test]
    fn a_workload_name_is_read_once_into_what_it_names() {
        assert_eq!(
            workload(" web ").unwrap(),
            WorkloadName::Server(ServerKind::Web)
        );
        assert_eq!(
            workload("ngircd").unwrap(),
            WorkloadName::Server(ServerKind::Ngircd)
        );
        assert_eq!(workload("sor").unwrap(), WorkloadName::Dsm("sor".into()));
        assert_eq!(
            workload("spin").unwrap(),
            WorkloadName::Builtin("spin".into())
        );
        assert_eq!(workload("spin").unwrap().to_string(), "spin");
        let e = workload("apache").unwrap_err().to_string();
        assert!(
            e.starts_with("--workload apache: no such workload; built in: ")
                && e.contains(
                    "; servers: web, nginx, chat, ngircd; DSM applications: sor, lu, tsp"
                ),
            "{e}"
        );
    }

    /// `--cpus` of `load http`, `load chat`, `serve web` and `serve chat`
    /// is this one parser: its messages name the flag and the value.
    #[test]
    fn cpus_and_file_sets_name_their_flag_when_refused() {
        assert_eq!(cpus("0,2-3").unwrap().len(), 3);
        for text in ["", "a", "3-1"] {
            let e = cpus(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--cpus {text}: ")), "{e}");
        }
        assert_eq!(file_set("5MB").unwrap().dirs, 1);
        for (text, why) in [
            ("0MB", "--files 0MB: "),
            ("5XB", "--files 5XB: expected a size"),
        ] {
            let e = file_set(text).unwrap_err().to_string();
            assert!(e.starts_with(why), "{e}");
        }
    }
}
