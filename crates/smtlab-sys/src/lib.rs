//! The only smtlab crate that talks to the kernel through `unsafe` code:
//! every `unsafe` block of smtlab (the allocator crates aside) lives here,
//! each with a `// SAFETY:` line. One file per concept:
//!
//! * `affinity.rs`: which CPUs a thread or process may run on;
//! * `child.rs`: preparing, forking, waiting for and signalling children;
//! * `gate.rs`: the start gate that holds a child just before its exec;
//! * `signals.rs`: signal forwarding to a child, the Ctrl-C flag of a run,
//!   workers that ignore Ctrl-C;
//! * `signal_defaults.rs`: default signal actions again in a forked worker;
//! * `termination.rs`: a thread that takes the stop signals (SIGTERM,
//!   SIGINT, SIGHUP) and runs a process's last act;
//! * `shared_memory.rs`: atomic words shared between processes;
//! * `clock.rs`: the monotonic clock that windows are measured on;
//! * `permissions.rs`: our user id and `noexec` mounts;
//! * `beneath.rs`: opening a file strictly beneath a directory (`openat2`);
//! * `socket.rs`: a send with `MSG_MORE` (a response head corked until its
//!   file body follows);
//! * `dsm_region.rs`: the software DSM's region, mapped twice (the
//!   application's protected view, the DSM's open one);
//! * `fault_handler.rs`: SIGSEGV routed to the DSM;
//! * `async_io.rs`: signal-driven I/O, its timer and mask (the DSM's
//!   `sigio` mechanism), a thread's CPU time;
//! * `lean_thread.rs`: threads with two memory mappings instead of std's
//!   four, for servers with a thread per connection.
//!
//! Called by topology, workloads, execute, doctor and the CLI; uses nothing
//! in smtlab but the CPU set type. Every public name is re-exported here
//! (`smtlab_sys::X`); the files are private so callers need not know how
//! they are split. Errors are the OS's own (`io::Error`).
#![allow(unsafe_code)]

mod affinity;
mod async_io;
mod beneath;
mod child;
mod clock;
mod dsm_region;
mod fault_handler;
mod gate;
mod lean_thread;
mod permissions;
mod shared_memory;
mod signal_defaults;
mod signals;
mod socket;
mod termination;

pub use affinity::{current_affinity, set_affinity, thread_affinity};
pub use async_io::{
    block_io_signal, disown_async_io, install_io_handler, own_async_io, remove_io_handler,
    suspend_for_io_signal, thread_cpu_s, unblock_io_signal, IoTimer, IO_SIGNAL,
};
pub use beneath::open_beneath;
pub use child::{configure_child, fork_child, kill, wait4, wait_exited_keep_zombie, ChildEnd};
pub use clock::{monotonic_s, unix_now_s};
pub use dsm_region::{DsmRegion, PageAccess, DSM_PAGE};
pub use fault_handler::{install_fault_handler, remove_fault_handler, FaultFn};
pub use gate::{configure_gated_child, gate_pipes, wait_at_gate, Gate, GATE_FD, READY_FD};
pub use lean_thread::{spawn_lean, LeanThread};
pub use permissions::{euid, is_noexec};
pub use shared_memory::SharedWords;
pub use signal_defaults::default_signal_actions;
pub use signals::{
    ignore_sigint, install_wake_handler, interrupt_flag, interrupted_exit_code, signal_name,
    SignalForwarding, FORWARDED_SIGNALS, WAKE_SIGNAL,
};
pub use socket::send_more;
pub use termination::on_stop_signal;
