//! Who this process is and what a filesystem allows: the checks `smtlab pin`
//! makes before it installs its preload library in a directory (owned by
//! us, on a filesystem that may map it executable), and the doctor's "are
//! we root" fact.

use std::io;

/// This process's effective user id (to check who owns a directory).
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// True if the filesystem holding `path` is mounted `noexec` (a shared
/// object there cannot be mapped executable, so LD_PRELOAD would fail).
pub fn is_noexec(path: &std::path::Path) -> io::Result<bool> {
    let st = nix::sys::statvfs::statvfs(path).map_err(io::Error::from)?;
    Ok(st.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC))
}
