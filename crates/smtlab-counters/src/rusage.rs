//! Resource usage from `getrusage` and `wait4`: CPU time, context switches,
//! page faults, peak RSS. Snapshots are taken before and after a measured
//! window and differenced; a child's totals come from `wait4`'s `rusage`.
//!
//! `ru_maxrss` is a peak over the whole life of the process (or of the
//! largest child), not of a window, so it cannot be differenced: a window's
//! value is the peak at its end, setup included.

use std::io;

use nix::sys::resource::{getrusage, UsageWho};
use serde::{Deserialize, Serialize};

use smtlab_types::sample::ResourceUsage;

/// Whose usage [`snapshot`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// The whole calling process, all its threads (`RUSAGE_SELF`).
    Process,
    /// The calling thread only (`RUSAGE_THREAD`; `maxrss` is still the
    /// process's).
    Thread,
    /// Children that have exited and been waited for (`RUSAGE_CHILDREN`;
    /// `maxrss` is that of the largest one).
    Children,
}

/// One `rusage` reading, in integer units so differences are exact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rusage {
    pub user_us: u64,
    pub sys_us: u64,
    pub voluntary_cs: u64,
    pub involuntary_cs: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Peak resident set in kB (Linux reports `ru_maxrss` in kB).
    pub maxrss_kb: u64,
}

/// Read the usage of `who` now.
pub fn snapshot(who: Who) -> io::Result<Rusage> {
    let w = match who {
        Who::Process => UsageWho::RUSAGE_SELF,
        Who::Thread => UsageWho::RUSAGE_THREAD,
        Who::Children => UsageWho::RUSAGE_CHILDREN,
    };
    let usage = getrusage(w).map_err(io::Error::from)?;
    Ok(Rusage::from_libc(usage.as_ref()))
}

fn non_negative(v: libc::c_long) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn micros(tv: &libc::timeval) -> u64 {
    non_negative(tv.tv_sec as libc::c_long) * 1_000_000 + non_negative(tv.tv_usec as libc::c_long)
}

impl Rusage {
    /// From a raw `rusage` (what `wait4` fills in for a child).
    pub fn from_libc(ru: &libc::rusage) -> Rusage {
        Rusage {
            user_us: micros(&ru.ru_utime),
            sys_us: micros(&ru.ru_stime),
            voluntary_cs: non_negative(ru.ru_nvcsw),
            involuntary_cs: non_negative(ru.ru_nivcsw),
            minor_faults: non_negative(ru.ru_minflt),
            major_faults: non_negative(ru.ru_majflt),
            maxrss_kb: non_negative(ru.ru_maxrss),
        }
    }

    /// What happened between `earlier` and `self`. Counters are
    /// differenced; `maxrss_kb` stays `self`'s (a peak has no difference).
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
            voluntary_cs: self.voluntary_cs.saturating_sub(earlier.voluntary_cs),
            involuntary_cs: self.involuntary_cs.saturating_sub(earlier.involuntary_cs),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            maxrss_kb: self.maxrss_kb,
        }
    }

    /// The fields of a sample's [`ResourceUsage`] that rusage provides; the
    /// others (migrations, PSS, huge pages) stay `None`.
    pub fn to_resource_usage(&self) -> ResourceUsage {
        ResourceUsage {
            user_s: Some(self.user_us as f64 / 1e6),
            sys_s: Some(self.sys_us as f64 / 1e6),
            voluntary_cs: Some(self.voluntary_cs),
            involuntary_cs: Some(self.involuntary_cs),
            minor_faults: Some(self.minor_faults),
            major_faults: Some(self.major_faults),
            peak_rss_kb: Some(self.maxrss_kb),
            ..ResourceUsage::default()
        }
    }
}

/// A waited-for child's usage (from `wait4`) as [`ResourceUsage`] fields.
pub fn usage_from_wait4(ru: &libc::rusage) -> ResourceUsage {
    Rusage::from_libc(ru).to_resource_usage()
}

/// Sum the usage of a sample's worker processes, field by field. A field is
/// known only if every process reported it: a sum over some of them would
/// be too small without saying so.
pub fn sum_usage(parts: &[ResourceUsage]) -> ResourceUsage {
    fn sum<T: Copy + std::iter::Sum<T>>(
        parts: &[ResourceUsage],
        f: impl Fn(&ResourceUsage) -> Option<T>,
    ) -> Option<T> {
        if parts.is_empty() {
            return None;
        }
        parts
            .iter()
            .map(f)
            .collect::<Option<Vec<T>>>()
            .map(|v| v.into_iter().sum())
    }
    ResourceUsage {
        user_s: sum(parts, |u| u.user_s),
        sys_s: sum(parts, |u| u.sys_s),
        voluntary_cs: sum(parts, |u| u.voluntary_cs),
        involuntary_cs: sum(parts, |u| u.involuntary_cs),
        minor_faults: sum(parts, |u| u.minor_faults),
        major_faults: sum(parts, |u| u.major_faults),
        migrations: sum(parts, |u| u.migrations),
        peak_rss_kb: sum(parts, |u| u.peak_rss_kb),
        pss_kb: sum(parts, |u| u.pss_kb),
        anon_huge_kb: sum(parts, |u| u.anon_huge_kb),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(user_us: i64, sys_us: i64, nvcsw: i64, minflt: i64, maxrss: i64) -> libc::rusage {
        let mut ru: libc::rusage = zeroed_rusage();
        ru.ru_utime.tv_sec = (user_us / 1_000_000) as _;
        ru.ru_utime.tv_usec = (user_us % 1_000_000) as _;
        ru.ru_stime.tv_sec = (sys_us / 1_000_000) as _;
        ru.ru_stime.tv_usec = (sys_us % 1_000_000) as _;
        ru.ru_nvcsw = nvcsw as _;
        ru.ru_nivcsw = 3;
        ru.ru_minflt = minflt as _;
        ru.ru_majflt = 1;
        ru.ru_maxrss = maxrss as _;
        ru
    }

    /// A zeroed `rusage` without `unsafe` (it has no `Default`): start from
    /// a real one and clear the fields the tests use.
    fn zeroed_rusage() -> libc::rusage {
        let mut ru = *getrusage(UsageWho::RUSAGE_SELF).unwrap().as_ref();
        ru.ru_utime.tv_sec = 0;
        ru.ru_utime.tv_usec = 0;
        ru.ru_stime.tv_sec = 0;
        ru.ru_stime.tv_usec = 0;
        ru.ru_maxrss = 0;
        ru.ru_minflt = 0;
        ru.ru_majflt = 0;
        ru.ru_nvcsw = 0;
        ru.ru_nivcsw = 0;
        ru
    }

    #[test]
    fn measure_rusage_from_wait4() {
        let u = usage_from_wait4(&raw(2_500_000, 250_000, 7, 1234, 4096));
        assert_eq!(u.user_s, Some(2.5));
        assert_eq!(u.sys_s, Some(0.25));
        assert_eq!(u.voluntary_cs, Some(7));
        assert_eq!(u.involuntary_cs, Some(3));
        assert_eq!(u.minor_faults, Some(1234));
        assert_eq!(u.major_faults, Some(1));
        assert_eq!(u.peak_rss_kb, Some(4096));
        assert_eq!(u.migrations, None);
        assert_eq!(u.pss_kb, None);
    }

    #[test]
    fn measure_rusage_diff_keeps_peak() {
        let a = Rusage::from_libc(&raw(1_000_000, 0, 5, 100, 1000));
        let b = Rusage::from_libc(&raw(1_500_001, 10, 9, 180, 3000));
        let d = b.since(&a);
        assert_eq!(d.user_us, 500_001);
        assert_eq!(d.sys_us, 10);
        assert_eq!(d.voluntary_cs, 4);
        assert_eq!(d.minor_faults, 80);
        assert_eq!(d.maxrss_kb, 3000);
        // Never negative, even if handed in the wrong order.
        assert_eq!(a.since(&b).user_us, 0);
    }

    #[test]
    fn measure_rusage_live_window() {
        let before = snapshot(Who::Process).unwrap();
        let t0 = snapshot(Who::Thread).unwrap();
        let mut buf = vec![0u8; 4 << 20];
        for i in (0..buf.len()).step_by(4096) {
            buf[i] = 1;
        }
        std::hint::black_box(&buf);
        let spin = std::time::Instant::now();
        while spin.elapsed() < std::time::Duration::from_millis(30) {
            std::hint::black_box(0u64);
        }
        let d = snapshot(Who::Process).unwrap().since(&before);
        let dt = snapshot(Who::Thread).unwrap().since(&t0);
        // With THP "always" the 4 MB may fault in as two huge pages.
        let want = if crate::test_support::thp_always() {
            1
        } else {
            500
        };
        assert!(d.minor_faults >= want, "{d:?}");
        assert!(dt.minor_faults >= want, "{dt:?}");
        assert!(d.user_us + d.sys_us >= 20_000, "{d:?}");
        assert!(d.maxrss_kb >= 4096, "{d:?}");
        assert!(snapshot(Who::Children).is_ok());
    }

    #[test]
    fn measure_rusage_sum() {
        let a = usage_from_wait4(&raw(1_000_000, 0, 1, 10, 100));
        let mut b = usage_from_wait4(&raw(2_000_000, 0, 2, 20, 200));
        let s = sum_usage(&[a.clone(), b.clone()]);
        assert_eq!(s.user_s, Some(3.0));
        assert_eq!(s.minor_faults, Some(30));
        assert_eq!(s.peak_rss_kb, Some(300));
        assert_eq!(s.pss_kb, None);
        b.minor_faults = None;
        assert_eq!(sum_usage(&[a, b]).minor_faults, None);
        assert_eq!(sum_usage(&[]), ResourceUsage::default());
    }
}
