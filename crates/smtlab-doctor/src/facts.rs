//! The doctor's facts: everything it judges, gathered once from this
//! machine — the perf capability probe, the topology and CPU quota, SMT
//! control, transparent huge pages, cpufreq governors, PSS support, the
//! installed allocators (from `smtlab_allocators`'s table), the
//! external tools in PATH (its own [`TOOLS`] table) and the fd limit.
//!
//! Gathering never judges and never fails: what cannot be read is `None`
//! (or the reason, for the topology), so `checks.rs` can say what it means.
//! The /proc and /sys parsers are pure and tested here. Called by
//! [`run`](crate::run) and by tests that build facts by hand.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use smtlab_allocators::{
    allocator_dirs, library_dirs, locate_library, AllocatorInfo, ALLOCATORS, SMTALLOC_FILE,
};
use smtlab_counters::{nofile_limit, CounterPlan};
use smtlab_topology::sysfs::SysfsError;
use smtlab_types::CpuSet;

/// A program smtlab drives, found in PATH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ToolInfo {
    pub name: &'static str,
    pub package: &'static str,
    pub about: &'static str,
}

/// The external programs the doctor looks for.
pub const TOOLS: [ToolInfo; 2] = [
    ToolInfo {
        name: "wrk",
        package: "wrk",
        about: "HTTP load generator for the server workloads (connections study)",
    },
    ToolInfo {
        name: "hyperfine",
        package: "hyperfine",
        about: "benchmark tool used to cross-check smtlab's wall times",
    },
];

/// `program` in PATH, if it is an executable file there.
pub fn find_in_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

/// Evidence of a hypervisor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HypervisorFacts {
    /// The `hypervisor` CPU flag in `/proc/cpuinfo`.
    pub cpuinfo_flag: bool,
    /// Its name and where it came from (`KVM (lscpu)`, `xen
    /// (/sys/hypervisor/type)`, `QEMU (DMI)`).
    pub vendor: Option<String>,
    /// Steal time since boot, percent of all CPU time.
    pub steal_pct: Option<f64>,
    /// The CPUs are emulated (QEMU TCG), with the evidence
    /// (`smtlab_topology::emulated_cpu`).
    pub emulated: Option<String>,
}

/// What the topology says about the CPUs this process may use.
#[derive(Debug, Clone, PartialEq)]
pub struct CpuFacts {
    pub online: CpuSet,
    pub allowed: CpuSet,
    pub cpuset_source: Option<String>,
    pub cores: usize,
    pub max_pus_per_core: usize,
    pub smt_active: bool,
}

/// Everything the doctor judges, gathered once.
#[derive(Debug, Clone)]
pub struct Facts {
    pub euid: u32,
    pub counters: CounterPlan,
    pub hypervisor: HypervisorFacts,
    /// The topology, or why it could not be read (shared, so facts stay
    /// cloneable).
    pub cpus: Result<CpuFacts, Arc<SysfsError>>,
    /// A CPU bandwidth limit (cgroup `cpu.max` / CFS quota): CPUs' worth
    /// and the file it came from.
    pub cpu_quota: Option<(f64, String)>,
    /// `/sys/devices/system/cpu/smt/control` and whether we may write it.
    pub smt_control: Option<String>,
    pub smt_control_writable: bool,
    /// Selected modes of `/sys/kernel/mm/transparent_hugepage/{enabled,defrag}`.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// `scaling_governor` of each online CPU that has cpufreq.
    pub governors: Vec<(u32, String)>,
    /// `/proc/self/smaps_rollup` is readable (PSS measurable).
    pub smaps_rollup: bool,
    pub allocators: Vec<(AllocatorInfo, Option<PathBuf>)>,
    pub tools: Vec<(ToolInfo, Option<PathBuf>)>,
    /// Soft and hard `RLIMIT_NOFILE`.
    pub nofile: Option<(u64, u64)>,
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The bracketed choice of a sysfs mode file: `always [madvise] never`.
pub fn selected_mode(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

/// Steal time since boot from the `cpu` line of `/proc/stat`.
pub fn steal_percent(proc_stat: &str) -> Option<f64> {
    let line = proc_stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = v.iter().sum();
    (v.len() == 8 && total > 0).then(|| v[7] as f64 * 100.0 / total as f64)
}

/// Names DMI uses for virtual machines.
fn vm_from_dmi(vendor: &str, product: &str) -> Option<&'static str> {
    let both = format!("{vendor} {product}").to_lowercase();
    [
        ("kvm", "KVM"),
        ("qemu", "QEMU"),
        ("vmware", "VMware"),
        ("virtualbox", "VirtualBox"),
        ("innotek", "VirtualBox"),
        ("xen", "Xen"),
        ("amazon ec2", "Amazon EC2"),
        ("google compute engine", "Google Compute Engine"),
        ("microsoft corporation virtual machine", "Hyper-V"),
        ("bochs", "Bochs"),
        ("parallels", "Parallels"),
        ("openstack", "OpenStack"),
        ("cloud hypervisor", "Cloud Hypervisor"),
    ]
    .into_iter()
    .find(|(key, _)| both.contains(key))
    .map(|(_, name)| name)
}

fn gather_hypervisor() -> HypervisorFacts {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpuinfo_flag = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "hypervisor"));
    let dmi = || {
        let vendor = read_trim("/sys/class/dmi/id/sys_vendor").unwrap_or_default();
        let product = read_trim("/sys/class/dmi/id/product_name").unwrap_or_default();
        vm_from_dmi(&vendor, &product).map(|v| format!("{v} (DMI: {vendor} {product})"))
    };
    // lscpu reads the hypervisor's CPUID leaf, which needs no privileges and
    // works where DMI is absent (microVMs such as Firecracker).
    let lscpu = || {
        let out = std::process::Command::new("lscpu")
            .env("LC_ALL", "C")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .find_map(|l| l.strip_prefix("Hypervisor vendor:"))
            .map(|v| format!("{} (lscpu)", v.trim()))
    };
    let clocksource = || {
        let cs = read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource")?;
        let name = match cs.as_str() {
            "kvm-clock" => "KVM",
            "xen" => "Xen",
            s if s.starts_with("hyperv") => "Hyper-V",
            _ => return None,
        };
        Some(format!("{name} (clocksource {cs})"))
    };
    let vendor = read_trim("/sys/hypervisor/type")
        .map(|t| format!("{t} (/sys/hypervisor/type)"))
        .or_else(dmi)
        .or_else(|| if cpuinfo_flag { lscpu() } else { None })
        .or_else(clocksource);
    HypervisorFacts {
        cpuinfo_flag,
        vendor,
        steal_pct: fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| steal_percent(&s)),
        emulated: smtlab_topology::emulated_cpu(Path::new("/")),
    }
}

/// The tightest CPU bandwidth limit on this process's cgroup or its
/// ancestors: cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us`.
fn gather_cpu_quota() -> Option<(f64, String)> {
    let cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut best: Option<(f64, String)> = None;
    let mut consider = |cpus: f64, file: PathBuf| {
        if best.as_ref().is_none_or(|(b, _)| cpus < *b) {
            best = Some((cpus, file.display().to_string()));
        }
    };
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let v2 = controllers.is_empty();
        if !v2 && !controllers.split(',').any(|c| c == "cpu") {
            continue;
        }
        let mount = mounts.lines().find_map(|m| {
            let f: Vec<&str> = m.split_whitespace().collect();
            let ok = if v2 {
                f.get(2) == Some(&"cgroup2")
            } else {
                f.get(2) == Some(&"cgroup")
                    && f.get(3).is_some_and(|o| o.split(',').any(|x| x == "cpu"))
            };
            ok.then(|| PathBuf::from(f[1]))
        });
        let Some(mount) = mount else { continue };
        let mut dir = mount.join(path.trim_start_matches('/'));
        loop {
            if v2 {
                if let Some(text) = read_trim(dir.join("cpu.max")) {
                    let mut f = text.split_whitespace();
                    if let (Some(q), Some(p)) = (f.next(), f.next()) {
                        if let (Ok(q), Ok(p)) = (q.parse::<f64>(), p.parse::<f64>()) {
                            if p > 0.0 {
                                consider(q / p, dir.join("cpu.max"));
                            }
                        }
                    }
                }
            } else if let (Some(q), Some(p)) = (
                read_trim(dir.join("cpu.cfs_quota_us")).and_then(|s| s.parse::<f64>().ok()),
                read_trim(dir.join("cpu.cfs_period_us")).and_then(|s| s.parse::<f64>().ok()),
            ) {
                if q > 0.0 && p > 0.0 {
                    consider(q / p, dir.join("cpu.cfs_quota_us"));
                }
            }
            if dir == mount || !dir.pop() || !dir.starts_with(&mount) {
                break;
            }
        }
    }
    best
}

impl Facts {
    /// Look at this machine: probe perf, read sysfs/procfs, search PATH.
    pub fn gather() -> Facts {
        let cpus = smtlab_topology::sysfs::read_live()
            .map(|t| CpuFacts {
                online: t.online(),
                allowed: t.allowed(),
                cpuset_source: t.cpuset_source.clone(),
                cores: t.cores.len(),
                max_pus_per_core: t.max_pus_per_core(),
                smt_active: t.smt_active(),
            })
            .map_err(Arc::new);
        let smt_path = "/sys/devices/system/cpu/smt/control";
        let online = cpus.as_ref().map(|c| c.online.clone()).unwrap_or_default();
        let governors = online
            .iter()
            .filter_map(|c| {
                read_trim(format!(
                    "/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
                ))
                .map(|g| (c, g))
            })
            .collect();
        let thp = |f: &str| {
            read_trim(format!("/sys/kernel/mm/transparent_hugepage/{f}"))
                .and_then(|t| selected_mode(&t))
        };
        let dirs = library_dirs();
        Facts {
            euid: smtlab_sys::euid(),
            counters: CounterPlan::probe(),
            hypervisor: gather_hypervisor(),
            cpus,
            cpu_quota: gather_cpu_quota(),
            smt_control: read_trim(smt_path),
            smt_control_writable: nix::unistd::access(smt_path, nix::unistd::AccessFlags::W_OK)
                .is_ok(),
            thp_enabled: thp("enabled"),
            thp_defrag: thp("defrag"),
            governors,
            smaps_rollup: fs::read_to_string("/proc/self/smaps_rollup")
                .map(|s| s.contains("Pss:"))
                .unwrap_or(false),
            allocators: ALLOCATORS
                .iter()
                .map(|a| {
                    let found = match a.file {
                        Some(SMTALLOC_FILE) => locate_library(SMTALLOC_FILE, &allocator_dirs()),
                        Some(f) => locate_library(f, &dirs),
                        None => None,
                    };
                    (*a, found)
                })
                .collect(),
            tools: TOOLS.iter().map(|t| (*t, find_in_path(t.name))).collect(),
            nofile: nofile_limit(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doctor_parse_helpers() {
        assert_eq!(
            selected_mode("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(selected_mode("never"), None);
        let s = steal_percent("cpu  100 0 100 700 0 0 0 100 0 0\ncpu0 1 2 3\n").unwrap();
        assert!((s - 10.0).abs() < 1e-9);
        assert_eq!(
            vm_from_dmi("QEMU", "Standard PC (Q35 + ICH9, 2009)"),
            Some("QEMU")
        );
        assert_eq!(vm_from_dmi("Dell Inc.", "PowerEdge R640"), None);
    }
}
