//! Threads that cost the kernel as little as a thread can: for servers
//! with a thread (or two) per connection, where 10,000 connections are the
//! point of the measurement.
//!
//! Why not `std::thread`: every thread it starts also maps an alternate
//! signal stack with a guard page (for its stack-overflow message), so a
//! thread holds four memory mappings — its stack, the stack's guard, the
//! alternate stack and its guard. Linux allows `vm.max_map_count` mappings
//! per process (65,530 by default), so a process of std threads ends near
//! 16,000 threads however much memory is free, and the std thread that
//! cannot get its mappings panics. A lean thread is `pthread_create` with a
//! small stack and glibc's guard page: two mappings, about 32,000 threads.
//! What it gives up: a stack overflow kills the process with SIGSEGV
//! instead of printing std's message (the guard page still stops it from
//! writing past the stack).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A started lean thread.
pub struct LeanThread {
    thread: libc::pthread_t,
    done: Arc<AtomicBool>,
    joined: bool,
}

struct Start {
    f: Box<dyn FnOnce() + Send + 'static>,
    done: Arc<AtomicBool>,
}

extern "C" fn trampoline(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `Box<Start>` leaked by `spawn_lean` for this
    // thread alone; it is taken back exactly once, here.
    let start = unsafe { Box::from_raw(arg as *mut Start) };
    let Start { f, done } = *start;
    // A panic must not unwind out of an `extern "C"` function: it ends the
    // thread here (the panic message is printed by the hook as usual).
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    done.store(true, Ordering::Release);
    std::ptr::null_mut()
}

/// Starts `f` on a new thread with a `stack`-byte stack (rounded up to the
/// system's minimum and page size by glibc).
pub fn spawn_lean(stack: usize, f: impl FnOnce() + Send + 'static) -> io::Result<LeanThread> {
    let done = Arc::new(AtomicBool::new(false));
    let start = Box::into_raw(Box::new(Start {
        f: Box::new(f),
        done: done.clone(),
    }));
    let stack = stack.max(libc::PTHREAD_STACK_MIN);
    // SAFETY: a zeroed `pthread_attr_t` is initialised by
    // `pthread_attr_init` before any other use and destroyed after
    // `pthread_create`, which copies what it needs from it.
    let mut attr: libc::pthread_attr_t = unsafe { std::mem::zeroed() };
    let mut thread: libc::pthread_t = 0;
    // SAFETY: `attr` is a valid attribute object between init and destroy;
    // `trampoline` takes ownership of `start` when the thread starts, and
    // `start` is reclaimed here when it does not.
    let rc = unsafe {
        let rc = libc::pthread_attr_init(&mut attr);
        if rc != 0 {
            drop(Box::from_raw(start));
            return Err(io::Error::from_raw_os_error(rc));
        }
        let mut rc = libc::pthread_attr_setstacksize(&mut attr, stack);
        if rc == 0 {
            rc = libc::pthread_create(&mut thread, &attr, trampoline, start as *mut libc::c_void);
        }
        libc::pthread_attr_destroy(&mut attr);
        if rc != 0 {
            drop(Box::from_raw(start));
        }
        rc
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    Ok(LeanThread {
        thread,
        done,
        joined: false,
    })
}

impl LeanThread {
    /// Whether its function has returned (the thread may still be ending).
    pub fn is_finished(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Waits for the thread to end.
    pub fn join(mut self) {
        self.join_now();
    }

    fn join_now(&mut self) {
        if !self.joined {
            self.joined = true;
            // SAFETY: `thread` was created joinable and is joined once.
            unsafe { libc::pthread_join(self.thread, std::ptr::null_mut()) };
        }
    }
}

impl Drop for LeanThread {
    /// A handle dropped without `join` detaches the thread, as a dropped
    /// `JoinHandle` does.
    fn drop(&mut self) {
        if !self.joined {
            self.joined = true;
            // SAFETY: `thread` is joinable and neither joined nor detached.
            unsafe { libc::pthread_detach(self.thread) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_joins_and_tells_when_finished() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = spawn_lean(64 << 10, move || {
            tx.send(std::thread::current().id()).unwrap();
        })
        .unwrap();
        let other = rx.recv().unwrap();
        assert_ne!(other, std::thread::current().id());
        t.join();
    }

    #[test]
    fn a_panic_ends_only_its_thread() {
        let t = spawn_lean(64 << 10, || panic!("expected in this test")).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !t.is_finished() {
            assert!(std::time::Instant::now() < until);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        t.join();
    }

    #[test]
    fn a_lean_thread_holds_two_mappings_not_four() {
        let maps = || {
            std::fs::read_to_string("/proc/self/maps")
                .unwrap()
                .lines()
                .count()
        };
        // Many threads at once, parked until counted: the mappings grow by
        // about two each (other tests' threads add noise, hence the slack).
        let n = 200;
        let gate = Arc::new(std::sync::Barrier::new(n + 1));
        let before = maps();
        let threads: Vec<LeanThread> = (0..n)
            .map(|_| {
                let g = gate.clone();
                spawn_lean(64 << 10, move || {
                    g.wait();
                })
                .unwrap()
            })
            .collect();
        let during = maps();
        gate.wait();
        for t in threads {
            t.join();
        }
        let per_thread = (during as f64 - before as f64) / n as f64;
        assert!(
            (1.5..3.0).contains(&per_thread),
            "{per_thread} mappings per lean thread"
        );
    }
}
