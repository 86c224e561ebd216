//! Why a counter cannot be counted here, and what the user can do about it:
//! the advice messages that `smtlab doctor` shows and that every run stores
//! as the reason of a counter without a value.
//!
//! [`classify_open_error`] turns a failed `perf_event_open` into an
//! [`OpenError`]; the probe wraps some of them once it knows more (no PMU at
//! all versus one event missing). Called by the probe and the per-thread
//! counters of this module, and by tests that build plans from synthetic
//! facts; the messages are read by users and by tests, so they change only
//! on purpose.

use std::io;

use nix::errno::Errno;

use smtlab_types::sample::{CounterScope, CounterStatus};

use super::fd_limit::nofile_limit;

/// A counter that cannot be opened here. Its message is the reason stored
/// with the counter; [`OpenError::status`] is the status stored with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpenError {
    #[error("no PMU or event not supported here ({errno:?} from perf_event_open)")]
    EventUnsupported { errno: Errno },
    #[error("kernel built without perf events (ENOSYS)")]
    NoPerfEvents,
    #[error(
        "perf_event_paranoid={paranoid} refuses all perf events to unprivileged users \
         ({errno:?}); run as root (or with CAP_PERFMON) or \
         `sysctl kernel.perf_event_paranoid=1`"
    )]
    ParanoidRefusesAll { paranoid: i32, errno: Errno },
    #[error(
        "perf_event_paranoid={paranoid} refuses kernel-mode counting to unprivileged \
         users ({errno:?}); run as root (or with CAP_PERFMON) or \
         `sysctl kernel.perf_event_paranoid=1`"
    )]
    ParanoidRefusesKernel { paranoid: i32, errno: Errno },
    #[error(
        "perf_event_open refused ({errno:?}); perf_event_paranoid unreadable; run as \
         root or `sysctl kernel.perf_event_paranoid=1`"
    )]
    RefusedParanoidUnreadable { errno: Errno },
    #[error(
        "perf_event_open refused ({errno:?}) although perf_event_paranoid={paranoid} allows \
         it: a seccomp filter (a container?) or no ptrace access to the target"
    )]
    RefusedDespiteParanoid { paranoid: i32, errno: Errno },
    /// `soft_limit`: `RLIMIT_NOFILE` when the open failed, if readable.
    #[error(
        "out of file descriptors ({errno:?}; ulimit -n is {}): every counter of \
         every thread is an fd; raise `ulimit -n` or count fewer threads",
        or_unknown(.soft_limit)
    )]
    OutOfFds {
        errno: Errno,
        soft_limit: Option<u64>,
    },
    #[error("PMU busy: another tool holds the counters exclusively (EBUSY)")]
    PmuBusy,
    #[error("the process to count has already exited (ESRCH)")]
    TargetExited,
    /// perf-event2 reports E2BIG (attr newer than the kernel) without an
    /// errno; the text is its message.
    #[error("kernel too old for this counter's options: {0}")]
    KernelTooOld(String),
    /// Any other failure; the text is the OS's message.
    #[error("perf_event_open failed: {0}")]
    Other(String),
    /// The probe found no hardware event at all, so an "unsupported" is the
    /// machine's, not the event's.
    #[error("no hardware PMU here (a VM without a virtual PMU?): {0}")]
    NoPmu(Box<OpenError>),
    /// Other hardware events opened: this PMU lacks this one.
    #[error("this CPU's PMU has no such event: {0}")]
    NotInThisPmu(Box<OpenError>),
    /// A kernel-only software event while kernel mode is refused.
    #[error("{event} happen only in kernel mode (user-only it would read 0): {cause}")]
    KernelOnly {
        event: &'static str,
        cause: Box<OpenError>,
    },
    #[error("kernel-mode counting refused")]
    KernelRefused,
    /// A hardware event missing from the probe's facts.
    #[error("not probed")]
    NotProbed,
}

fn or_unknown(v: &Option<u64>) -> String {
    v.map_or("?".to_string(), |v| v.to_string())
}

impl OpenError {
    /// The status a counter refused for this reason is stored with.
    pub fn status(&self) -> CounterStatus {
        match self {
            OpenError::EventUnsupported { .. }
            | OpenError::NoPerfEvents
            | OpenError::KernelTooOld(_)
            | OpenError::NoPmu(_)
            | OpenError::NotInThisPmu(_) => CounterStatus::Unsupported,
            OpenError::ParanoidRefusesAll { .. }
            | OpenError::ParanoidRefusesKernel { .. }
            | OpenError::RefusedParanoidUnreadable { .. }
            | OpenError::RefusedDespiteParanoid { .. }
            | OpenError::KernelRefused => CounterStatus::NotPermitted,
            OpenError::OutOfFds { .. }
            | OpenError::PmuBusy
            | OpenError::TargetExited
            | OpenError::Other(_)
            | OpenError::NotProbed => CounterStatus::Error,
            OpenError::KernelOnly { cause, .. } => cause.status(),
        }
    }
}

/// Turn a failed `perf_event_open` into a reason a user can act on. `scope`
/// says whether kernel mode was asked for; `paranoid` is
/// `perf_event_paranoid`.
pub fn classify_open_error(
    err: &io::Error,
    scope: CounterScope,
    paranoid: Option<i32>,
) -> OpenError {
    let Some(raw) = err.raw_os_error() else {
        // perf-event2 maps E2BIG (attr newer than the kernel) to this kind.
        return if err.kind() == io::ErrorKind::Unsupported {
            OpenError::KernelTooOld(err.to_string())
        } else {
            OpenError::Other(err.to_string())
        };
    };
    let errno = Errno::from_raw(raw);
    match raw {
        libc::ENOENT | libc::EOPNOTSUPP | libc::EINVAL | libc::ENODEV => {
            OpenError::EventUnsupported { errno }
        }
        libc::ENOSYS => OpenError::NoPerfEvents,
        libc::EACCES | libc::EPERM => {
            let wants_kernel = scope != CounterScope::User;
            match paranoid {
                Some(v) if v >= 3 => OpenError::ParanoidRefusesAll { paranoid: v, errno },
                Some(v) if v >= 2 && wants_kernel => {
                    OpenError::ParanoidRefusesKernel { paranoid: v, errno }
                }
                None => OpenError::RefusedParanoidUnreadable { errno },
                Some(v) => OpenError::RefusedDespiteParanoid { paranoid: v, errno },
            }
        }
        libc::EMFILE | libc::ENFILE => OpenError::OutOfFds {
            errno,
            soft_limit: nofile_limit().map(|(soft, _)| soft),
        },
        libc::EBUSY => OpenError::PmuBusy,
        libc::ESRCH => OpenError::TargetExited,
        _ => OpenError::Other(err.to_string()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn errno(e: i32) -> io::Error {
        io::Error::from_raw_os_error(e)
    }

    /// The status and the message, as a counter stores them.
    fn classify(e: i32, scope: CounterScope, paranoid: Option<i32>) -> (CounterStatus, String) {
        let e = classify_open_error(&errno(e), scope, paranoid);
        (e.status(), e.to_string())
    }

    #[test]
    fn measure_classify_unsupported() {
        for e in [libc::ENOENT, libc::EOPNOTSUPP, libc::EINVAL] {
            let (s, r) = classify(e, CounterScope::User, Some(2));
            assert_eq!(s, CounterStatus::Unsupported, "{r}");
            assert!(r.contains("no PMU or event not supported here"), "{r}");
        }
        let (_, r) = classify(libc::ENOENT, CounterScope::User, Some(2));
        assert!(r.contains("ENOENT"), "{r}");
    }

    #[test]
    fn measure_classify_not_permitted_kernel_at_paranoid_2() {
        for e in [libc::EACCES, libc::EPERM] {
            let (s, r) = classify(e, CounterScope::Kernel, Some(2));
            assert_eq!(s, CounterStatus::NotPermitted);
            assert!(
                r.contains("perf_event_paranoid=2 refuses kernel-mode"),
                "{r}"
            );
            assert!(r.contains("sysctl kernel.perf_event_paranoid=1"), "{r}");
            assert!(r.contains("run as root"), "{r}");
        }
        let (s, r) = classify(libc::EACCES, CounterScope::All, Some(2));
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("kernel-mode"), "{r}");
    }

    #[test]
    fn measure_classify_not_permitted_other_causes() {
        let (s, r) = classify(libc::EACCES, CounterScope::User, Some(3));
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("perf_event_paranoid=3 refuses all"), "{r}");
        // User mode refused although paranoid allows it: not paranoid's fault.
        let (s, r) = classify(libc::EPERM, CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::NotPermitted);
        assert!(r.contains("seccomp"), "{r}");
    }

    #[test]
    fn measure_classify_errors() {
        let (s, r) = classify(libc::EMFILE, CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::Error);
        assert!(
            r.contains("out of file descriptors") && r.contains("ulimit -n"),
            "{r}"
        );
        let (s, _) = classify(libc::EBUSY, CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::Error);
        let (s, r) = classify(libc::EIO, CounterScope::User, Some(2));
        assert_eq!(s, CounterStatus::Error);
        assert!(r.starts_with("perf_event_open failed"), "{r}");
    }

    // Users act on these messages and runs store them: pin a few whole.
    #[test]
    fn measure_open_error_messages_are_stable() {
        let e = classify_open_error(&errno(libc::EACCES), CounterScope::Kernel, Some(2));
        assert_eq!(
            e.to_string(),
            "perf_event_paranoid=2 refuses kernel-mode counting to unprivileged users \
             (EACCES); run as root (or with CAP_PERFMON) or \
             `sysctl kernel.perf_event_paranoid=1`"
        );
        let e = OpenError::OutOfFds {
            errno: Errno::EMFILE,
            soft_limit: None,
        };
        assert_eq!(
            e.to_string(),
            "out of file descriptors (EMFILE; ulimit -n is ?): every counter of every thread \
             is an fd; raise `ulimit -n` or count fewer threads"
        );
        let e = OpenError::NoPmu(Box::new(OpenError::EventUnsupported {
            errno: Errno::ENOENT,
        }));
        assert_eq!(e.status(), CounterStatus::Unsupported);
        assert_eq!(
            e.to_string(),
            "no hardware PMU here (a VM without a virtual PMU?): no PMU or event not \
             supported here (ENOENT from perf_event_open)"
        );
        let e = OpenError::KernelOnly {
            event: "cpu-migrations",
            cause: Box::new(OpenError::KernelRefused),
        };
        assert_eq!(e.status(), CounterStatus::NotPermitted);
        assert_eq!(
            e.to_string(),
            "cpu-migrations happen only in kernel mode (user-only it would read 0): \
             kernel-mode counting refused"
        );
    }
}
