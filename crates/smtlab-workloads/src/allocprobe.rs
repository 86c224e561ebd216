//! `allocprobe`: does the allocator keep each core's objects together?
//!
//! A core-aware allocator (one that serves a thread from memory belonging
//! to the core it runs on, rather than to the thread) promises that objects
//! allocated on one core end up near each other, so a core's working set
//! shares pages and cache lines only with itself. This workload measures
//! that promise for whatever allocator the process has (glibc's, or one put
//! in with `LD_PRELOAD`), next to an ordinary allocation throughput.
//!
//! Each worker thread allocates objects of mixed small sizes (seeded,
//! uniform in `min_size..=max_size`), writes every byte of each, and keeps
//! a bounded live set of `live` objects: once full, each new object
//! replaces (and frees) a random victim. For every live object it records
//! its address and the **physical core** it was allocated on
//! (`sched_getcpu` at allocation, mapped to a core with the topology read
//! once at set-up, so SMT siblings count as one core).
//!
//! With `migrate=1` each thread moves itself to the next CPU the process
//! may use every `migrate_every` allocations (even when the point pins it:
//! the pin is restored after the window), so a thread's objects come from
//! several cores — the case where thread-based and core-based allocators
//! differ.
//!
//! After the window, per process, live objects are grouped by 2 MiB frame
//! (`addr >> 21`, a huge page's worth); a frame's *owner* is the core with
//! the most live bytes in it, and an object is **foreign** if it was
//! allocated on another core than its frame's owner. Extras (summed over
//! processes): `live_objects`, `foreign_objects`, `frames` (2 MiB frames
//! holding live objects) and `shared_frames` (frames holding objects of
//! more than one core); the summary derives `foreign_share`.
//!
//! One operation is one allocation (and, once the live set is full, one
//! free). Verified by conservation of tags (`alloc_common.rs`): every
//! live object still holds its pattern and the counts add up.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::{
    param_u64, ParamSpec, Params, ProcessContext, ProcessState, TimeMetric, WorkerResult,
    WorkerSlot, WorkerState, Workload, WorkloadInfo,
};
use smtlab_sys as sys;
use smtlab_types::extras::allocprobe;
use smtlab_types::CpuSet;

use super::alloc_common::{param_count, tag_of, worker_seed, Block, Ledger, Rng, Sizes, Tally};
use crate::config::AllocprobeSettings as Settings;
use crate::error::{WorkloadError, WrongResult};
use crate::params::param_corrupt;
use crate::{resolve_checked, WorkloadConfig};

/// Bits of a 2 MiB frame number: `addr >> FRAME_SHIFT`.
pub const FRAME_SHIFT: u32 = 21;

pub struct AllocProbe;

/// A live object as the frame analysis sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveObject {
    pub addr: usize,
    /// Logical core index it was allocated on.
    pub core: u32,
    pub size: usize,
}

/// What the frame analysis found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    pub live_objects: u64,
    pub foreign_objects: u64,
    pub frames: u64,
    pub shared_frames: u64,
}

/// Group `objects` by 2 MiB frame; a frame's owner is the core with the
/// most live bytes in it (ties go to the lowest core number, so the result
/// does not depend on order); an object allocated on any other core is
/// foreign.
pub fn frame_stats(objects: &[LiveObject]) -> FrameStats {
    let mut frames: HashMap<usize, BTreeMap<u32, u64>> = HashMap::new();
    for o in objects {
        *frames
            .entry(o.addr >> FRAME_SHIFT)
            .or_default()
            .entry(o.core)
            .or_default() += o.size as u64;
    }
    let owner: HashMap<usize, u32> = frames
        .iter()
        .map(|(&f, cores)| {
            // max_by_key keeps the last maximum: iterate cores downwards
            // so the lowest core wins a tie.
            let (&core, _) = cores
                .iter()
                .rev()
                .max_by_key(|(_, &bytes)| bytes)
                .expect("a frame has an object");
            (f, core)
        })
        .collect();
    FrameStats {
        live_objects: objects.len() as u64,
        foreign_objects: objects
            .iter()
            .filter(|o| owner[&(o.addr >> FRAME_SHIFT)] != o.core)
            .count() as u64,
        frames: frames.len() as u64,
        shared_frames: frames.values().filter(|c| c.len() > 1).count() as u64,
    }
}

impl Workload for AllocProbe {
    fn info(&self) -> WorkloadInfo {
        WorkloadInfo {
            name: "allocprobe",
            summary: "allocation throughput plus where objects land: share of live objects in \
                      2 MiB frames owned by another core (what a core-aware allocator is for)",
            params: vec![
                ParamSpec {
                    name: "live",
                    default: "20000",
                    help: "live objects each worker keeps; once reached, every allocation \
                           frees a random victim",
                },
                ParamSpec {
                    name: "min_size",
                    default: "16",
                    help: "smallest object, bytes (at least 8)",
                },
                ParamSpec {
                    name: "max_size",
                    default: "512",
                    help: "largest object, bytes (sizes are uniform in between)",
                },
                ParamSpec {
                    name: "migrate",
                    default: "0",
                    help: "1: each thread moves itself to the next allowed CPU every \
                           migrate_every allocations, even when pinned",
                },
                ParamSpec {
                    name: "migrate_every",
                    default: "1000",
                    help: "allocations between moves with migrate=1",
                },
                ParamSpec {
                    name: "seed",
                    default: "1",
                    help: "seed of the sizes and victims (mixed with the worker number)",
                },
                ParamSpec {
                    name: "corrupt",
                    default: "0",
                    help: "test-only: 1 scribbles on a live object, to check that wrong \
                           results fail",
                },
            ],
            operation: "one malloc of 16-512 B (default sizes) with every byte written, plus \
                        one free of a random live object once the live set is full",
            verification: "every object freed or alive at the end is read back: its tag and \
                           fill pattern are intact, allocations = frees + live (as counts \
                           and tag sums) per process, and each worker's reported ops equal \
                           its own count",
            ..WorkloadInfo::timed(TimeMetric::throughput("allocs/s"))
        }
    }

    fn setup(
        &self,
        config: &WorkloadConfig,
        _ctx: &ProcessContext,
    ) -> Result<Box<dyn ProcessState>, WorkloadError> {
        let WorkloadConfig::Allocprobe(settings) = *config else {
            return Err(config.not_for("allocprobe"));
        };
        // The live topology, read once: CPU number -> logical core. Where
        // it cannot be read, every CPU counts as its own core.
        let topo = smtlab_topology::sysfs::read_live().ok();
        let cpu_core = topo
            .as_ref()
            .map(|t| {
                let n = t.pus.iter().map(|p| p.os_index + 1).max().unwrap_or(0);
                let mut map: Vec<Option<u32>> = vec![None; n as usize];
                for p in &t.pus {
                    map[p.os_index as usize] = p.core.map(|c| c as u32);
                }
                map
            })
            .unwrap_or_default();
        // Set-up runs on the process's main thread, before any worker pins
        // itself: its affinity is every CPU the process may use.
        let cpus: Vec<u32> = sys::current_affinity()
            .map(|s| s.iter().collect())
            .unwrap_or_default();
        Ok(Box::new(ProbeProcess {
            settings,
            cpu_core: Arc::new(cpu_core),
            cpus,
            shared: Arc::new(Shared {
                ledger: Ledger::new("allocprobe"),
                objects: Mutex::new(Vec::new()),
            }),
        }))
    }

    fn parse(&self, params: &Params) -> Result<WorkloadConfig, WorkloadError> {
        let params = resolve_checked(&self.info(), params)?;
        Ok(WorkloadConfig::Allocprobe(Settings::parse(&params)?))
    }
}

impl Settings {
    fn parse(params: &Params) -> Result<Settings, WorkloadError> {
        let migrate = match param_u64(params, "migrate")? {
            0 => false,
            1 => true,
            m => return Err(WorkloadError::param("migrate", m, "expected 0 or 1")),
        };
        Ok(Settings {
            live: param_count(params, "live", 1 << 24)? as usize,
            sizes: Sizes::from_params(params)?,
            migrate,
            migrate_every: param_count(params, "migrate_every", u64::MAX)?,
            seed: param_u64(params, "seed")?,
            corrupt: param_corrupt(params)?,
        })
    }
}

struct ProbeProcess {
    settings: Settings,
    /// `cpu_core[cpu]`: the logical core of a CPU number.
    cpu_core: Arc<Vec<Option<u32>>>,
    /// The CPUs the process may use, in order: where migrating threads go.
    cpus: Vec<u32>,
    shared: Arc<Shared>,
}

/// What workers leave for the process after the window.
struct Shared {
    ledger: Ledger,
    /// Every worker's live objects, recorded in `finish` for `extras`.
    objects: Mutex<Vec<LiveObject>>,
}

impl ProbeProcess {
    fn make_worker(&self, slot: WorkerSlot) -> ProbeWorker {
        ProbeWorker {
            blocks: Vec::with_capacity(self.settings.live),
            cores: Vec::with_capacity(self.settings.live),
            cap: self.settings.live,
            sizes: self.settings.sizes,
            rng: Rng::new(worker_seed(self.settings.seed, slot.worker)),
            tally: Tally::default(),
            ops: 0,
            worker: slot.worker,
            migration: self.settings.migrate.then(|| Migration {
                every: self.settings.migrate_every,
                since: 0,
                cpus: self.cpus.clone(),
                // Called on the worker's (possibly pinned) thread: its own
                // affinity, restored after the window.
                home: sys::current_affinity().ok(),
            }),
            cpu_core: self.cpu_core.clone(),
            corrupt: self.settings.corrupt,
            shared: self.shared.clone(),
        }
    }
}

impl ProcessState for ProbeProcess {
    fn worker(&self, slot: WorkerSlot) -> Result<Box<dyn WorkerState>, WorkloadError> {
        Ok(Box::new(self.make_worker(slot)))
    }

    fn verify(&self, results: &[(WorkerSlot, WorkerResult)]) -> Result<(), WrongResult> {
        self.shared.ledger.verify(results, &Tally::default())
    }

    fn extras(&self, _results: &[(WorkerSlot, WorkerResult)]) -> Vec<(String, f64)> {
        let s = frame_stats(&self.shared.objects.lock().expect("not poisoned"));
        vec![
            (allocprobe::LIVE_OBJECTS.into(), s.live_objects as f64),
            (allocprobe::FOREIGN_OBJECTS.into(), s.foreign_objects as f64),
            (allocprobe::FRAMES.into(), s.frames as f64),
            (allocprobe::SHARED_FRAMES.into(), s.shared_frames as f64),
        ]
    }
}

/// A thread's walk over the process's CPUs (`migrate=1`).
struct Migration {
    every: u64,
    /// Allocations since the last move.
    since: u64,
    cpus: Vec<u32>,
    /// The thread's affinity before the window.
    home: Option<CpuSet>,
}

impl Migration {
    /// Move to the CPU after the one this thread is on now, in the
    /// process's list (wrapping). A refused move (the CPU went offline)
    /// leaves the thread where it is: the probe records where objects were
    /// really allocated, so nothing is misreported.
    fn hop(&mut self) {
        self.since = 0;
        if self.cpus.is_empty() {
            return;
        }
        let here = nix::sched::sched_getcpu().ok().map(|c| c as u32);
        let at = here
            .and_then(|h| self.cpus.iter().position(|&c| c == h))
            .map_or(0, |i| i + 1);
        let next = self.cpus[at % self.cpus.len()];
        let _ = sys::set_affinity(0, &CpuSet::from_iter([next]));
    }
}

struct ProbeWorker {
    blocks: Vec<Block>,
    /// `cores[i]`: the core `blocks[i]` was allocated on.
    cores: Vec<u32>,
    cap: usize,
    sizes: Sizes,
    rng: Rng,
    tally: Tally,
    ops: u64,
    worker: usize,
    migration: Option<Migration>,
    cpu_core: Arc<Vec<Option<u32>>>,
    corrupt: bool,
    shared: Arc<Shared>,
}

impl ProbeWorker {
    /// The core this thread runs on now (its CPU number where the
    /// topology does not say).
    fn core_now(&self) -> u32 {
        let cpu = nix::sched::sched_getcpu().map_or(u32::MAX, |c| c as u32);
        self.cpu_core
            .get(cpu as usize)
            .copied()
            .flatten()
            .unwrap_or(cpu)
    }
}

impl WorkerState for ProbeWorker {
    fn step(&mut self, max_ops: u64) -> u64 {
        for _ in 0..max_ops {
            if let Some(m) = self.migration.as_mut() {
                if m.since >= m.every {
                    m.hop();
                }
                m.since += 1;
            }
            let size = self.sizes.draw(&mut self.rng);
            let core = self.core_now();
            let b = self.tally.alloc(size, tag_of(self.worker, self.ops));
            if self.blocks.len() < self.cap {
                self.blocks.push(b);
                self.cores.push(core);
            } else {
                let victim = self.rng.below(self.cap as u64) as usize;
                let old = std::mem::replace(&mut self.blocks[victim], b);
                self.cores[victim] = core;
                self.tally.free(old);
            }
            self.ops += 1;
        }
        max_ops
    }

    fn finish(&mut self) -> WorkerResult {
        if let Some(home) = self.migration.as_ref().and_then(|m| m.home.as_ref()) {
            let _ = sys::set_affinity(0, home);
        }
        if self.corrupt {
            // Held, and so checked, with the live objects.
            let b = self.tally.corrupt();
            self.blocks.push(b);
            self.cores.push(self.core_now());
        }
        let mut objects = Vec::with_capacity(self.blocks.len());
        for (b, &core) in self.blocks.iter().zip(&self.cores) {
            self.tally.keep(b);
            objects.push(LiveObject {
                addr: b.addr(),
                core,
                size: b.len(),
            });
        }
        self.shared
            .objects
            .lock()
            .expect("not poisoned")
            .extend(objects);
        self.shared.ledger.finish(self.worker, self.tally, self.ops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, ctx, slot};

    fn config(kv: &[(&str, &str)]) -> WorkloadConfig {
        testing::config(&AllocProbe, kv).unwrap()
    }

    fn obj(frame: usize, offset: usize, core: u32, size: usize) -> LiveObject {
        LiveObject {
            addr: (frame << FRAME_SHIFT) + offset,
            core,
            size,
        }
    }

    #[test]
    fn frames_are_owned_by_the_core_with_most_bytes() {
        assert_eq!(frame_stats(&[]), FrameStats::default());
        let objects = [
            // Frame 7: core 1 has 3 small objects (96 B), core 2 one big
            // one (512 B): core 2 owns it, core 1's three are foreign.
            obj(7, 0, 1, 32),
            obj(7, 64, 1, 32),
            obj(7, 128, 1, 32),
            obj(7, 4096, 2, 512),
            // Frame 8: core 1 alone.
            obj(8, 0, 1, 100),
            obj(8, (1 << FRAME_SHIFT) - 16, 1, 16),
            // Frame 9: a tie (64 B each): the lower core owns it.
            obj(9, 0, 3, 64),
            obj(9, 64, 0, 64),
        ];
        let want = FrameStats {
            live_objects: 8,
            foreign_objects: 4,
            frames: 3,
            shared_frames: 2,
        };
        assert_eq!(frame_stats(&objects), want);
        // Order does not matter.
        let mut rev = objects;
        rev.reverse();
        assert_eq!(frame_stats(&rev), want);
        // An object's frame is that of its first byte: one straddling the
        // 2 MiB boundary belongs to the frame it starts in.
        let straddle = [obj(4, (1 << FRAME_SHIFT) - 8, 0, 64), obj(5, 0, 1, 8)];
        assert_eq!(frame_stats(&straddle).foreign_objects, 0);
        assert_eq!(frame_stats(&straddle).frames, 2);
    }

    fn run_one(p: &dyn ProcessState, s: WorkerSlot, steps: &[u64]) -> WorkerResult {
        let mut w = p.worker(s).unwrap();
        for &n in steps {
            assert_eq!(w.step(n), n);
        }
        w.finish()
    }

    /// One worker pinned to one CPU allocates everything on one core: no
    /// object can be foreign, whatever the allocator does.
    #[test]
    fn allocprobe_single_pinned_worker_has_no_foreign_objects() {
        std::thread::spawn(|| {
            let cpu = nix::sched::sched_getcpu().unwrap() as u32;
            sys::set_affinity(0, &CpuSet::from_iter([cpu])).unwrap();
            let p = AllocProbe
                .setup(&config(&[("live", "3000")]), &ctx(1))
                .unwrap();
            let r = run_one(&*p, slot(0, 1), &[1, 999, 5000]);
            assert_eq!(r.ops, 6000);
            assert_eq!(p.verify(&[(slot(0, 1), r)]), Ok(()));
            let x: BTreeMap<String, f64> = p.extras(&[]).into_iter().collect();
            assert_eq!(x["live_objects"], 3000.0);
            assert_eq!(x["foreign_objects"], 0.0);
            assert_eq!(x["shared_frames"], 0.0);
            assert!(x["frames"] >= 1.0);
        })
        .join()
        .unwrap();
    }

    /// Two workers of one process, one migrating: counts add up over the
    /// workers, the migrating thread returns to its pin afterwards, and a
    /// scribbled object fails verification.
    #[test]
    fn allocprobe_two_workers_migrating_verify() {
        let p = AllocProbe
            .setup(
                &config(&[("live", "500"), ("migrate", "1"), ("migrate_every", "50")]),
                &ctx(2),
            )
            .unwrap();
        let results: Vec<_> = (0..2)
            .map(|t| {
                let p = &p;
                std::thread::scope(|s| {
                    s.spawn(move || {
                        let home = sys::current_affinity().unwrap();
                        let r = run_one(&**p, slot(t, 2), &[700]);
                        assert_eq!(sys::current_affinity().unwrap(), home);
                        (slot(t, 2), r)
                    })
                    .join()
                    .unwrap()
                })
            })
            .collect();
        assert_eq!(p.verify(&results), Ok(()));
        let x: BTreeMap<String, f64> = p.extras(&results).into_iter().collect();
        assert_eq!(x["live_objects"], 1000.0);
        assert!(x["foreign_objects"] <= 1000.0);

        let p = AllocProbe
            .setup(&config(&[("live", "10"), ("corrupt", "1")]), &ctx(1))
            .unwrap();
        let r = run_one(&*p, slot(0, 1), &[20]);
        let e = p.verify(&[(slot(0, 1), r)]).unwrap_err();
        assert!(e.contains("pattern"), "{e}");
    }

    #[test]
    fn allocprobe_bad_params_name_the_parameter() {
        for (k, v) in [
            ("live", "0"),
            ("migrate", "2"),
            ("migrate_every", "0"),
            ("min_size", "7"),
            ("max_size", "15"),
            ("corrupt", "5"),
        ] {
            let e = testing::config(&AllocProbe, &[(k, v)])
                .err()
                .unwrap_or_else(|| panic!("{k}={v} accepted"));
            assert!(e.to_string().contains(&format!("--param {k}=")), "{e}");
        }
    }
}
