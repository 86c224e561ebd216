//! The node as the applications see it ([`Shared`]): allocating pages of
//! the region with their homes, the synchronisation (locks and barriers,
//! where releases send diffs home and acquires invalidate), `poll` and
//! `section_end`.

use smtlab_dsm_apps::{Home, Region, Shared};
use smtlab_dsm_params::pages_of;
use smtlab_sys::PageAccess;
use smtlab_types::Comm;

use crate::clock::now_ns;
use crate::managers::{Managers, LOCKS};
use crate::node::Node;
use crate::page_table::PageState;
use crate::protocol::{self, PAGE_WORDS};
use crate::waiting::{Awaited, Wanted};

impl Shared for Node {
    fn rank(&self) -> usize {
        self.rank
    }

    fn ranks(&self) -> usize {
        self.ranks
    }

    fn alloc(&self, words: usize, home: Home) -> Region {
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let pages = pages_of(words);
        let first = m.next_page;
        // The region is sized from the application's allocations
        // (`rank::region_pages`): one beyond it is a bug of that sizing.
        assert!(
            first + pages <= m.pages.len(),
            "the DSM region ({} pages) is full: the application asked for {} more pages",
            m.pages.len(),
            pages
        );
        for i in 0..pages {
            let h = match home {
                Home::Blocked => i * self.ranks / pages,
                Home::Rank(r) => r % self.ranks,
            };
            m.homes[first + i] = h as u16;
            if h == self.rank {
                m.pages[first + i] = PageState::HomeClean;
                self.protect(first + i, PageAccess::Read);
            } else {
                m.pages[first + i] = PageState::Invalid;
            }
        }
        m.next_page += pages;
        Region {
            offset: first * PAGE_WORDS,
            len: words,
        }
    }

    fn words(&self, region: Region) -> &[std::sync::atomic::AtomicU64] {
        &self.region.app_words()[region.offset..region.offset + region.len]
    }

    fn lock(&self, id: usize) {
        assert!(id < LOCKS, "lock {id}: the DSM has locks 0..{LOCKS}");
        let t0 = now_ns();
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        // Writes made so far go home first: an invalidation the grant
        // brings must not drop them.
        self.flush_dirty(&mut m);
        let len = protocol::start(&mut m.msg, protocol::ACQ, id as u32);
        let manager = Managers::manager_of(id, self.ranks);
        self.request(manager, &m.msg[..len], |w| w.granted = false);
        m.wait_ns += self.wait(Wanted::Lock(id), Awaited::rank(manager), |w| w.granted);
        self.invalidate(&mut m);
        m.locks += 1;
        m.sync_ns += now_ns() - t0;
    }

    fn unlock(&self, id: usize) {
        assert!(id < LOCKS, "lock {id}: the DSM has locks 0..{LOCKS}");
        let t0 = now_ns();
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_dirty(&mut m);
        let mut msg = std::mem::take(&mut m.msg);
        let len = protocol::start(&mut msg, protocol::REL, id as u32);
        msg[len..len + 4].copy_from_slice(&m.epoch.to_le_bytes());
        let len = protocol::put_pages(&mut msg, len + 4, m.interval.list.iter().copied());
        m.interval.clear();
        let manager = Managers::manager_of(id, self.ranks);
        self.request(manager, &msg[..len], |_| {});
        m.msg = msg;
        m.sync_ns += now_ns() - t0;
    }

    fn barrier(&self) {
        let t0 = now_ns();
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        self.flush_dirty(&mut m);
        let mut msg = std::mem::take(&mut m.msg);
        let len = protocol::bare(&mut msg, protocol::BARR);
        let len = protocol::put_pages(&mut msg, len, m.since_barrier.list.iter().copied());
        m.since_barrier.clear();
        m.interval.clear();
        self.request(0, &msg[..len], |w| w.go = false);
        m.msg = msg;
        // Rank 0 manages the barrier: it waits for the others' arrivals,
        // they wait for its go.
        let from = if self.rank == 0 {
            Awaited::Arrivals
        } else {
            Awaited::rank(0)
        };
        m.wait_ns += self.wait(Wanted::Barrier, from, |w| w.go);
        self.invalidate(&mut m);
        m.epoch += 1;
        m.barriers += 1;
        m.sync_ns += now_ns() - t0;
    }

    fn poll(&self) {
        if self.comm == Comm::Poll {
            self.poll_now(false);
        }
    }

    fn section_end(&self) {
        let end = (smtlab_sys::monotonic_s(), self.snapshot());
        *self.section_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(end);
    }
}
