//! The doctor's verdicts: one [`Check`] per capability (in
//! [`CHECK_NAMES`] order) with its finding and fix, and what can and cannot
//! be measured here, judged from [`Facts`] by [`diagnose`].
//!
//! Judging is pure, so every verdict is unit-tested with synthetic facts for
//! machines we do not have; [`run`] is the one entry point that looks at
//! this machine. Called by the CLI's `smtlab doctor`, which only renders the
//! [`Diagnosis`].

use serde::Serialize;

use smtlab_allocators::{INSTALLED_LIB_DIR, SMTALLOC_FILE};
use smtlab_counters::{OpenError, HARDWARE_EVENTS};
use smtlab_types::{CounterScope, CounterStatus, CpuSet};

use crate::facts::Facts;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Measurable as is.
    Ok,
    /// Works, but with a limitation or a setting that distorts results.
    Warn,
    /// This machine cannot measure it as configured.
    Missing,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Ok => "ok",
            CheckStatus::Warn => "warn",
            CheckStatus::Missing => "missing",
        }
    }
}

/// One line of the doctor's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub status: CheckStatus,
    pub finding: String,
    /// What to do about it; `None` when nothing needs doing.
    pub fix: Option<String>,
}

/// The doctor's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnosis {
    pub checks: Vec<Check>,
    pub can_measure: Vec<String>,
    pub cannot_measure: Vec<String>,
}

impl Diagnosis {
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.name == name)
    }
}

/// Every check's name, in report order.
pub const CHECK_NAMES: [&str; 17] = [
    "pmu",
    "perf_event_paranoid",
    "hypervisor",
    "emulation",
    "cpuset",
    "smt",
    "thp",
    "cpufreq_governor",
    "open_files",
    "allocator_glibc",
    "allocator_jemalloc",
    "allocator_mimalloc",
    "allocator_tcmalloc",
    "allocator_jemalloc-percpu",
    "allocator_smtalloc",
    "wrk",
    "hyperfine",
];

/// Look at this machine and judge it.
pub fn run() -> Diagnosis {
    diagnose(&Facts::gather())
}

fn check(name: &str, status: CheckStatus, finding: String, fix: Option<String>) -> Check {
    Check {
        name: name.to_string(),
        status,
        finding,
        fix,
    }
}

const VPMU_FIX: &str = "run on bare metal, or give the VM a virtual PMU (QEMU/libvirt: \
     host-passthrough CPU with <pmu state='on'/>; VMware: \"virtualize CPU performance \
     counters\"; cloud: a bare-metal instance)";

fn check_pmu(f: &Facts, can: &mut Vec<String>, cannot: &mut Vec<String>) -> Check {
    let plan = &f.counters;
    let hw_user: Vec<(&str, Option<&OpenError>)> = HARDWARE_EVENTS
        .iter()
        .map(|&n| (n, plan.skipped(n, CounterScope::User)))
        .collect();
    let ok: Vec<&str> = hw_user
        .iter()
        .filter(|(_, s)| s.is_none())
        .map(|(n, _)| *n)
        .collect();
    let missing: Vec<&str> = hw_user
        .iter()
        .filter(|(_, s)| s.is_some())
        .map(|(n, _)| *n)
        .collect();
    if !plan.pmu {
        let reason = hw_user
            .first()
            .and_then(|(_, s)| s.map(|e| e.to_string()))
            .unwrap_or_default();
        let refused = hw_user
            .iter()
            .any(|(_, s)| s.is_some_and(|e| e.status() == CounterStatus::NotPermitted));
        cannot.push(
            "hardware counters (cycles, instructions, cache/TLB/branch misses) and CPI/MPKI"
                .to_string(),
        );
        return if refused {
            check(
                "pmu",
                CheckStatus::Missing,
                format!("hardware counters refused: {reason}"),
                Some("see perf_event_paranoid".to_string()),
            )
        } else {
            check(
                "pmu",
                CheckStatus::Missing,
                format!(
                    "no hardware PMU (virtual machine?): hardware counters unsupported, \
                     software counters only ({reason})"
                ),
                Some(VPMU_FIX.to_string()),
            )
        };
    }
    let scopes = if plan.kernel_counting {
        "user and kernel mode"
    } else {
        "user mode"
    };
    can.push(format!("hardware counters ({scopes}): {}", ok.join(", ")));
    if ok.contains(&"instructions") && ok.contains(&"cycles") {
        can.push("CPI, IPC and misses per 1000 instructions".to_string());
    }
    if missing.is_empty() {
        check(
            "pmu",
            CheckStatus::Ok,
            format!(
                "hardware PMU present: all {} hardware events open",
                ok.len()
            ),
            None,
        )
    } else {
        cannot.push(format!(
            "{} (not supported by this PMU)",
            missing.join(", ")
        ));
        check(
            "pmu",
            CheckStatus::Warn,
            format!(
                "hardware PMU present: {} of {} events open; not supported here: {}",
                ok.len(),
                HARDWARE_EVENTS.len(),
                missing.join(", ")
            ),
            Some(
                "none for these events: this CPU (or its virtual PMU) has no such generic \
                 event (`perf list` shows what it has)"
                    .to_string(),
            ),
        )
    }
}

fn check_paranoid(f: &Facts, can: &mut Vec<String>, cannot: &mut Vec<String>) -> Check {
    let plan = &f.counters;
    let Some(p) = plan.paranoid else {
        cannot.push("perf counters (no perf events in this kernel)".to_string());
        return check(
            "perf_event_paranoid",
            CheckStatus::Missing,
            "no /proc/sys/kernel/perf_event_paranoid: this kernel has no perf events".to_string(),
            Some("use a kernel built with CONFIG_PERF_EVENTS".to_string()),
        );
    };
    let user_refused = plan
        .skipped("page-faults", CounterScope::User)
        .or_else(|| plan.skipped("page-faults", CounterScope::All))
        .map(|e| e.to_string());
    let fix_sysctl = "sudo sysctl kernel.perf_event_paranoid=1 (persist it in \
                      /etc/sysctl.d/), or run as root or with CAP_PERFMON"
        .to_string();
    if let Some(reason) = user_refused {
        cannot.push("any perf counter: perf_event_open is refused".to_string());
        return check(
            "perf_event_paranoid",
            CheckStatus::Missing,
            format!("{p}: {reason}"),
            Some(fix_sysctl),
        );
    }
    if plan.kernel_counting {
        can.push(
            "software counters: context-switches, cpu-migrations, page-faults (user + kernel)"
                .to_string(),
        );
        let who = if f.euid == 0 {
            "running as root, so".to_string()
        } else if p <= 1 {
            format!("at {p} unprivileged users may count kernel mode, so")
        } else {
            "this user has CAP_PERFMON, so".to_string()
        };
        return check(
            "perf_event_paranoid",
            CheckStatus::Ok,
            format!("{p}; {who} user and kernel mode are counted separately"),
            None,
        );
    }
    can.push("software counter page-faults (user mode)".to_string());
    cannot.push(
        "kernel-mode counts, and the context-switches and cpu-migrations counters \
         (rusage still gives context switches)"
            .to_string(),
    );
    check(
        "perf_event_paranoid",
        CheckStatus::Warn,
        format!(
            "{p}: kernel mode is refused to this user: hardware counters are user-mode only, \
             context-switches and cpu-migrations are not counted"
        ),
        Some(fix_sysctl),
    )
}

fn check_hypervisor(f: &Facts) -> Check {
    let h = &f.hypervisor;
    let steal = h
        .steal_pct
        .map(|s| format!("; steal time {s:.2}% since boot"))
        .unwrap_or_default();
    if !h.cpuinfo_flag && h.vendor.is_none() {
        return check(
            "hypervisor",
            CheckStatus::Ok,
            format!("none detected (bare metal){steal}"),
            None,
        );
    }
    let who = h
        .vendor
        .clone()
        .unwrap_or_else(|| "vendor unknown (hypervisor flag in /proc/cpuinfo)".to_string());
    check(
        "hypervisor",
        CheckStatus::Warn,
        format!(
            "virtual machine: {who}{steal}; vCPUs may share host cores with other guests and \
             the topology shown may not be the host's"
        ),
        Some(
            "for final numbers use bare metal; in a VM, pin each vCPU to its own host CPU and \
             expose the host CPU model, its PMU and its SMT topology"
                .to_string(),
        ),
    )
}

/// Emulated CPUs (QEMU TCG) run the kernel's real topology code, so they
/// check smtlab itself; but their speed is the emulator's.
fn check_emulation(f: &Facts, cannot: &mut Vec<String>) -> Check {
    match &f.hypervisor.emulated {
        None => check(
            "emulation",
            CheckStatus::Ok,
            "the CPUs are not emulated".to_string(),
            None,
        ),
        Some(why) => {
            cannot.push(format!(
                "real hardware speed: the CPUs are emulated ({why}), so timings, speedups and \
                 SMT yields are the emulator's (placements and pinning are real)"
            ));
            check(
                "emulation",
                CheckStatus::Warn,
                format!(
                    "emulated CPUs: {why}; the virtual CPUs take turns on the host's threads and \
                     SMT siblings share nothing physical: the topology, placements and pinning \
                     are real, timings are not"
                ),
                Some(
                    "for numbers, run on hardware or under KVM (QEMU's -accel kvm); an emulated \
                     guest is for checking what smtlab does on a topology you do not have"
                        .to_string(),
                ),
            )
        }
    }
}

fn check_cpuset(f: &Facts, can: &mut Vec<String>, cannot: &mut Vec<String>) -> Check {
    let c = match &f.cpus {
        Ok(c) => c,
        Err(e) => {
            return check(
                "cpuset",
                CheckStatus::Warn,
                format!("could not read the topology: {e}"),
                None,
            )
        }
    };
    let source = c
        .cpuset_source
        .as_ref()
        .map(|s| format!(" (from {s})"))
        .unwrap_or_default();
    let n = c.allowed.len();
    can.push(format!(
        "thread, process and hybrid models on {n} CPU{} ({})",
        if n == 1 { "" } else { "s" },
        c.allowed.to_list()
    ));
    if n < 2 {
        cannot.push("scaling over CPUs: only one CPU is allowed".to_string());
    }
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    if c.allowed != c.online {
        problems.push(format!(
            "may use only CPUs {} of the online {}{source}: placements use only these",
            c.allowed.to_list(),
            c.online.to_list()
        ));
        fixes.push(
            "run outside the restricting cgroup or affinity (docker --cpuset-cpus, taskset, \
             systemd AllowedCPUs) to measure the whole machine"
                .to_string(),
        );
    }
    if let Some((q, file)) = &f.cpu_quota {
        if *q < n as f64 {
            problems.push(format!(
                "CPU time limited to {q:.2} CPUs by {file}: workers beyond that are throttled, \
                 which distorts scaling"
            ));
            fixes.push("remove the CPU quota (docker --cpus, systemd CPUQuota)".to_string());
        }
    }
    if problems.is_empty() {
        check(
            "cpuset",
            CheckStatus::Ok,
            format!(
                "may use all {} online CPUs ({}){source}, no CPU quota",
                c.online.len(),
                c.online.to_list()
            ),
            None,
        )
    } else {
        check(
            "cpuset",
            CheckStatus::Warn,
            problems.join("; "),
            Some(fixes.join("; ")),
        )
    }
}

fn check_smt(f: &Facts, can: &mut Vec<String>, cannot: &mut Vec<String>) -> Check {
    const CONTROL: &str = "/sys/devices/system/cpu/smt/control";
    let control = f.smt_control.as_deref();
    let ctl = control
        .map(|v| format!("{CONTROL} is {v:?}"))
        .unwrap_or_else(|| format!("no {CONTROL}"));
    let (cores, per_core, active) = match &f.cpus {
        Ok(c) => (c.cores, c.max_pus_per_core, c.smt_active),
        Err(_) => (0, 0, false),
    };
    if cores >= 2 {
        can.push(format!(
            "core scalability (one worker per core, up to {cores} cores)"
        ));
    }
    if active {
        can.push(format!(
            "SMT scalability ({per_core} hardware threads per core): compact vs scatter"
        ));
        let toggle = match (control, f.smt_control_writable) {
            (Some("on"), true) => {
                format!("; it is writable: `echo off > {CONTROL}` gives an SMT-off comparison")
            }
            (Some("on"), false) => {
                "; root could switch it off for an SMT-off comparison".to_string()
            }
            _ => String::new(),
        };
        return check(
            "smt",
            CheckStatus::Ok,
            format!("SMT on: {per_core} PUs per core; {ctl}{toggle}"),
            None,
        );
    }
    cannot.push("SMT scalability and SMT-sibling placements (no SMT here)".to_string());
    match control {
        Some("off") => check(
            "smt",
            CheckStatus::Warn,
            format!("SMT is switched off ({ctl}): one PU per core in use"),
            Some(if f.smt_control_writable {
                format!("`echo on > {CONTROL}` to measure SMT")
            } else {
                format!("as root: `echo on > {CONTROL}` to measure SMT")
            }),
        ),
        Some("forceoff") => check(
            "smt",
            CheckStatus::Missing,
            format!("SMT disabled at boot ({ctl})"),
            Some("remove `nosmt` from the kernel command line and reboot".to_string()),
        ),
        _ => check(
            "smt",
            CheckStatus::Missing,
            format!("no SMT: {cores} cores with one PU each ({ctl}); SMT scalability cannot be measured here"),
            Some(
                "run on a CPU with SMT (for a VM: a vCPU topology with 2 threads per core, \
                 pinned to host sibling pairs)"
                    .to_string(),
            ),
        ),
    }
}

fn check_thp(f: &Facts) -> Check {
    const THP: &str = "/sys/kernel/mm/transparent_hugepage";
    let Some(enabled) = f.thp_enabled.as_deref() else {
        return check(
            "thp",
            CheckStatus::Missing,
            format!("no {THP}: kernel without transparent huge pages"),
            Some("use a kernel with CONFIG_TRANSPARENT_HUGEPAGE".to_string()),
        );
    };
    let defrag = f.thp_defrag.as_deref().unwrap_or("?");
    let what = match enabled {
        "always" => "every large anonymous region may get huge pages",
        "madvise" => "only memory that asks with madvise(MADV_HUGEPAGE) gets huge pages",
        _ => "no transparent huge pages: huge-page allocators gain nothing",
    };
    let finding = format!("enabled={enabled}, defrag={defrag}: {what}");
    if enabled == "never" {
        check(
            "thp",
            CheckStatus::Warn,
            finding,
            Some(format!("as root: `echo madvise > {THP}/enabled`")),
        )
    } else {
        check("thp", CheckStatus::Ok, finding, None)
    }
}

fn check_governor(f: &Facts, cannot: &mut Vec<String>) -> Check {
    if f.governors.is_empty() {
        cannot.push("the CPU frequency policy (no cpufreq here)".to_string());
        let vm = f.hypervisor.cpuinfo_flag || f.hypervisor.vendor.is_some();
        return check(
            "cpufreq_governor",
            CheckStatus::Warn,
            if vm {
                "no cpufreq in this VM: the host sets the frequency; smtlab cannot see or fix it"
                    .to_string()
            } else {
                "no cpufreq: no frequency driver loaded, the frequency cannot be checked"
                    .to_string()
            },
            Some(if vm {
                "on the host: the performance governor, and turbo off for stable numbers"
                    .to_string()
            } else {
                "load a cpufreq driver (intel_pstate, amd-pstate or acpi-cpufreq)".to_string()
            }),
        );
    }
    let mut by: Vec<(String, CpuSet)> = Vec::new();
    for (cpu, g) in &f.governors {
        match by.iter_mut().find(|(x, _)| x == g) {
            Some((_, set)) => {
                set.insert(*cpu);
            }
            None => by.push((g.clone(), std::iter::once(*cpu).collect())),
        }
    }
    let summary = by
        .iter()
        .map(|(g, s)| format!("{g} on CPUs {}", s.to_list()))
        .collect::<Vec<_>>()
        .join(", ");
    if by.iter().all(|(g, _)| g == "performance") {
        check("cpufreq_governor", CheckStatus::Ok, summary, None)
    } else {
        check(
            "cpufreq_governor",
            CheckStatus::Warn,
            format!("{summary}: the frequency follows the load, so results vary with ramp-up"),
            Some(
                "sudo cpupower frequency-set -g performance (Debian package linux-cpupower)"
                    .to_string(),
            ),
        )
    }
}

fn check_open_files(f: &Facts) -> Check {
    let per_thread = f.counters.fds_per_thread();
    let allowed = f.cpus.as_ref().map(|c| c.allowed.len()).unwrap_or(1);
    // Oversubscription studies run up to twice as many threads as CPUs.
    let wanted = 2 * allowed;
    let Some((soft, hard)) = f.nofile else {
        return check(
            "open_files",
            CheckStatus::Warn,
            "could not read RLIMIT_NOFILE".to_string(),
            None,
        );
    };
    if per_thread == 0 {
        return check(
            "open_files",
            CheckStatus::Ok,
            format!("ulimit -n is {soft}; no counter fds needed (no perf counters)"),
            None,
        );
    }
    // Keep 64 fds for everything else (the store, pipes, stdio).
    let room = |limit: u64| limit.saturating_sub(64) / per_thread as u64;
    let finding = format!(
        "ulimit -n is {soft} (hard {hard}): counters on about {} threads at {per_thread} fds \
         each",
        room(soft)
    );
    if room(soft) >= wanted as u64 {
        check("open_files", CheckStatus::Ok, finding, None)
    } else if room(hard) >= wanted as u64 {
        check(
            "open_files",
            CheckStatus::Warn,
            format!("{finding}; fewer than {wanted} (2 per allowed CPU)"),
            Some(format!("ulimit -n {hard} before running smtlab")),
        )
    } else {
        check(
            "open_files",
            CheckStatus::Warn,
            format!("{finding}; fewer than {wanted} (2 per allowed CPU), even at the hard limit"),
            Some(
                "raise the hard limit (/etc/security/limits.conf nofile, or systemd \
                 LimitNOFILE)"
                    .to_string(),
            ),
        )
    }
}

/// Judge the facts (pure).
pub fn diagnose(f: &Facts) -> Diagnosis {
    let mut can = vec![
        "wall time, operations/s, user and system CPU time, context switches, page faults and \
         peak RSS (rusage)"
            .to_string(),
    ];
    let mut cannot = Vec::new();
    if f.smaps_rollup {
        can.push("PSS and AnonHugePages per process (/proc/PID/smaps_rollup)".to_string());
    } else {
        cannot.push("PSS and huge-page use (no /proc/PID/smaps_rollup)".to_string());
    }
    let mut checks = vec![
        check_pmu(f, &mut can, &mut cannot),
        check_paranoid(f, &mut can, &mut cannot),
        check_hypervisor(f),
        check_emulation(f, &mut cannot),
        check_cpuset(f, &mut can, &mut cannot),
        check_smt(f, &mut can, &mut cannot),
        check_thp(f),
        check_governor(f, &mut cannot),
        check_open_files(f),
    ];

    let mut found = Vec::new();
    let mut absent = Vec::new();
    for (a, path) in &f.allocators {
        let name = format!("allocator_{}", a.name);
        match (a.file, path) {
            (None, _) => {
                found.push(a.name);
                checks.push(check(
                    &name,
                    CheckStatus::Ok,
                    format!("always available: {}", a.about),
                    None,
                ));
            }
            (Some(_), Some(p)) => {
                found.push(a.name);
                checks.push(check(
                    &name,
                    CheckStatus::Ok,
                    format!("{}: {}", p.display(), a.about),
                    None,
                ));
            }
            (Some(SMTALLOC_FILE), None) => {
                absent.push(a.name);
                checks.push(check(
                    &name,
                    CheckStatus::Missing,
                    format!(
                        "not built: no {SMTALLOC_FILE} next to the smtlab binary nor in its \
                         ../{INSTALLED_LIB_DIR}/"
                    ),
                    Some(
                        "cargo build --release -p smtalloc-preload, or scripts/install.sh PREFIX"
                            .to_string(),
                    ),
                ));
            }
            (Some(file), None) => {
                absent.push(a.name);
                checks.push(check(
                    &name,
                    CheckStatus::Missing,
                    format!("not installed: no {file} in the library directories"),
                    Some(format!("apt install {}", a.package)),
                ));
            }
        }
    }
    if found.len() > 1 {
        can.push(format!("allocator comparisons: {}", found.join(", ")));
    }
    if !absent.is_empty() {
        cannot.push(format!(
            "allocator comparisons with {} (not installed)",
            absent.join(", ")
        ));
    }
    for (t, path) in &f.tools {
        match path {
            Some(p) => {
                checks.push(check(
                    t.name,
                    CheckStatus::Ok,
                    format!("{}: {}", p.display(), t.about),
                    None,
                ));
                if t.name == "wrk" {
                    can.push("server load tests (wrk)".to_string());
                }
            }
            None => {
                checks.push(check(
                    t.name,
                    CheckStatus::Missing,
                    format!("not in PATH: {}", t.about),
                    Some(format!("apt install {}", t.package)),
                ));
                cannot.push(match t.name {
                    "wrk" => "server load tests (wrk not installed)".to_string(),
                    "hyperfine" => {
                        "cross-checks of wall time with hyperfine (not installed)".to_string()
                    }
                    other => format!("{other} (not installed)"),
                });
            }
        }
    }
    Diagnosis {
        checks,
        can_measure: can,
        cannot_measure: cannot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smtlab_allocators::ALLOCATORS;
    use smtlab_counters::{classify_open_error, CounterPlan, ProbeFacts};

    use crate::facts::{CpuFacts, HypervisorFacts, TOOLS};

    fn plan(kernel: bool, pmu: bool) -> CounterPlan {
        let err = |e: i32, s| {
            Err(classify_open_error(
                &std::io::Error::from_raw_os_error(e),
                s,
                Some(2),
            ))
        };
        CounterPlan::from_probe(ProbeFacts {
            paranoid: Some(2),
            user: Ok(()),
            kernel: if kernel {
                Ok(())
            } else {
                err(libc::EACCES, CounterScope::Kernel)
            },
            hardware: HARDWARE_EVENTS
                .iter()
                .map(|&n| {
                    (
                        n,
                        if pmu {
                            Ok(())
                        } else {
                            err(libc::ENOENT, CounterScope::User)
                        },
                    )
                })
                .collect(),
        })
    }

    /// This development VM: 2 cores, no SMT, no PMU, KVM, no cpufreq.
    fn vm_facts() -> Facts {
        Facts {
            euid: 0,
            counters: plan(true, false),
            hypervisor: HypervisorFacts {
                cpuinfo_flag: true,
                vendor: Some("KVM (lscpu)".to_string()),
                steal_pct: Some(0.1),
                emulated: None,
            },
            cpus: Ok(CpuFacts {
                online: CpuSet::parse_list("0-1").unwrap(),
                allowed: CpuSet::parse_list("0-1").unwrap(),
                cpuset_source: None,
                cores: 2,
                max_pus_per_core: 1,
                smt_active: false,
            }),
            cpu_quota: None,
            smt_control: Some("notsupported".to_string()),
            smt_control_writable: true,
            thp_enabled: Some("madvise".to_string()),
            thp_defrag: Some("madvise".to_string()),
            governors: vec![],
            smaps_rollup: true,
            allocators: ALLOCATORS.iter().map(|a| (*a, None)).collect(),
            tools: TOOLS.iter().map(|t| (*t, None)).collect(),
            nofile: Some((1024, 524288)),
        }
    }

    fn status(r: &Diagnosis, name: &str) -> CheckStatus {
        r.check(name)
            .unwrap_or_else(|| panic!("no check {name}"))
            .status
    }

    #[test]
    fn doctor_vm_without_pmu_or_smt() {
        let r = diagnose(&vm_facts());
        let names: Vec<&str> = r.checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, CHECK_NAMES);
        assert_eq!(status(&r, "pmu"), CheckStatus::Missing);
        assert!(r.check("pmu").unwrap().finding.contains("no hardware PMU"));
        assert!(r
            .check("pmu")
            .unwrap()
            .fix
            .as_deref()
            .unwrap()
            .contains("bare metal"));
        assert_eq!(status(&r, "perf_event_paranoid"), CheckStatus::Ok);
        assert_eq!(status(&r, "hypervisor"), CheckStatus::Warn);
        assert!(r.check("hypervisor").unwrap().finding.contains("KVM"));
        assert_eq!(status(&r, "emulation"), CheckStatus::Ok);
        assert_eq!(status(&r, "cpuset"), CheckStatus::Ok);
        assert_eq!(status(&r, "smt"), CheckStatus::Missing);
        assert_eq!(status(&r, "thp"), CheckStatus::Ok);
        assert_eq!(status(&r, "cpufreq_governor"), CheckStatus::Warn);
        assert!(r.check("cpufreq_governor").unwrap().finding.contains("VM"));
        assert_eq!(status(&r, "allocator_glibc"), CheckStatus::Ok);
        assert_eq!(status(&r, "allocator_jemalloc"), CheckStatus::Missing);
        assert_eq!(
            r.check("allocator_mimalloc").unwrap().fix.as_deref(),
            Some("apt install libmimalloc2.0")
        );
        assert_eq!(
            r.check("wrk").unwrap().fix.as_deref(),
            Some("apt install wrk")
        );
        // 3 software fds per thread: plenty of room at 1024.
        assert_eq!(status(&r, "open_files"), CheckStatus::Ok);
        let cannot = r.cannot_measure.join("\n");
        assert!(cannot.contains("hardware counters"), "{cannot}");
        assert!(cannot.contains("SMT scalability"), "{cannot}");
        let can = r.can_measure.join("\n");
        assert!(can.contains("context-switches"), "{can}");
        assert!(can.contains("core scalability"), "{can}");
    }

    #[test]
    fn emulated_cpus_are_said_to_have_the_emulators_speed() {
        let mut f = vm_facts();
        f.hypervisor.emulated = Some("QEMU TCG (CPU model \"QEMU TCG CPU version 2.5+\")".into());
        let r = diagnose(&f);
        let c = r.check("emulation").unwrap();
        assert_eq!(c.status, CheckStatus::Warn);
        assert!(c.finding.contains("QEMU TCG") && c.finding.contains("timings are not"));
        assert!(c.fix.as_deref().unwrap().contains("KVM"));
        let cannot = r.cannot_measure.join("\n");
        assert!(cannot.contains("real hardware speed"), "{cannot}");
    }

    #[test]
    fn doctor_bare_metal_with_smt_and_pmu_as_user() {
        let mut f = vm_facts();
        f.euid = 1000;
        f.counters = plan(false, true);
        f.hypervisor = HypervisorFacts::default();
        f.cpus = Ok(CpuFacts {
            online: CpuSet::parse_list("0-15").unwrap(),
            allowed: CpuSet::parse_list("0-7").unwrap(),
            cpuset_source: Some("/sys/fs/cgroup/x/cpuset.cpus.effective".to_string()),
            cores: 8,
            max_pus_per_core: 2,
            smt_active: true,
        });
        f.cpu_quota = Some((2.0, "/sys/fs/cgroup/x/cpu.max".to_string()));
        f.smt_control = Some("on".to_string());
        f.smt_control_writable = false;
        f.governors = (0..16)
            .map(|c| {
                (
                    c,
                    if c < 8 { "performance" } else { "powersave" }.to_string(),
                )
            })
            .collect();
        f.nofile = Some((200, 300));
        let r = diagnose(&f);
        assert_eq!(status(&r, "pmu"), CheckStatus::Ok);
        assert_eq!(status(&r, "perf_event_paranoid"), CheckStatus::Warn);
        let p = r.check("perf_event_paranoid").unwrap();
        assert!(p
            .fix
            .as_deref()
            .unwrap()
            .contains("sysctl kernel.perf_event_paranoid=1"));
        assert_eq!(status(&r, "hypervisor"), CheckStatus::Ok);
        let c = r.check("cpuset").unwrap();
        assert_eq!(c.status, CheckStatus::Warn);
        assert!(
            c.finding.contains("only CPUs 0-7 of the online 0-15"),
            "{}",
            c.finding
        );
        assert!(c.finding.contains("2.00 CPUs"), "{}", c.finding);
        let s = r.check("smt").unwrap();
        assert_eq!(s.status, CheckStatus::Ok);
        assert!(s.finding.contains("2 PUs per core"));
        let g = r.check("cpufreq_governor").unwrap();
        assert_eq!(g.status, CheckStatus::Warn);
        assert!(
            g.finding.contains("powersave on CPUs 8-15"),
            "{}",
            g.finding
        );
        // 10 fds per thread (user-only), 16 threads wanted: 200 is too few.
        let o = r.check("open_files").unwrap();
        assert_eq!(o.status, CheckStatus::Warn, "{o:?}");
        assert!(r.can_measure.iter().any(|c| c.contains("SMT scalability")));
        assert!(r.cannot_measure.iter().any(|c| c.contains("kernel-mode")));
    }

    #[test]
    fn doctor_smt_switched_off_and_thp_never() {
        let mut f = vm_facts();
        f.smt_control = Some("off".to_string());
        f.thp_enabled = Some("never".to_string());
        let r = diagnose(&f);
        let s = r.check("smt").unwrap();
        assert_eq!(s.status, CheckStatus::Warn);
        assert!(s.fix.as_deref().unwrap().contains("echo on >"));
        assert_eq!(status(&r, "thp"), CheckStatus::Warn);
    }

    #[test]
    fn doctor_pmu_with_an_unsupported_event() {
        let mut f = vm_facts();
        let mut facts = ProbeFacts {
            paranoid: Some(2),
            user: Ok(()),
            kernel: Ok(()),
            hardware: HARDWARE_EVENTS.iter().map(|&n| (n, Ok(()))).collect(),
        };
        facts.hardware[6].1 = Err(classify_open_error(
            &std::io::Error::from_raw_os_error(libc::ENOENT),
            CounterScope::User,
            Some(2),
        ));
        f.counters = CounterPlan::from_probe(facts);
        let r = diagnose(&f);
        let p = r.check("pmu").unwrap();
        assert_eq!(p.status, CheckStatus::Warn);
        assert!(p.finding.contains("9 of 10") && p.finding.contains("LLC-load-misses"));
    }

    #[test]
    fn doctor_live_runs() {
        let r = run();
        assert_eq!(r.checks.len(), CHECK_NAMES.len());
        assert!(!r.can_measure.is_empty());
        assert!(r.checks.iter().all(|c| !c.finding.is_empty()));
    }
}
