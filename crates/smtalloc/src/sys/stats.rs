//! Statistics gathered and printed without allocating (so they can run
//! inside a preloaded process at exit): a [`Snapshot`] of the regions and
//! their smaps residency, the text on stderr ([`print_stats`]), and the
//! exit hook that prints it when `SMTALLOC_STATS=1`. Reads every layer
//! below it and changes nothing but parked cross-core frees (flushed so
//! that they do not count as in use). Called from above only: by the crate
//! root (`stats()` builds its Rust values from a [`Snapshot`]) and through
//! `raw::print_stats` by smtalloc-preload's `smtalloc_stats_print()`.
// For the exit hook's `#[link_section]` only: no `unsafe` block here.
#![allow(unsafe_code)]

use core::fmt;

use super::arena::{self, RegionInfo, MAX_REGIONS};
use super::cpu;
use super::heap;
use super::init;
use super::large;
use super::line::Line;
use super::options;
use super::os::{self, FRAME};
use super::remote;
use super::settings;
use super::thread_area;

/// The number of 2 MiB frames that lie (even partly) in the arenas of more
/// than one core. smtalloc's invariant is that this is 0: computed from the
/// actual arena areas that mimalloc manages.
pub fn shared_frames(regions: &[RegionInfo]) -> u64 {
    let frames = |r: &RegionInfo| (r.start / FRAME, (r.start + r.len.max(1) - 1) / FRAME);
    let mut shared = 0u64;
    for (i, a) in regions.iter().enumerate() {
        let (a0, a1) = frames(a);
        // Count each frame once: only against earlier regions of other
        // cores, and only frames not already shared with an even earlier one.
        for f in a0..=a1 {
            let in_other = regions[..i].iter().any(|b| {
                let (b0, b1) = frames(b);
                b.core != a.core && f >= b0 && f <= b1
            });
            if in_other {
                shared += 1;
            }
        }
    }
    shared
}

/// Accumulates `Rss` and `AnonHugePages` of /proc/self/smaps per region,
/// attributing each VMA by its overlap with the region (exact when the
/// kernel names arenas, which keeps different cores' VMAs apart).
pub struct SmapsAcc<'a> {
    regions: &'a [RegionInfo],
    vma: Option<(usize, usize)>,
    pub rss: [u64; MAX_REGIONS],
    pub huge: [u64; MAX_REGIONS],
}

impl<'a> SmapsAcc<'a> {
    pub fn new(regions: &'a [RegionInfo]) -> Self {
        SmapsAcc {
            regions,
            vma: None,
            rss: [0; MAX_REGIONS],
            huge: [0; MAX_REGIONS],
        }
    }

    fn hex(s: &[u8]) -> Option<usize> {
        if s.is_empty() || s.len() > 16 {
            return None;
        }
        s.iter().try_fold(0usize, |a, &b| {
            let d = (b as char).to_digit(16)? as usize;
            Some(a << 4 | d)
        })
    }

    /// Feeds one line of smaps.
    pub fn line(&mut self, l: &[u8]) {
        let first = l.split(|&b| b == b' ').next().unwrap_or(b"");
        if let Some(dash) = first.iter().position(|&b| b == b'-') {
            if let (Some(s), Some(e)) = (Self::hex(&first[..dash]), Self::hex(&first[dash + 1..])) {
                self.vma = Some((s, e));
                return;
            }
        }
        let field = if l.starts_with(b"Rss:") {
            0
        } else if l.starts_with(b"AnonHugePages:") {
            1
        } else {
            return;
        };
        let Some((vs, ve)) = self.vma else { return };
        let colon = l.iter().position(|&b| b == b':').unwrap_or(0);
        let rest = &l[colon + 1..];
        let start = rest
            .iter()
            .position(|b| b.is_ascii_digit())
            .unwrap_or(rest.len());
        let Some(kb) =
            options::parse_u64(rest[start..].split(|&b| b == b' ').next().unwrap_or(b""))
        else {
            return;
        };
        let bytes = kb * 1024;
        for (i, r) in self.regions.iter().enumerate() {
            let lo = vs.max(r.start);
            let hi = ve.min(r.start + r.len);
            if lo < hi && ve > vs {
                let share = (bytes as u128 * (hi - lo) as u128 / (ve - vs) as u128) as u64;
                if field == 0 {
                    self.rss[i] += share;
                } else {
                    self.huge[i] += share;
                }
            }
        }
    }
}

/// Everything the statistics need, gathered without allocating.
pub struct Snapshot {
    pub regions: [RegionInfo; MAX_REGIONS],
    pub nregions: usize,
    pub rss: [u64; MAX_REGIONS],
    pub huge: [u64; MAX_REGIONS],
    pub smaps_ok: bool,
    pub shared_frames: u64,
}

impl Snapshot {
    /// Frees the idle parked cross-core frees first (they would count as
    /// in use), then reads the regions and smaps.
    pub fn take() -> Snapshot {
        let (cpus, cores) = cpu::topology_counts();
        remote::flush_idle(cpus, cores, thread_area::peek_slot());
        let mut regions = [RegionInfo::default(); MAX_REGIONS];
        let n = arena::regions(&mut regions);
        let mut acc = SmapsAcc::new(&regions[..n]);
        let mut buf = [0u8; 4096];
        let smaps_ok = os::for_each_line(c"/proc/self/smaps", &mut buf, |l| acc.line(l));
        let (rss, huge) = (acc.rss, acc.huge);
        Snapshot {
            shared_frames: shared_frames(&regions[..n]),
            regions,
            nregions: n,
            rss,
            huge,
            smaps_ok,
        }
    }

    pub(crate) fn regions(&self) -> &[RegionInfo] {
        &self.regions[..self.nregions]
    }

    /// (regions, arena bytes, rss, huge) of one core.
    pub(crate) fn core_totals(&self, core: usize) -> (usize, u64, u64, u64) {
        let mut t = (0, 0, 0, 0);
        for (i, r) in self.regions().iter().enumerate() {
            if r.core == core {
                t.0 += 1;
                t.1 += r.len as u64;
                t.2 += self.rss[i];
                t.3 += self.huge[i];
            }
        }
        t
    }
}

struct Mib(u64);

impl fmt::Display for Mib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.1} MiB", self.0 as f64 / (1u64 << 20) as f64)
    }
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Prints the statistics to stderr, one line per core, then the large
/// arena, the huge-page coverage and the shared-frame count. Allocates
/// nothing.
pub fn print_stats() {
    let snap = Snapshot::take();
    let (cpus, cores) = cpu::topology_counts();
    let mut l = Line::new();
    l.push_fmt(format_args!(
        "smtalloc: stats: {} cpus, {} cores, cpu from {}, {} arena regions\n",
        cpus,
        cores,
        if cpu::uses_rseq() {
            "rseq"
        } else {
            "sched_getcpu"
        },
        snap.nregions
    ));
    os::write_stderr(l.as_bytes());
    let (mut all_rss, mut all_huge) = (0u64, 0u64);
    for core in 0..cores {
        let (nreg, arena, rss, huge) = snap.core_totals(core);
        all_rss += rss;
        all_huge += huge;
        let (calls, bytes) = heap::core_counters(core);
        let in_use = arena::core_in_use(core);
        let (recv_blocks, recv_batches) = remote::received(core);
        let mut l = Line::new();
        l.push_fmt(format_args!("smtalloc: core {core} cpus "));
        let mut first = true;
        for cpu in 0..cpus {
            if cpu::core_of_cpu(cpu) == Some(core) {
                l.push_fmt(format_args!("{}{cpu}", if first { "" } else { "," }));
                first = false;
            }
        }
        l.push_fmt(format_args!(
            ": arena {} in {nreg} region(s), allocated {} in {calls} calls, in use {}, rss {}, huge pages {} ({:.1}%), other cores' frees of its blocks received {recv_blocks} in {recv_batches} batches\n",
            Mib(arena),
            Mib(bytes),
            Mib(in_use),
            Mib(rss),
            Mib(huge),
            pct(huge, rss)
        ));
        os::write_stderr(l.as_bytes());
    }
    let (lbytes, lblocks, ltotal) = large::large_counters();
    let (kept, kept_bytes, reused) = large::large_kept();
    let mut l = Line::new();
    l.push_fmt(format_args!(
        "smtalloc: large (>= 1 MiB, shared, 2 MiB-aligned): {lblocks} live blocks, {}, {ltotal} allocated in all, {reused} of them reusing a freed block's mapping; {kept} freed ({}) kept for reuse\n",
        Mib(lbytes),
        Mib(kept_bytes as u64)
    ));
    l.push_fmt(format_args!(
        "smtalloc: arenas huge-page coverage: {} of {} rss ({:.1}%){}\n",
        Mib(all_huge),
        Mib(all_rss),
        pct(all_huge, all_rss),
        if snap.smaps_ok {
            ""
        } else {
            " (smaps unreadable)"
        }
    ));
    let (advised, collapsed) = arena::lazy_counters();
    l.push_fmt(format_args!(
        "smtalloc: lazy huge pages: each region in 4 KiB pages until it has claimed {}; {advised} region(s) past it, {collapsed} frame(s) collapsed; mimalloc metadata arena: {} (4 KiB pages)\n",
        Mib(settings::thp_after() as u64),
        Mib(arena::meta_range().map_or(0, |(_, len)| len as u64)),
    ));
    os::write_stderr(l.as_bytes());
    let mut l = Line::new();
    l.push_fmt(format_args!(
        "smtalloc: shared frames: {} (2 MiB frames in more than one core's arena), fallbacks to the shared heap: {}, cross-core frees not batched (freed directly): {}, threads with their own outbox: {}\n",
        snap.shared_frames,
        heap::fallbacks(),
        remote::direct(cpus),
        remote::slots_claimed()
    ));
    os::write_stderr(l.as_bytes());
}

/// Runs at exit (from `.fini_array`, which allocates nothing, unlike
/// `atexit` from inside malloc): prints the stats if asked.
extern "C" fn at_exit() {
    if init::is_initialized() && settings::stats_enabled() {
        print_stats();
    }
}

#[used]
#[link_section = ".fini_array"]
static FINI: extern "C" fn() = at_exit;

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: usize, len: usize, core: usize) -> RegionInfo {
        RegionInfo { start, len, core }
    }

    #[test]
    fn disjoint_aligned_regions_share_nothing() {
        let regs = [
            r(0, 4 * FRAME, 0),
            r(4 * FRAME, 2 * FRAME, 1),
            r(6 * FRAME, FRAME, 0),
        ];
        assert_eq!(shared_frames(&regs), 0);
    }

    #[test]
    fn misaligned_regions_of_two_cores_share_frames() {
        // Core 1's region starts half-way into core 0's last frame.
        let regs = [
            r(0, 2 * FRAME + FRAME / 2, 0),
            r(2 * FRAME + FRAME / 2, 2 * FRAME, 1),
        ];
        assert_eq!(shared_frames(&regs), 1);
        // Same core: not shared.
        let regs = [r(0, FRAME / 2, 0), r(FRAME / 2, FRAME, 0)];
        assert_eq!(shared_frames(&regs), 0);
    }

    #[test]
    fn smaps_attribution() {
        let regs = [r(0x200000, 0x400000, 0), r(0x600000, 0x200000, 1)];
        let mut acc = SmapsAcc::new(&regs);
        for l in [
            &b"00200000-00600000 rw-p 00000000 00:00 0 [anon:smtalloc-core-0]"[..],
            b"Size:               4096 kB",
            b"Rss:                4096 kB",
            b"AnonHugePages:      2048 kB",
            b"00600000-00800000 rw-p 00000000 00:00 0",
            b"Rss:                1024 kB",
            b"AnonHugePages:         0 kB",
            b"VmFlags: rd wr mr mw me ac hg",
        ] {
            acc.line(l);
        }
        assert_eq!(acc.rss[0], 4096 * 1024);
        assert_eq!(acc.huge[0], 2048 * 1024);
        assert_eq!(acc.rss[1], 1024 * 1024);
        assert_eq!(acc.huge[1], 0);
    }
}
