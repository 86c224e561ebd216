//! The page state machine: how the computation's accesses, releases and
//! acquires move each page between its states (`page_table::PageState`).
//!
//! Pages, at a rank that is not their home: **invalid** (no access; a
//! fault fetches the page from its home: GETP) → **read-only** (a write
//! faults: a twin is copied and the page opened) → **dirty**; at a release
//! (unlock, barrier) each dirty page's diff against its twin goes to the
//! home, which applies it and acknowledges, and the page is read-only
//! again. At its home a page is always valid: read-only at the start of an
//! interval so that a write is noticed (a write notice, no twin: the home
//! holds the master copy). Acquires (lock, barrier) invalidate the pages
//! other ranks wrote: the grant carries the lock's write notices, the
//! barrier's go the pages some other rank wrote since the last barrier.
//!
//! The signal handlers reach the node here too: a fault is served by this
//! state machine, an I/O signal by the `sigio` mechanism.

use std::sync::atomic::Ordering;

use smtlab_sys::{PageAccess, DSM_PAGE};

use crate::clock::now_ns;
use crate::node::Node;
use crate::page_table::{Main, PageState};
use crate::protocol::{self, PAGE_WORDS};
use crate::registry::SignalTarget;
use crate::waiting::{Awaited, Wanted};

impl Node {
    /// Fetch page `p` from its home into the DSM's view, and make it
    /// readable in the application's.
    fn fetch(&self, m: &mut Main, p: usize) {
        let len = protocol::start(&mut m.msg, protocol::GETP, p as u32);
        let home = m.homes[p] as usize;
        self.request(home, &m.msg[..len], |w| w.page_arrived = false);
        // The page is made readable while the request travels, so the
        // mprotect overlaps the round trip instead of following it. Safe:
        // only the computing thread reads the application's view, and it
        // is here, in the fault handler, until the reply is in the page
        // (written through the DSM's view, the same memory).
        self.protect(p, PageAccess::Read);
        m.wait_ns += self.wait(Wanted::Page(p), Awaited::rank(home), |w| w.page_arrived);
        m.getp += 1;
    }

    /// SIGSEGV at `addr` (in this node's region): serve it, or `false`
    /// when the access is not one the DSM allows (a real fault).
    fn serve_fault(&self, addr: usize) -> bool {
        let t0 = now_ns();
        let p = (addr - self.region.app_range().start) / DSM_PAGE;
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let ok = match m.pages[p] {
            PageState::Invalid => {
                self.fetch(&mut m, p);
                m.pages[p] = PageState::ReadOnly;
                true
            }
            PageState::ReadOnly => {
                let words = &self.region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
                let twin = &mut m.twins[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
                for (t, w) in twin.iter_mut().zip(words) {
                    *t = w.load(Ordering::Relaxed);
                }
                self.written(&mut m, p, PageState::Dirty);
                true
            }
            PageState::HomeClean => {
                self.written(&mut m, p, PageState::HomeDirty);
                true
            }
            _ => false,
        };
        m.fault_ns += now_ns() - t0;
        ok
    }

    /// Page `p` written (a fault on a read-only page): open it and note it
    /// dirty, in this interval and since the barrier.
    fn written(&self, m: &mut Main, p: usize, state: PageState) {
        self.protect(p, PageAccess::ReadWrite);
        m.pages[p] = state;
        m.dirty.push(p as u32);
        m.interval.insert(p as u32);
        m.since_barrier.insert(p as u32);
    }

    /// Send every dirty page's diff home and wait until all are applied;
    /// every page is read-only again (the interval's notices are kept).
    pub(crate) fn flush_dirty(&self, m: &mut Main) {
        let dirty = std::mem::take(&mut m.dirty);
        let mut sent = 0;
        let mut homes = 0u64;
        for &p in &dirty {
            let p = p as usize;
            self.protect(p, PageAccess::Read);
            if m.pages[p] == PageState::HomeDirty {
                m.pages[p] = PageState::HomeClean;
                continue;
            }
            m.pages[p] = PageState::ReadOnly;
            let mut now = [0u64; PAGE_WORDS];
            for (n, w) in now
                .iter_mut()
                .zip(&self.region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS])
            {
                *n = w.load(Ordering::Relaxed);
            }
            let twin = &m.twins[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
            let mut msg = std::mem::take(&mut m.msg);
            if let Some(len) = protocol::encode_diff(&mut msg, p as u32, twin, &now) {
                let home = m.homes[p] as usize;
                self.request(home, &msg[..len], |w| w.diff_acks += 1);
                sent += 1;
                homes |= 1 << home;
            }
            m.msg = msg;
        }
        let mut dirty = dirty;
        dirty.clear();
        m.dirty = dirty;
        if sent > 0 {
            m.diffs += sent;
            m.wait_ns += self.wait(Wanted::DiffAcks, Awaited::Ranks(homes), |w| {
                w.diff_acks == 0
            });
        }
    }

    /// Invalidate the pages another rank wrote (the notices just received).
    pub(crate) fn invalidate(&self, m: &mut Main) {
        let notices = self.with_core(|core| std::mem::take(&mut core.waits.notices));
        for &p in &notices {
            let p = p as usize;
            if p < m.pages.len() && m.pages[p] == PageState::ReadOnly {
                self.protect(p, PageAccess::None);
                m.pages[p] = PageState::Invalid;
            }
        }
        let mut notices = notices;
        notices.clear();
        self.with_core(|core| core.waits.notices = notices);
    }

    /// Drop this rank's copies of pages `first..first + count` (those it
    /// holds clean), so the next access to each fetches it again: the
    /// page-fetch benchmark, which does this outside its timing. One
    /// `mprotect` per run of such pages.
    pub fn forget_pages(&self, first: usize, count: usize) {
        let mut m = self.main.lock().unwrap_or_else(|e| e.into_inner());
        let end = (first + count).min(m.pages.len());
        let mut p = first;
        while p < end {
            let run = m.pages[p..end]
                .iter()
                .take_while(|s| **s == PageState::ReadOnly)
                .count();
            if run == 0 {
                p += 1;
                continue;
            }
            self.region
                .protect(p, run, PageAccess::None)
                .unwrap_or_else(|e| panic!("mprotect of DSM pages {p}..{}: {e}", p + run));
            m.pages[p..p + run].fill(PageState::Invalid);
            p += run;
        }
    }
}

impl SignalTarget for Node {
    fn owns(&self, addr: usize) -> bool {
        self.owns_addr(addr)
    }
    fn fault(&self, addr: usize) -> bool {
        self.serve_fault(addr)
    }
    fn on_io_signal(&self) {
        self.io_signal()
    }
}
