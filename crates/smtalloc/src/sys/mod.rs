//! The only place in smtalloc with `unsafe`: the FFI to mimalloc ([`mi`]),
//! raw system calls and raw memory ([`os`]), the allocator's C-semantics
//! entry points and its lock-free tables ([`engine`]), and the
//! `GlobalAlloc` impl ([`global`]). Every `unsafe` block carries a
//! `// SAFETY:` comment. Parsing, topology, options, statistics and
//! reporting live in safe modules next to this one.
#![allow(unsafe_code)]

pub mod engine;
pub mod global;
pub mod large_cache;
pub mod mi;
pub mod os;
pub mod remote;
pub mod spin_lock;
