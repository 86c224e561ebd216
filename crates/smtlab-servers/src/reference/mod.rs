//! Reference tools run beside smtlab's own: Debian's `nginx` as the
//! reference server ([`nginx`]: where it is, and the configuration smtlab
//! starts it with, unprivileged, in a directory of its own), and Debian's
//! `ngircd` as the reference IRC server ([`ngircd`]: the same, and the
//! limits of ngircd that shape a chat measurement).
//!
//! Only the knowledge of the tool lives here; starting, measuring and
//! stopping it is the executor's (`smtlab-execute`'s `server.rs`), like
//! every other program smtlab measures.

pub mod nginx;
pub mod ngircd;
