//! Which rank computes on this thread, for the two process-wide signal
//! handlers: SIGSEGV (a fault in the rank's region) and SIGIO (the rank's
//! socket or timer), both delivered to the computing thread itself — the
//! fault because that thread made the access, the signal because the
//! socket and the timer are owned by that thread (`F_SETOWN_EX`,
//! `SIGEV_THREAD_ID`). A thread-local, not a global list: a handler then
//! takes no lock at all (a global lock held by a fault's handler while a
//! nested SIGIO handler wants it again is a deadlock), and tests can run
//! several ranks as threads of one process.

use std::cell::RefCell;
use std::sync::{Arc, Once};

/// What the handlers need of a rank (the node implements it; a trait, so
/// this file does not use the node's).
pub trait SignalTarget: Send + Sync {
    /// Whether `addr` is in the rank's region.
    fn owns(&self, addr: usize) -> bool;
    /// Serve a fault at `addr`; `false` for an access the DSM does not
    /// allow.
    fn fault(&self, addr: usize) -> bool;
    /// Serve what the I/O signal announced.
    fn on_io_signal(&self);
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn SignalTarget>>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Route this thread's faults and I/O signals to `node` (installing the
/// handlers the first time in the process).
pub fn register(node: Arc<dyn SignalTarget>) -> std::io::Result<()> {
    let mut result = Ok(());
    INSTALL.call_once(|| {
        result = smtlab_sys::install_fault_handler(on_fault)
            .and_then(|()| smtlab_sys::install_io_handler(on_io));
    });
    smtlab_sys::block_io_signal();
    CURRENT.with(|c| *c.borrow_mut() = Some(node));
    smtlab_sys::unblock_io_signal();
    result
}

/// Stop routing this thread's signals to its node. The handlers stay
/// (other ranks of the process may use them); with no node a fault is an
/// ordinary fault and an I/O signal does nothing.
pub fn unregister() {
    smtlab_sys::block_io_signal();
    CURRENT.with(|c| c.borrow_mut().take());
    smtlab_sys::unblock_io_signal();
}

/// The node computing on this thread, if any; `None` too while the
/// thread itself is changing it (its I/O signal is blocked then, and it
/// cannot fault there).
fn current() -> Option<Arc<dyn SignalTarget>> {
    CURRENT
        .try_with(|c| c.try_borrow().ok().and_then(|n| n.clone()))
        .ok()
        .flatten()
}

/// SIGSEGV: this thread's node serves a fault in its region.
fn on_fault(addr: usize) -> bool {
    current().is_some_and(|n| n.owns(addr) && n.fault(addr))
}

/// SIGIO (a datagram, or the retransmission timer): this thread's node
/// serves.
fn on_io() {
    if let Some(n) = current() {
        n.on_io_signal();
    }
}
