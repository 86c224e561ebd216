//! ngircd as smtlab starts it: Debian's `ngircd` (version 26), in the
//! foreground (`ngircd --nodaemon --config FILE`), with a configuration
//! generated in a directory of its own, listening on 127.0.0.1 only: the
//! reference IRC server the chat load generator ([`crate::load`])
//! measures smtlab's own chat server against.
//!
//! ngircd is one architecture: a single process and thread, one event
//! loop (epoll) over non-blocking sockets, every connection's input and
//! output buffered in user space.
//!
//! What the configuration changes from ngircd's defaults, and why (each
//! a limit that would otherwise shape what is measured; [`limits_note`]
//! says them all in words for every output):
//!
//! * `MaxPenaltyTime = 0`: ngircd's flood control holds a client that
//!   sends more than 3 commands at once, or 256 bytes in a second, for a
//!   second, so a client sends about 3 messages a second however fast the
//!   server is (measured on ngircd 26.1: 30 pipelined PRIVMSGs from one
//!   client took 9.0 s to arrive; with this setting, 3,000 took 0.07 s).
//!   ngircd warns at start-up that this "is not recommended";
//! * `MaxConnectionsIP = 0`: every client comes from 127.0.0.1, and the
//!   default (5) would refuse the sixth;
//! * `MaxJoins = 0` (no limit), `MaxNickLength = 9` (RFC 2812, the
//!   generator's nicknames);
//! * `PingTimeout = PongTimeout = 600` s: no PING round trips in a run
//!   (the generator answers them anyway);
//! * `DNS = no`, `Ident = no`, `PAM = no`: registration takes no lookups;
//! * `IncludeDir` an empty directory of its own: the system's
//!   `/etc/ngircd/ngircd.conf.d` does not change a run.
//!
//! Files: the configuration, the MOTD and the pid file are in `dir`. As
//! root, ngircd switches to the user `nobody` after reading its
//! configuration and MOTD (it refuses to run as root) and then cannot
//! write its pid file into a directory only root may write: it logs
//! "Error writing PID file" and runs on (its parent knows its pid). As an
//! ordinary user, it logs that it cannot switch to `nobody` and runs on as
//! that user.
//!
//! ngircd cannot listen on port 0 (it has no way to report the port it
//! got): the caller picks a free port first (bind 127.0.0.1:0, read the
//! port, close), and since another process may take the port before
//! ngircd binds it, tries again with a new port if ngircd exits at once.

use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Where Debian installs ngircd; `PATH` is searched first.
const KNOWN: &str = "/usr/sbin/ngircd";

/// The configuration's file name in `dir`.
pub const CONF_FILE: &str = "ngircd.conf";
/// The MOTD's file name in `dir`.
pub const MOTD_FILE: &str = "ngircd.motd";
/// The pid file's name in `dir`.
pub const PID_FILE: &str = "ngircd.pid";
/// The (empty) include directory's name in `dir`.
pub const INCLUDE_DIR: &str = "conf.d";
/// The server's name (ngircd requires a dot in it).
pub const SERVER_NAME: &str = "smtlab.test";
/// Seconds of silence before ngircd PINGs a client, and seconds it waits
/// for the PONG.
pub const PING_TIMEOUT_S: u32 = 600;
/// ngircd's longest nickname: RFC 2812's 9.
pub const MAX_NICK_LENGTH: usize = 9;

/// The ngircd binary, if installed: `PATH`, then `/usr/sbin` (not on an
/// ordinary user's `PATH`).
pub fn find() -> Option<PathBuf> {
    let on_path: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("ngircd"))
                .collect()
        })
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(std::iter::once(PathBuf::from(KNOWN)))
        .find(|p| p.is_file())
}

/// Why ngircd cannot be measured here, for every output that skips it.
pub fn missing_reason() -> &'static str {
    "ngircd is not installed (Debian: apt-get install ngircd; scripts/setup.sh installs it)"
}

/// One ngircd instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NgircdConfig {
    /// Its address (127.0.0.1 and a free port: ngircd cannot listen on
    /// port 0).
    pub listen: SocketAddr,
    /// Connections it accepts at once (0: no limit); the clients a run
    /// opens, plus a few.
    pub max_connections: usize,
    /// Its own directory: configuration, MOTD, pid file.
    pub dir: PathBuf,
}

impl NgircdConfig {
    pub fn conf_path(&self) -> PathBuf {
        self.dir.join(CONF_FILE)
    }

    /// The arguments to start it with: in the foreground (so it stays the
    /// caller's child, to be measured and reaped), with its configuration.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--nodaemon".into(),
            "--config".into(),
            self.conf_path().display().to_string(),
        ]
    }
}

/// The complete `ngircd.conf` of an instance.
pub fn render(config: &NgircdConfig) -> String {
    let d = &config.dir;
    let mut s = String::new();
    let mut line = |l: &str| {
        let _ = writeln!(s, "{l}");
    };
    line("# Generated by smtlab: the reference IRC server (reference/ngircd.rs).");
    line("[Global]");
    line(&format!("\tName = {SERVER_NAME}"));
    line("\tInfo = smtlab reference IRC server");
    // RFC 2812 wants administrative information; ngircd warns without.
    line("\tAdminInfo1 = smtlab");
    line("\tAdminInfo2 = a measurement run");
    line("\tAdminEMail = smtlab@smtlab.test");
    line(&format!("\tListen = {}", config.listen.ip()));
    line(&format!("\tPorts = {}", config.listen.port()));
    line(&format!("\tMotdFile = {}", d.join(MOTD_FILE).display()));
    line(&format!("\tPidFile = {}", d.join(PID_FILE).display()));
    line("[Limits]");
    line(&format!("\tMaxConnections = {}", config.max_connections));
    line("\tMaxConnectionsIP = 0");
    line("\tMaxJoins = 0");
    line(&format!("\tMaxNickLength = {MAX_NICK_LENGTH}"));
    line("\tMaxPenaltyTime = 0");
    line(&format!("\tPingTimeout = {PING_TIMEOUT_S}"));
    line(&format!("\tPongTimeout = {PING_TIMEOUT_S}"));
    line("\tIdleTimeout = 0");
    line("[Options]");
    line("\tDNS = no");
    line("\tIdent = no");
    line("\tPAM = no");
    line(&format!("\tIncludeDir = {}", d.join(INCLUDE_DIR).display()));
    s
}

/// Write the configuration, the MOTD and the empty include directory into
/// `config.dir` (which must exist); returns the configuration's path.
pub fn write_files(config: &NgircdConfig) -> io::Result<PathBuf> {
    std::fs::create_dir_all(config.dir.join(INCLUDE_DIR))?;
    std::fs::write(config.dir.join(MOTD_FILE), "smtlab reference IRC server\n")?;
    let path = config.conf_path();
    std::fs::write(&path, render(config))?;
    Ok(path)
}

/// Every limit of ngircd (its configuration here, or its code) that shapes
/// a measurement, in plain sentences; the numbers were measured on
/// Debian's ngircd 26.1 on a 2-CPU machine, or read from its source
/// (`src/ngircd/conn.c`, `defines.h`).
pub fn limits_note(config: &NgircdConfig) -> Vec<String> {
    let max = if config.max_connections == 0 {
        "no limit on connections (MaxConnections = 0)".to_string()
    } else {
        format!(
            "at most {} connections at once (MaxConnections); more are refused with \
             \"ERROR :Connection limit reached\"",
            config.max_connections
        )
    };
    vec![
        "ngircd is a single process with a single thread: one event loop (epoll) does all \
         of its work, so it uses at most one CPU however many the machine has."
            .into(),
        "ngircd's flood control is off here (MaxPenaltyTime = 0). With its default, a client \
         that sends more than 3 commands at once, or 256 bytes within one second, is not read \
         for a second: a client then gets about 3 messages a second through (measured: 30 \
         pipelined 64-byte PRIVMSGs from one client arrived over 9.0 s, 12 of 400 bytes over \
         4.0 s; nobody is disconnected for flooding, ngircd just stops reading). With it off, \
         3,000 pipelined PRIVMSGs from one client arrived in 0.07 s."
            .into(),
        "ngircd handles at most 3 commands of a client per pass of its event loop (MAX_COMMANDS); \
         the rest wait for the next pass, so a client's pipelined messages are interleaved with \
         other clients' rather than handled in one go."
            .into(),
        "Each pass of ngircd's event loop takes at most 100 ready sockets from epoll \
         (MAX_EVENTS) and walks its whole connection table several times (read buffers, write \
         buffers, timeouts), idle connections included, so its throughput falls as connections \
         grow: measured in closed loop, rooms of 20, one message in flight per client, 2 CPUs: \
         1,000 clients about 170,000 deliveries/s, 2,000 about 106,000/s, 5,000 about \
         40,000/s, 10,000 about 13,000/s, ngircd at 100% of one CPU in each."
            .into(),
        "ngircd listens with a backlog of 10 connections and accepts one per pass of its event \
         loop: clients connecting faster overflow the backlog, and the kernel's retries (1, 2, \
         4... s) stall them for up to a minute (measured: with 256 connecting at once, 22 of \
         1,000 clients had no welcome after 60 s). The load generator connects 8 at a time: \
         1,000 clients joined in 0.5 s, 10,000 in about 30 s (ngircd busy all along: set-up \
         costs it a pass per connection)."
            .into(),
        "ngircd keeps at most 32 KiB (32,768 bytes) of unsent output per client beyond what \
         the socket takes; a client that reads slower than its room sends is disconnected \
         (\"Write buffer space exhausted\", measured with a client that stopped reading), \
         not slowed down: such connections show as closed connections and lost deliveries."
            .into(),
        "ngircd closes a connection that sends a line over 512 bytes (\"Request too long\"); \
         the load generator's lines stay below it."
            .into(),
        format!("ngircd accepts {max}; MaxConnectionsIP = 0, as every client comes from 127.0.0.1 (the default, 5, would refuse the sixth)."),
        "ngircd holds one file descriptor per connection and does not raise its open-file \
         limit: it inherits its parent's, which must exceed the connections of a run."
            .into(),
        format!(
            "Nicknames are at most {MAX_NICK_LENGTH} characters (MaxNickLength), channel names \
             at most 50; channels have no member limit unless one is set."
        ),
        format!(
            "ngircd PINGs a client after {PING_TIMEOUT_S} s of silence and drops it without a \
             PONG within {PING_TIMEOUT_S} s more (PingTimeout, PongTimeout): no PING traffic \
             within a run of less than 10 minutes."
        ),
        "ngircd logs every connection, registration and disconnection to its standard output: \
         set-up and tear-down of many clients cost it that output, the measured messages do \
         not."
            .into(),
    ]
}

/// Whether `path` is an ngircd binary (its `--version` names it).
pub fn is_ngircd(path: &Path) -> bool {
    std::process::Command::new(path)
        .arg("--version")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("ngIRCd"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> NgircdConfig {
        NgircdConfig {
            listen: "127.0.0.1:16667".parse().unwrap(),
            max_connections: 1_100,
            dir: "/tmp/ngircd-1".into(),
        }
    }

    #[test]
    fn the_configuration_sets_every_limit_and_keeps_files_in_its_directory() {
        let text = render(&config());
        for want in [
            "[Global]",
            "Name = smtlab.test",
            "Listen = 127.0.0.1",
            "Ports = 16667",
            "MotdFile = /tmp/ngircd-1/ngircd.motd",
            "PidFile = /tmp/ngircd-1/ngircd.pid",
            "[Limits]",
            "MaxConnections = 1100",
            "MaxConnectionsIP = 0",
            "MaxJoins = 0",
            "MaxNickLength = 9",
            "MaxPenaltyTime = 0",
            "PingTimeout = 600",
            "PongTimeout = 600",
            "[Options]",
            "PAM = no",
            "Ident = no",
            "DNS = no",
            "IncludeDir = /tmp/ngircd-1/conf.d",
        ] {
            assert!(
                text.lines().any(|l| l.trim() == want),
                "{want:?} missing:\n{text}"
            );
        }
        assert_eq!(
            config().args(),
            vec!["--nodaemon", "--config", "/tmp/ngircd-1/ngircd.conf"]
        );
    }

    #[test]
    fn the_note_states_flood_control_and_the_connection_limit() {
        let note = limits_note(&config()).join(" ");
        assert!(note.contains("MaxPenaltyTime = 0"), "{note}");
        assert!(note.contains("1100 connections"), "{note}");
        assert!(note.contains("single thread"), "{note}");
        let unlimited = NgircdConfig {
            max_connections: 0,
            ..config()
        };
        assert!(limits_note(&unlimited).join(" ").contains("no limit"));
    }

    /// ngircd itself accepts the configuration (`--configtest`), when it
    /// is installed.
    #[test]
    fn ngircd_accepts_the_configuration() {
        let Some(ngircd) = find() else {
            eprintln!("skipped: {}", missing_reason());
            return;
        };
        assert!(is_ngircd(&ngircd));
        let dir = tempfile::tempdir().unwrap();
        let c = NgircdConfig {
            dir: dir.path().to_path_buf(),
            ..config()
        };
        let path = write_files(&c).unwrap();
        let out = std::process::Command::new(&ngircd)
            .args(["--configtest", "--config"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains("MaxPenaltyTime = 0"), "{text}");
        assert!(text.contains("Ports = 16667"), "{text}");
        assert!(!text.contains("Can't open include directory"), "{text}");
        assert!(!text.contains("No administrative information"), "{text}");
    }
}
