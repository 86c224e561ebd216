//! The task queue every worker of a sample shares, in one process or
//! across processes (a word in shared memory): how irregular fixed work is
//! dealt out so that no static split is unfair.

/// A queue of task numbers shared by every worker of a sample, in one
/// process or across processes (a shared-memory word): `next` hands out
/// 0, 1, 2, ... exactly once each, whoever asks. Words 1.. are free for a
/// workload's own cross-worker counters.
#[derive(Clone)]
pub struct TaskQueue {
    words: std::sync::Arc<dyn QueueWords>,
}

/// Storage of a [`TaskQueue`]: process-local atomics or shared memory.
pub trait QueueWords: Send + Sync {
    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64;
}

impl QueueWords for smtlab_sys::SharedWords {
    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        smtlab_sys::SharedWords::word(self, i)
    }
}

impl QueueWords for Vec<std::sync::atomic::AtomicU64> {
    fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        &self[i]
    }
}

/// Words in a task queue's region.
pub const QUEUE_WORDS: usize = 64;

impl TaskQueue {
    /// A queue private to this process (tests, single-process use).
    pub fn local() -> TaskQueue {
        TaskQueue {
            words: std::sync::Arc::new(
                (0..QUEUE_WORDS)
                    .map(|_| std::sync::atomic::AtomicU64::new(0))
                    .collect::<Vec<_>>(),
            ),
        }
    }

    /// A queue in shared memory, seen by every process mapping it.
    pub fn shared(words: smtlab_sys::SharedWords) -> TaskQueue {
        TaskQueue {
            words: std::sync::Arc::new(words),
        }
    }

    /// The next task number.
    pub fn next(&self) -> u64 {
        self.claim(1)
    }

    /// Claim `n` consecutive task numbers; returns the first.
    pub fn claim(&self, n: u64) -> u64 {
        self.words
            .word(0)
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed)
    }

    /// A free word for the workload's own use (1..QUEUE_WORDS).
    pub fn word(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(i >= 1, "word 0 is the queue itself");
        self.words.word(i)
    }
}

impl std::fmt::Debug for TaskQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TaskQueue(next={})",
            self.words
                .word(0)
                .load(std::sync::atomic::Ordering::Relaxed)
        )
    }
}
