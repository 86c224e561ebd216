//! A real one-node Slurm cluster for the tests that run smtlab the way a
//! cluster's users do (`srun`, `sbatch`, `scancel`): Debian's `slurm-wlm`
//! and `munge`, every file under one temporary directory, started as root
//! and stopped by the pids it started.
//!
//! [`Cluster::start`] writes a munge key and a `slurm.conf` (this host as
//! the controller and the one node, its CPUs, a default partition; state,
//! spool, logs and pid files in the directory; the default ports unless
//! taken), starts `munged` on a socket of its own (`AuthInfo=socket=...`
//! points Slurm there), then `slurmctld` and `slurmd` in the foreground
//! (children of the test, so their pids are known and they are reaped),
//! and waits until `sinfo` shows the node idle. Every Slurm
//! command a test runs comes from [`Cluster::command`], with `SLURM_CONF`
//! pointing at this cluster's configuration. Dropping the cluster (a test
//! that panics included) cancels its jobs, stops each daemon with SIGTERM
//! and then SIGKILL after a deadline, reaps it, kills whatever of the
//! cluster's is still running (every process of it carries its
//! `SLURM_CONF` in its environment), and removes the directory.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The programs the cluster needs: the daemons, and the commands the
/// tests run.
const PROGRAMS: [&str; 9] = [
    "munged",
    "slurmctld",
    "slurmd",
    "srun",
    "sbatch",
    "squeue",
    "scancel",
    "sinfo",
    "scontrol",
];

/// How long the node may take to come up: about 1 s on the development
/// VM, about 15 s where the issue tried it, so four times the slower.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// How long a daemon has between SIGTERM and SIGKILL.
const STOP_DEADLINE: Duration = Duration::from_secs(10);

/// A daemon the cluster started: its process (a child of the test) and
/// the files its messages go to.
struct Daemon {
    name: &'static str,
    child: Child,
    /// Its log file (the daemon's own) and its captured stdout and stderr.
    logs: [PathBuf; 2],
}

/// A running one-node cluster; stopped and removed when dropped.
pub struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    host: String,
    cpus: usize,
    daemons: Vec<Daemon>,
}

/// Where `program` is: `PATH`, then the system directories root's `PATH`
/// has and a test's may not (`munged` and the Slurm daemons are in
/// `/usr/sbin`).
pub fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// Why no cluster can be started here, if it cannot.
pub fn unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some(
            "needs root: the one-node Slurm cluster's daemons (munged, slurmctld, slurmd) run \
             as root"
                .into(),
        );
    }
    let missing: Vec<&str> = PROGRAMS
        .iter()
        .copied()
        .filter(|p| find(p).is_none())
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "{} not installed (Debian's slurm-wlm and munge; scripts/setup.sh installs them)",
            missing.join(", ")
        ));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        return Some(format!(
            "the cluster's one node has {cpus} CPU here, and the tests start 2 tasks on it"
        ));
    }
    None
}

impl Cluster {
    /// A started cluster whose node is idle, or `None` (the reason
    /// printed as a skip) when this machine cannot run one. A cluster that
    /// does not come up is a failure quoting its daemons' logs.
    pub fn start() -> Option<Cluster> {
        if let Some(why) = unavailable() {
            super::skip(&why);
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("smtlab-slurm-")
            .tempdir()
            .unwrap();
        let host = short_host_name();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut cluster = Cluster {
            conf: dir.path().join("slurm.conf"),
            dir,
            host,
            cpus,
            daemons: Vec::new(),
        };
        // From here on a failure drops `cluster`, which stops what started.
        cluster.start_munged();
        cluster.write_conf();
        cluster.start_daemon("slurmctld", &["-D", "-c"]);
        let host = cluster.host.clone();
        cluster.start_daemon("slurmd", &["-D", "-N", &host]);
        cluster.wait_idle();
        Some(cluster)
    }

    /// This host's short name: the cluster's controller and its node.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The node's CPUs (`CPUs=` in `slurm.conf`).
    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// The cluster's configuration file (`SLURM_CONF`).
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// A Slurm command (`srun`, `sbatch`, ...) of this cluster: its
    /// `SLURM_CONF`, and none of the variables of a job the test itself
    /// may run in (an `srun` inside an allocation would start a step of
    /// that job on another cluster) or of another launcher (smtlab reads
    /// Open MPI's and PMI's before Slurm's).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(find(program).unwrap_or_else(|| program.into()));
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if ["SLURM_", "OMPI_", "PMI_", "PMIX_", "MPI_LOCAL"]
                .iter()
                .any(|p| k.starts_with(p))
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("SLURM_CONF", &self.conf).stdin(Stdio::null());
        cmd
    }

    /// Run `cmd` to its end, at most `limit`; its output. A command still
    /// running then is killed and reaped, and the test fails showing what
    /// it printed and the daemons' logs.
    #[track_caller]
    pub fn output_within(&self, cmd: &mut Command, limit: Duration) -> Output {
        let mut child = Running::spawn(cmd);
        let until = Instant::now() + limit;
        loop {
            if let Some(out) = child.try_finish() {
                return out;
            }
            if Instant::now() > until {
                let out = child.kill();
                panic!(
                    "{cmd:?} still running after {limit:?}\nstdout:\n{}\nstderr:\n{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until job `id` is over (gone from `squeue`, or in a final
    /// state), at most `limit`; its final state as `scontrol` tells it
    /// (`JobState=COMPLETED ... ExitCode=0:0 ...`), or `None` once
    /// slurmctld has forgotten it.
    #[track_caller]
    pub fn wait_job(&self, id: &str, limit: Duration) -> Option<String> {
        let until = Instant::now() + limit;
        loop {
            let out = self
                .command("squeue")
                .args(["-h", "-j", id, "-o", "%T"])
                .output()
                .unwrap();
            let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
            // An unknown job id is an error: the job is long gone.
            if state.is_empty() || !out.status.success() || is_final(&state) {
                break;
            }
            assert!(
                Instant::now() < until,
                "job {id} still {state} after {limit:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let out = self
            .command("scontrol")
            .args(["show", "job", "-o", id])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The ids of the cluster's jobs not yet over (none if squeue cannot
    /// tell: this runs on drop too, where a panic would abort the tests).
    pub fn jobs(&self) -> Vec<String> {
        let Ok(out) = self.command("squeue").args(["-h", "-o", "%i %T"]).output() else {
            return Vec::new();
        };
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, state)| !is_final(state))
            .map(|(id, _)| id.to_string())
            .collect()
    }

    /// Every daemon's log and captured stderr (their last lines), for a
    /// failure's message.
    pub fn logs(&self) -> String {
        let mut s = String::new();
        for d in &self.daemons {
            // munged in the foreground writes to stderr, not its log file.
            for log in d.logs.iter().filter(|l| l.exists()) {
                s.push_str(&format!("--- {} ({}):\n", d.name, log.display()));
                s.push_str(&tail(log, 40));
            }
        }
        s
    }

    /// munged on a socket of its own with a key made for this cluster;
    /// returns once its socket is there. `--force`: munged refuses to run
    /// when a directory on the path of its key, socket or logs is open to
    /// others (a TMPDIR under a shared directory), which does not matter
    /// for a key that lives as long as one test.
    fn start_munged(&mut self) {
        let dir = self.dir.path().to_path_buf();
        let key = dir.join("munge.key");
        let mut bytes = vec![0u8; 1024];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .unwrap();
        std::fs::write(&key, &bytes).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
        let socket = self.munge_socket();
        let args: Vec<String> = [
            "--foreground".into(),
            "--force".into(),
            format!("--key-file={}", key.display()),
            format!("--socket={}", socket.display()),
            format!("--pid-file={}", dir.join("munged.pid").display()),
            format!("--log-file={}", dir.join("munged.log").display()),
            format!("--seed-file={}", dir.join("munged.seed").display()),
        ]
        .into();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.spawn_daemon("munged", &args, dir.join("munged.log"));
        self.wait_for("munged's socket", Duration::from_secs(10), || {
            socket.exists()
        });
    }

    fn munge_socket(&self) -> PathBuf {
        self.dir.path().join("munge.socket")
    }

    /// `slurm.conf`: the one node, the default partition, everything the
    /// daemons write under the temporary directory, jobs run as root.
    fn write_conf(&self) {
        let d = self.dir.path();
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }
        let (ctld_port, slurmd_port) = ports();
        let host = &self.host;
        let conf = format!(
            "# A one-node cluster for smtlab's tests (tests/support/slurm.rs).
ClusterName=smtlab-test
SlurmctldHost={host}
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
# No mail: Debian's default mail program is not installed.
MailProg=/bin/true
# A cancelled task gets 2 s between SIGTERM and SIGKILL (not 30).
KillWait=2
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName={host} CPUs={cpus} State=UNKNOWN
PartitionName=smtlab Nodes={host} Default=YES MaxTime=INFINITE State=UP
",
            socket = self.munge_socket().display(),
            d = d.display(),
            cpus = self.cpus,
        );
        std::fs::write(&self.conf, conf).unwrap();
    }

    /// A Slurm daemon in the foreground (`-D`), logging to its file.
    fn start_daemon(&mut self, name: &'static str, args: &[&str]) {
        let log = self.dir.path().join(format!("{name}.log"));
        self.spawn_daemon(name, args, log);
    }

    fn spawn_daemon(&mut self, name: &'static str, args: &[&str], log: PathBuf) {
        let stderr = self.dir.path().join(format!("{name}.stderr"));
        let child = self
            .command(name)
            .args(args)
            .stdout(Stdio::from(std::fs::File::create(&stderr).unwrap()))
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&stderr)
                    .unwrap(),
            ))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        self.daemons.push(Daemon {
            name,
            child,
            logs: [log, stderr],
        });
    }

    /// Wait until the node is idle: registered with the controller and
    /// free to run jobs.
    fn wait_idle(&mut self) {
        let host = self.host.clone();
        let until = Instant::now() + START_DEADLINE;
        loop {
            let out = self
                .command("sinfo")
                .args(["-h", "-N", "-n", &host, "-o", "%T"])
                .output()
                .unwrap();
            let last = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
            if out.status.success() && last == "idle" {
                return;
            }
            self.assert_daemons_alive(&format!("the node is {last:?}"));
            assert!(
                Instant::now() < until,
                "the Slurm node {host} is not idle after {START_DEADLINE:?} (sinfo: \
                 {last:?})\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Wait until `done` holds, at most `limit`, failing with the logs
    /// (and at once if a daemon died).
    fn wait_for(&mut self, what: &str, limit: Duration, done: impl Fn() -> bool) {
        let until = Instant::now() + limit;
        while !done() {
            self.assert_daemons_alive(what);
            assert!(
                Instant::now() < until,
                "{what}: not within {limit:?}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A daemon that exited while the cluster starts is a failure naming it.
    fn assert_daemons_alive(&mut self, waiting_for: &str) {
        let dead: Vec<String> = self
            .daemons
            .iter_mut()
            .filter_map(|d| match d.child.try_wait() {
                Ok(Some(status)) => Some(format!("{} exited ({status})", d.name)),
                _ => None,
            })
            .collect();
        assert!(
            dead.is_empty(),
            "{} while waiting for {waiting_for}\n{}",
            dead.join(", "),
            self.logs()
        );
    }

    /// Cancel every job and wait (briefly) until none is left, so that no
    /// step outlives the daemons.
    fn cancel_jobs(&self) {
        if self.jobs().is_empty() {
            return;
        }
        let _ = self.command("scancel").args(["--user", "root"]).output();
        let until = Instant::now() + STOP_DEADLINE;
        while !self.jobs().is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // The daemons must be there to cancel jobs: munged last of all.
        if self.daemons.len() == 3 {
            self.cancel_jobs();
        }
        while let Some(mut d) = self.daemons.pop() {
            stop(&mut d.child);
        }
        // Whatever of the cluster is left (a slurmstepd, a task, an srun
        // the test lost): each carries this cluster's SLURM_CONF.
        let mark = format!("SLURM_CONF={}", self.conf.display());
        for pid in super::processes_with_env(&mark) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        // The temporary directory goes with `dir`.
    }
}

/// SIGTERM, then SIGKILL after the deadline; reaped either way.
fn stop(child: &mut Child) {
    let pid = Pid::from_raw(child.id() as i32);
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let _ = kill(pid, Signal::SIGTERM);
    let until = Instant::now() + STOP_DEADLINE;
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A Slurm job state that does not change any more.
fn is_final(state: &str) -> bool {
    [
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    ]
    .iter()
    .any(|s| state.starts_with(s))
}

/// `hostname -s`: what Slurm calls this host, the node's name.
fn short_host_name() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    assert!(out.status.success(), "hostname -s failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The controller's and slurmd's ports: Slurm's defaults (6817, 6818)
/// when free, else ones the kernel picks (another cluster, a real one or a
/// test's, may hold the defaults). Both listeners are held until both are
/// chosen, so the two differ.
fn ports() -> (u16, u16) {
    let listen = |default: u16| {
        TcpListener::bind(("0.0.0.0", default))
            .or_else(|_| TcpListener::bind(("0.0.0.0", 0)))
            .unwrap()
    };
    let a = listen(6817);
    let b = listen(6818);
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// The last `lines` lines of a file, or why it cannot be read.
fn tail(path: &Path, lines: usize) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            let from = all.len().saturating_sub(lines);
            all[from..].iter().map(|l| format!("{l}\n")).collect()
        }
        Err(e) => format!("({e})\n"),
    }
}

/// A started command whose output is read as it comes (a full pipe must
/// not stop it), killed and reaped if dropped unfinished.
pub struct Running {
    child: Option<Child>,
    readers: Vec<std::thread::JoinHandle<Vec<u8>>>,
}

impl Running {
    /// Start `cmd` with its stdout and stderr captured.
    pub fn spawn(cmd: &mut Command) -> Running {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        let out = read_all(child.stdout.take().unwrap());
        let err = read_all(child.stderr.take().unwrap());
        let readers = vec![out, err];
        Running {
            child: Some(child),
            readers,
        }
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Whether it has ended.
    pub fn finished(&mut self) -> bool {
        !matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    /// Its output if it has ended.
    pub fn try_finish(&mut self) -> Option<Output> {
        let status = self.child.as_mut()?.try_wait().unwrap()?;
        self.child = None;
        Some(self.collect(status))
    }

    /// Killed (SIGKILL) and reaped; what it printed.
    pub fn kill(&mut self) -> Output {
        let mut child = self.child.take().expect("running");
        let _ = child.kill();
        let status = child.wait().unwrap();
        self.collect(status)
    }

    fn collect(&mut self, status: std::process::ExitStatus) -> Output {
        let mut streams = self.readers.drain(..).map(|r| r.join().unwrap());
        Output {
            status,
            stdout: streams.next().unwrap_or_default(),
            stderr: streams.next().unwrap_or_default(),
        }
    }
}

/// Everything `r` gives until its end, read on a thread of its own.
fn read_all(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        buf
    })
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
