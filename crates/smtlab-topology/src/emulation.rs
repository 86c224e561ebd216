//! Whether the machine's CPUs are emulated rather than virtualized or real:
//! QEMU's TCG interprets the guest's instructions on the host's threads
//! (with `-accel tcg,thread=single`, one host thread runs every vCPU in
//! turn). The kernel inside sees a real topology — SMT siblings, NUMA
//! nodes — so placements and pinning are exercised for real, but no timing
//! measured there says anything about hardware: two "cores" share one host
//! thread, siblings share nothing physical. Studies and `doctor` say so.
//!
//! Read from files only (`proc/cpuinfo`, DMI, the clock sources), so an
//! extracted dump answers like the live machine.

use std::path::Path;

/// Evidence that this machine's CPUs are emulated, in words; `None` when
/// nothing says so (real hardware, or hardware virtualization).
pub fn emulated_cpu(root: &Path) -> Option<String> {
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
    let model = read("proc/cpuinfo").and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    emulation_evidence(
        model.as_deref(),
        read("sys/class/dmi/id/sys_vendor").as_deref(),
        read("sys/devices/system/clocksource/clocksource0/available_clocksource").as_deref(),
    )
}

/// [`emulated_cpu`]'s judgement, from the CPU's model name, the DMI system
/// vendor and the kernel's available clock sources.
///
/// QEMU names its own CPU model `QEMU TCG CPU ...` under TCG (`-cpu max`,
/// `qemu64`); with another model (`-cpu Skylake-Server`) the name is
/// Intel's, but a QEMU machine without KVM has no `kvm-clock` clock source,
/// which every KVM guest has.
pub fn emulation_evidence(
    model: Option<&str>,
    dmi_vendor: Option<&str>,
    clocksources: Option<&str>,
) -> Option<String> {
    if let Some(m) = model.filter(|m| m.contains("TCG")) {
        return Some(format!("QEMU TCG (CPU model \"{m}\")"));
    }
    let qemu = dmi_vendor.is_some_and(|v| v.trim() == "QEMU");
    let kvm_clock = clocksources.is_some_and(|c| c.split_whitespace().any(|s| s == "kvm-clock"));
    (qemu && clocksources.is_some() && !kvm_clock)
        .then(|| "QEMU without KVM (DMI vendor QEMU, no kvm-clock clock source)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcg_by_its_model_name_or_by_a_qemu_machine_without_kvm_clock() {
        let e = emulation_evidence(Some("QEMU TCG CPU version 2.5+"), None, None).unwrap();
        assert!(e.contains("QEMU TCG") && e.contains("2.5+"), "{e}");
        let e = emulation_evidence(
            Some("Intel Xeon Processor (Skylake)"),
            Some("QEMU\n"),
            Some("tsc hpet acpi_pm \n"),
        )
        .unwrap();
        assert!(e.contains("no kvm-clock"), "{e}");
        // A KVM guest: QEMU's DMI, but kvm-clock.
        assert_eq!(
            emulation_evidence(
                Some("AMD EPYC"),
                Some("QEMU"),
                Some("kvm-clock tsc hpet acpi_pm")
            ),
            None
        );
        // Real hardware, or nothing known.
        assert_eq!(
            emulation_evidence(Some("AMD EPYC"), Some("Dell Inc."), Some("tsc hpet")),
            None
        );
        assert_eq!(emulation_evidence(None, Some("QEMU"), None), None);
    }

    #[test]
    fn read_from_a_filesystem_root() {
        let dir = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: QEMU TCG CPU version 2.5+\n",
        );
        assert!(emulated_cpu(dir.path()).unwrap().contains("QEMU TCG"));
        put("proc/cpuinfo", "model name\t: AMD EPYC 9B45\n");
        assert_eq!(emulated_cpu(dir.path()), None);
        assert_eq!(emulated_cpu(&dir.path().join("nothing")), None);
    }
}
