//! The names of a sample's extras ([`crate::Sample::extras`]): what a
//! program measured besides operations, one `f64` per name. The programs
//! that write them (in smtlab-execute, smtlab-dsm, smtlab-workloads) and
//! the code that reads them back (smtlab-analyse, smtlab-report,
//! smtlab-study, the CLI) meet here, below both, so that a reader never
//! depends on a writer and no name is spelled twice.
//!
//! The names are stored as they are (the store's `extras_json`, `run
//! --json`, `show --json`, samples.csv): renaming one makes stored results
//! unreadable by name, so a name here never changes. Names grouped by the
//! program that writes them; names built from a parameter (`rate.1`,
//! `rank.2.wait_s`, `errors.timeout`) by a function, with the test that
//! reading one back needs.

/// What every server sample writes, the web's and the chat's alike
/// (smtlab-execute's `server` and `chat_sample`, from the load generator's
/// report and the server's counters).
pub mod server {
    /// Median latency of an answered request (web) or a delivered message
    /// (chat), µs, as the load generator measured it.
    pub const LATENCY_P50_US: &str = "latency_p50_us";
    /// 99th-percentile latency, µs (see [`LATENCY_P50_US`]).
    pub const LATENCY_P99_US: &str = "latency_p99_us";
    /// 99.9th-percentile latency, µs (see [`LATENCY_P50_US`]).
    pub const LATENCY_P999_US: &str = "latency_p999_us";
    /// Largest latency seen, µs (see [`LATENCY_P50_US`]).
    pub const LATENCY_MAX_US: &str = "latency_max_us";
    /// How busy the load generator's CPUs were over the window, a fraction
    /// 0..1.
    pub const CLIENT_CPU_SHARE: &str = "client_cpu_share";
    /// 1 when the load generator, not the server, was the bottleneck (its
    /// CPUs 90% busy or more), else 0: the metric is then a lower bound.
    pub const CLIENT_BOUND: &str = "client_bound";
    /// 1 when the load generator ran pinned to CPUs the server did not
    /// use, 0 when none was left for it and it shared the server's.
    pub const CLIENT_PINNED: &str = "client_pinned";

    /// What starts every [`errors_key`].
    pub const ERRORS_PREFIX: &str = "errors.";

    /// `errors.KIND`: requests or connections that failed with error
    /// `kind` (`timeout`, `reset`, ...), a count per sample.
    pub fn errors_key(kind: &str) -> String {
        format!("{ERRORS_PREFIX}{kind}")
    }

    /// The error kind of an [`errors_key`], or `None` for another name.
    pub fn parse_errors_key(key: &str) -> Option<&str> {
        key.strip_prefix(ERRORS_PREFIX)
    }

    /// `cpi.SCOPE`: cycles per instruction of the server in `scope`
    /// (`user`, `kernel`), where both were counted.
    pub fn cpi_key(scope: &str) -> String {
        format!("cpi.{scope}")
    }

    /// `EVENT_per_UNIT.SCOPE`: counter `event` (`instructions`,
    /// `L1-dcache-load-misses`, ...) of the server in `scope` per operation
    /// (`unit`: [`super::web::UNIT`], [`super::chat::UNIT`]).
    pub fn per_op_key(event: &str, unit: &str, scope: &str) -> String {
        format!("{event}_per_{unit}.{scope}")
    }
}

/// What a web sample writes (smtlab-execute's `server`), besides
/// [`server`]'s.
pub mod web {
    /// The operation the web sample's costs are per: an answered request
    /// (the `UNIT` of [`super::server::per_op_key`]).
    pub const UNIT: &str = "req";
    /// The server's user CPU time per answered request, µs.
    pub const SERVER_USER_US_PER_REQ: &str = "server_user_us_per_req";
    /// The server's system CPU time per answered request, µs.
    pub const SERVER_SYS_US_PER_REQ: &str = "server_sys_us_per_req";
    /// The server's voluntary context switches per answered request.
    pub const VOLUNTARY_CS_PER_REQ: &str = "voluntary_cs_per_req";
    /// The server's involuntary context switches per answered request.
    pub const INVOLUNTARY_CS_PER_REQ: &str = "involuntary_cs_per_req";
    /// Requests answered in the window, whatever their status, a count.
    pub const REQUESTS_ANSWERED: &str = "requests_answered";
    /// Requests the load generator sent in the window, a count.
    pub const REQUESTS_SENT: &str = "requests_sent";
    /// Requests sent but still unanswered when the window closed, a count.
    pub const REQUESTS_IN_FLIGHT_AT_END: &str = "requests_in_flight_at_end";
    /// Bytes received by the load generator over the window, Mbit/s.
    pub const MBIT_PER_S: &str = "mbit_per_s";
    /// Requests the server itself says it served (smtlab's `web`'s stats
    /// line), a count; absent for other servers.
    pub const SERVER_REQUESTS: &str = "server_requests";
}

/// What a chat sample writes (smtlab-execute's `chat_sample`), besides
/// [`server`]'s. Server costs are over the message phase only.
pub mod chat {
    /// The operation the chat sample's costs are per: a delivered message
    /// (the `UNIT` of [`super::server::per_op_key`]).
    pub const UNIT: &str = "msg";
    /// Connections the load generator opened, a count.
    pub const CONNECTIONS: &str = "connections";
    /// Messages the load generator sent, a count.
    pub const MESSAGES_SENT: &str = "messages_sent";
    /// Deliveries: every (message, member) arrival counts once, a count.
    pub const DELIVERIES: &str = "deliveries";
    /// The server's user CPU time per delivered message, µs.
    pub const SERVER_USER_US_PER_MSG: &str = "server_user_us_per_msg";
    /// The server's system CPU time per delivered message, µs.
    pub const SERVER_SYS_US_PER_MSG: &str = "server_sys_us_per_msg";
    /// The server's voluntary context switches per delivered message.
    pub const VOLUNTARY_CS_PER_MSG: &str = "voluntary_cs_per_msg";
    /// The server's involuntary context switches per delivered message.
    pub const INVOLUNTARY_CS_PER_MSG: &str = "involuntary_cs_per_msg";
    /// The server's threads at the end of the message phase, a count.
    pub const SERVER_THREADS: &str = "server_threads";
    /// The server's proportional set size at the end of the message phase,
    /// KiB.
    pub const SERVER_PSS_KB: &str = "server_pss_kb";
    /// The server's PSS growth from its start to the end of the messages
    /// per connection, KiB.
    pub const SERVER_PSS_KB_PER_CONNECTION: &str = "server_pss_kb_per_connection";
    /// Median time a client took from `connect()` to the end of its JOIN,
    /// µs.
    pub const CONNECT_P50_US: &str = "connect_p50_us";
    /// 99th-percentile time from `connect()` to the end of the JOIN, µs.
    pub const CONNECT_P99_US: &str = "connect_p99_us";
}

/// What a DSM sample writes (smtlab-dsm's `RunReport::extras`, and
/// smtlab-execute's `dsm_sample`): each statistic summed over the ranks,
/// and again per rank under [`dsm::rank_key`].
pub mod dsm {
    /// Messages sent, a count.
    pub const MESSAGES: &str = "messages";
    /// Bytes sent, a count.
    pub const BYTES: &str = "bytes";
    /// Messages sent again for want of an answer, a count.
    pub const RETRANSMISSIONS: &str = "retransmissions";
    /// Duplicate messages received and dropped, a count.
    pub const DUPLICATES: &str = "duplicates";
    /// Messages dropped on purpose (fault injection), a count.
    pub const INJECTED_DROPS: &str = "injected_drops";
    /// Pages fetched from their home (GETP requests), a count.
    pub const GETP: &str = "getp";
    /// Diffs sent home, a count.
    pub const DIFFS: &str = "diffs";
    /// Lock acquisitions, a count.
    pub const LOCKS: &str = "locks";
    /// Barriers passed, a count.
    pub const BARRIERS: &str = "barriers";
    /// Requests served for other ranks, a count.
    pub const SERVED: &str = "served";
    /// Time in the application's own work (the parallel section minus the
    /// times below), s.
    pub const COMPUTE_S: &str = "compute_s";
    /// Time in the SIGSEGV handler, fetching pages and making twins
    /// (waiting included), s.
    pub const FAULT_S: &str = "fault_s";
    /// Time in lock, unlock and barrier: diffs sent, grants waited for
    /// (waiting included), s.
    pub const SYNC_S: &str = "sync_s";
    /// Time serving other ranks' requests on the computing thread (0
    /// where threads serve), s.
    pub const SERVE_S: &str = "serve_s";
    /// Time blocked waiting for a reply, inside fault and sync handling
    /// (and counted there too: the paper's "wait"), s.
    pub const WAIT_S: &str = "wait_s";
    /// 1 when the result verified against a sequential run, else 0.
    pub const VERIFIED: &str = "verified";
    /// The result's checksum (equal inputs give equal checksums); absent
    /// when not finite.
    pub const CHECKSUM: &str = "checksum";

    /// CPU time of the computing thread, s (`thread_key("main")`).
    pub const THREAD_MAIN_S: &str = "thread.main_s";
    /// CPU time of `thr1`'s communication thread, s.
    pub const THREAD_COMM_S: &str = "thread.comm_s";
    /// CPU time of `thr2`'s and `thr3`'s sending thread, s.
    pub const THREAD_SEND_S: &str = "thread.send_s";
    /// CPU time of `thr2`'s and `thr3`'s receiving thread, s.
    pub const THREAD_RECV_S: &str = "thread.recv_s";
    /// CPU time of `thr3`'s serving thread, s.
    pub const THREAD_SERVE_S: &str = "thread.serve_s";

    /// `thread.NAME_s`: CPU time of a rank's thread `name` (`main`, `comm`,
    /// `send`, `recv`, `serve`: the `THREAD_*_S` names), s.
    pub fn thread_key(name: &str) -> String {
        format!("thread.{name}_s")
    }

    /// What starts every [`rank_key`].
    pub const RANK_PREFIX: &str = "rank.";

    /// `rank.R.STAT`: statistic `stat` (one of the names above) of rank
    /// `rank` alone.
    pub fn rank_key(rank: usize, stat: &str) -> String {
        format!("{RANK_PREFIX}{rank}.{stat}")
    }

    /// Whether `key` is one rank's statistic (a [`rank_key`]), not a total.
    pub fn is_rank_key(key: &str) -> bool {
        key.starts_with(RANK_PREFIX)
    }
}

/// What a co-run sample writes (smtlab-execute's `co_run`): per part `k`
/// of the programs that ran together.
pub mod co_run {
    /// `rate.K`: part `k`'s operations per second, the mean over its
    /// samples in the window.
    pub fn rate_key(k: usize) -> String {
        format!("rate.{k}")
    }

    /// `samples.K`: how many samples of part `k` the window held, a count.
    pub fn samples_key(k: usize) -> String {
        format!("samples.{k}")
    }
}

/// What the allocator probe writes (smtlab-workloads' `allocprobe`),
/// summed over the sample's processes, and what smtlab-analyse derives
/// from it.
pub mod allocprobe {
    /// Objects still allocated at the end of the window, a count.
    pub const LIVE_OBJECTS: &str = "live_objects";
    /// Live objects allocated on another core than their 2 MiB frame's
    /// owner (the core with the most live bytes in it), a count.
    pub const FOREIGN_OBJECTS: &str = "foreign_objects";
    /// 2 MiB frames holding live objects, a count.
    pub const FRAMES: &str = "frames";
    /// Frames holding live objects allocated on more than one core, a
    /// count.
    pub const SHARED_FRAMES: &str = "shared_frames";
    /// [`FOREIGN_OBJECTS`] over [`LIVE_OBJECTS`], the median over samples
    /// of each sample's fraction 0..1: written by smtlab-analyse's point
    /// summary, never by a sample.
    pub const FOREIGN_SHARE: &str = "foreign_share";
}

/// Whether the extra `key` is a fraction 0..1 (its name ends in `_share`:
/// [`server::CLIENT_CPU_SHARE`], [`allocprobe::FOREIGN_SHARE`]), which a
/// reader shows as a percentage.
pub fn is_share(key: &str) -> bool {
    key.ends_with("_share")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_built_from_a_parameter_read_back() {
        assert_eq!(server::errors_key("timeout"), "errors.timeout");
        assert_eq!(server::parse_errors_key("errors.timeout"), Some("timeout"));
        assert_eq!(server::parse_errors_key("latency_p99_us"), None);
        assert_eq!(server::cpi_key("user"), "cpi.user");
        assert_eq!(
            server::per_op_key("instructions", web::UNIT, "kernel"),
            "instructions_per_req.kernel"
        );
        assert_eq!(
            server::per_op_key("iTLB-load-misses", chat::UNIT, "user"),
            "iTLB-load-misses_per_msg.user"
        );
        assert_eq!(dsm::rank_key(2, dsm::WAIT_S), "rank.2.wait_s");
        assert!(dsm::is_rank_key("rank.2.wait_s"));
        assert!(!dsm::is_rank_key(dsm::WAIT_S));
        assert_eq!(co_run::rate_key(1), "rate.1");
        assert_eq!(co_run::samples_key(0), "samples.0");
        assert!(is_share(server::CLIENT_CPU_SHARE) && is_share(allocprobe::FOREIGN_SHARE));
        assert!(!is_share(server::CLIENT_BOUND));
    }

    #[test]
    fn the_thread_names_are_the_thread_keys() {
        for (name, key) in [
            ("main", dsm::THREAD_MAIN_S),
            ("comm", dsm::THREAD_COMM_S),
            ("send", dsm::THREAD_SEND_S),
            ("recv", dsm::THREAD_RECV_S),
            ("serve", dsm::THREAD_SERVE_S),
        ] {
            assert_eq!(dsm::thread_key(name), key);
        }
    }
}
