//! The open-file limit: a run holds one socket per client, so 10,000
//! clients need more descriptors than the usual soft limit of 1,024. The
//! soft limit is raised to the hard limit when it is too low (the hard
//! limit is what the administrator allows; raising the soft one needs no
//! privilege); a run that needs more than the hard limit is refused before
//! it starts, naming the limit.

use nix::sys::resource::{getrlimit, setrlimit, Resource};

use super::error::ChatLoadError;

/// Descriptors a run needs besides its sockets: stdio, each thread's
/// epoll, the reachability probe, and whatever the caller holds.
pub const MARGIN: u64 = 64;

/// Make sure this process may open `needed` descriptors.
pub fn ensure(needed: u64) -> Result<(), ChatLoadError> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)
        .map_err(|e| ChatLoadError::Io("reading the open-file limit".into(), e.into()))?;
    if soft >= needed {
        return Ok(());
    }
    if hard < needed {
        return Err(ChatLoadError::Invalid(format!(
            "{needed} file descriptors needed (one per connection and {MARGIN} more), but the \
             open-file limit is {soft} and its hard limit {hard}: raise it (ulimit -n \
             {needed}) or run fewer rooms or users"
        )));
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(|e| {
        ChatLoadError::Io(
            format!("raising the open-file limit from {soft} to {hard}"),
            e.into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_hard_limit_allows_is_granted_and_more_is_refused() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert!(ensure(16).is_ok());
        if hard < u64::MAX {
            let err = ensure(hard + 1).unwrap_err().to_string();
            assert!(err.contains("ulimit -n"), "{err}");
            assert!(err.contains(&hard.to_string()), "{err}");
        }
    }
}
