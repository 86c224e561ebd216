//! A rank's communication state, behind one mutex: the reliable endpoint
//! and its socket, the managers it runs for everybody, what its own
//! computation waits for, and the serving of requests. Every mechanism
//! drives the same [`Core`]; they differ only in which thread (or signal
//! handler) calls [`Core::service`] and who sends the computation's
//! requests.
//!
//! Receiving and serving allocate nothing (buffers are sized at start), so
//! the `sigio` handler can run them. The one exception is a peer whose
//! whole window is in flight: what cannot be handed to the endpoint then
//! waits in [`Core`]'s pending queue (a `VecDeque` that may grow).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;

use smtlab_msg::{Counters, Endpoint, SendError, UdpTransport};
use smtlab_sys::{DsmRegion, DSM_PAGE};

use crate::managers::{Emit, Managers};
use crate::protocol::{self, PAGE_WORDS};

/// What the computation of this rank waits for; set by whoever serves.
#[derive(Debug, Default)]
pub struct Waits {
    pub page_arrived: bool,
    pub diff_acks: usize,
    pub granted: bool,
    pub go: bool,
    /// Pages to invalidate that came with the last grant or barrier.
    pub notices: Vec<u32>,
    pub bye: bool,
    /// Rank 0: each rank's statistics (JSON), and how many arrived.
    pub gathered: Vec<Vec<u8>>,
    pub gathers: usize,
}

impl Waits {
    /// What has arrived, in one line (for a rank that waited too long).
    pub fn summary(&self) -> String {
        format!(
            "page arrived {}, diff acks owed {}, lock granted {}, barrier go {}, bye {}, \
             statistics gathered {}",
            self.page_arrived, self.diff_acks, self.granted, self.go, self.bye, self.gathers
        )
    }

    fn new(ranks: usize, pages: usize) -> Waits {
        Waits {
            notices: Vec::with_capacity(pages),
            gathered: (0..ranks).map(|_| Vec::with_capacity(16 << 10)).collect(),
            ..Waits::default()
        }
    }

    /// A reply (or a message to this rank's computation) arrived.
    fn on_reply(&mut self, from: usize, kind: u8, body: &[u8], region: &DsmRegion) {
        match kind {
            protocol::GETP_REPLY => {
                let Some((page, data)) = protocol::u32_head(body) else {
                    return;
                };
                let page = page as usize;
                if page >= region.pages() || data.len() != DSM_PAGE {
                    return;
                }
                let words = &region.dsm_words()[page * PAGE_WORDS..(page + 1) * PAGE_WORDS];
                for (w, b) in words.iter().zip(data.chunks_exact(8)) {
                    let v = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                    w.store(v, Ordering::Relaxed);
                }
                self.page_arrived = true;
            }
            protocol::DIFF_ACK => self.diff_acks = self.diff_acks.saturating_sub(1),
            protocol::GRANT | protocol::BARR_GO => {
                let list = if kind == protocol::GRANT {
                    protocol::u32_head(body).map_or(&[][..], |(_, l)| l)
                } else {
                    body
                };
                self.notices.clear();
                self.notices.extend(protocol::pages(list));
                if kind == protocol::GRANT {
                    self.granted = true;
                } else {
                    self.go = true;
                }
            }
            protocol::BYE => self.bye = true,
            protocol::GATHER => {
                if let Some(slot) = self.gathered.get_mut(from) {
                    slot.clear();
                    slot.extend_from_slice(body);
                    self.gathers += 1;
                }
            }
            _ => {}
        }
    }
}

/// Whether a message is a request another rank's computation made (served
/// here) or something for this rank's computation.
fn is_request(kind: u8) -> bool {
    matches!(
        kind,
        protocol::GETP | protocol::DIFF | protocol::ACQ | protocol::REL | protocol::BARR
    )
}

/// A rank's communication state.
pub struct Core {
    pub rank: usize,
    ep: Endpoint,
    net: UdpTransport,
    managers: Managers,
    pub waits: Waits,
    scratch: Vec<u8>,
    inbox: Vec<u8>,
    inbox_index: Vec<(usize, usize, usize)>,
    /// Messages not yet handed to the endpoint, in order.
    pending: VecDeque<(usize, Vec<u8>)>,
    /// thr3: requests the receiving thread leaves to the serving thread.
    pub serve_queue: Option<VecDeque<(usize, Vec<u8>)>>,
    /// Requests served for other ranks (and for this one's managers).
    pub served: u64,
    /// Every rank's address (for [`Core::state_line`]).
    peers: Vec<SocketAddr>,
}

/// Where managers' and servers' messages go.
struct Outbox<'a> {
    rank: usize,
    ep: &'a mut Endpoint,
    net: &'a mut UdpTransport,
    waits: &'a mut Waits,
    pending: &'a mut VecDeque<(usize, Vec<u8>)>,
    region: &'a DsmRegion,
    scratch: &'a mut [u8],
}

impl Outbox<'_> {
    fn send(&mut self, to: usize, len: usize) {
        if to == self.rank {
            let (kind, body) = protocol::split(&self.scratch[..len]).expect("a kind byte");
            self.waits.on_reply(to, kind, body, self.region);
            return;
        }
        let msg = &self.scratch[..len];
        if !self.pending.is_empty() {
            self.pending.push_back((to, msg.to_vec()));
            return;
        }
        match self.net.send(self.ep, to, msg) {
            Ok(()) => {}
            Err(SendError::WindowFull) => self.pending.push_back((to, msg.to_vec())),
            // A rank number or size the DSM built itself: a bug, not input.
            Err(e) => panic!("DSM message to rank {to}: {e}"),
        }
    }
}

impl Emit for Outbox<'_> {
    fn scratch(&mut self) -> &mut [u8] {
        self.scratch
    }
    fn emit_scratch(&mut self, to: usize, len: usize) {
        self.send(to, len)
    }
}

impl Core {
    pub fn new(
        rank: usize,
        ranks: usize,
        pages: usize,
        ep: Endpoint,
        net: UdpTransport,
        thr3: bool,
    ) -> Core {
        let scratch_len = (1 + 8 + pages * 4)
            .max(protocol::MAX_DIFF)
            .max(5 + DSM_PAGE);
        Core {
            rank,
            ep,
            net,
            managers: Managers::new(ranks, pages),
            waits: Waits::new(ranks, pages),
            scratch: vec![0; scratch_len],
            inbox: Vec::with_capacity(1 << 20),
            inbox_index: Vec::with_capacity(4096),
            pending: VecDeque::with_capacity(64),
            serve_queue: thr3.then(|| VecDeque::with_capacity(256)),
            served: 0,
            peers: Vec::new(),
        }
    }

    /// Every rank's address (index = rank). In a job of two ranks the
    /// socket is also connected to the other one (a cheaper send and
    /// receive; see [`UdpTransport::connect_peer`]); if that fails, it
    /// simply stays unconnected.
    pub fn set_peers(&mut self, peers: Vec<SocketAddr>) {
        let two = peers.len() == 2;
        self.peers = peers.clone();
        self.net.set_peers(peers);
        if two {
            let _ = self.net.connect_peer(1 - self.rank);
        }
    }

    pub fn counters(&self) -> &Counters {
        self.ep.counters()
    }

    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.net.as_raw_fd()
    }

    /// A second descriptor of the socket, for threads that wait on it
    /// without holding the core.
    pub fn socket_clone(&self) -> std::io::Result<std::net::UdpSocket> {
        self.net.socket().try_clone()
    }

    /// How long until [`Core::service`] has timer work.
    pub fn until_deadline(&self) -> Option<std::time::Duration> {
        self.net.until_deadline(&self.ep)
    }

    /// Nothing in flight and nothing pending: safe to stop.
    pub fn idle(&self) -> bool {
        self.pending.is_empty() && self.ep.idle()
    }

    fn outbox<'a>(&'a mut self, region: &'a DsmRegion) -> (Outbox<'a>, &'a mut Managers) {
        (
            Outbox {
                rank: self.rank,
                ep: &mut self.ep,
                net: &mut self.net,
                waits: &mut self.waits,
                pending: &mut self.pending,
                region,
                scratch: &mut self.scratch,
            },
            &mut self.managers,
        )
    }

    /// Receive what arrived, serve requests (or queue them for thr3's
    /// serving thread), deliver replies to the waits, hand pending messages
    /// to the endpoint, retransmit what timed out. Returns how many
    /// messages arrived.
    pub fn service(&mut self, region: &DsmRegion) -> usize {
        let arrived = self.receive(region);
        self.flush_pending();
        self.tick();
        arrived
    }

    /// Receive what arrived and handle it; returns how many messages.
    pub fn receive(&mut self, region: &DsmRegion) -> usize {
        self.receive_with(region, |net, ep, deliver| {
            net.drain(ep, deliver);
        })
    }

    /// Sleep in the socket until one datagram arrives or `timeout` passes,
    /// and handle it; returns how many messages it completed. Only for a
    /// rank whose computing thread is its only reader (`poll`), and only
    /// with the core locked by that thread — nobody else needs it then.
    pub fn receive_waiting(&mut self, region: &DsmRegion, timeout: std::time::Duration) -> usize {
        self.receive_with(region, |net, ep, deliver| {
            net.receive_one(ep, timeout, deliver);
        })
    }

    /// Read with `read`, then handle the messages it completed (after the
    /// read: a reply goes out through the endpoint the read borrows).
    fn receive_with(
        &mut self,
        region: &DsmRegion,
        read: impl FnOnce(&mut UdpTransport, &mut Endpoint, &mut dyn FnMut(usize, &[u8])),
    ) -> usize {
        let mut inbox = std::mem::take(&mut self.inbox);
        let mut index = std::mem::take(&mut self.inbox_index);
        inbox.clear();
        index.clear();
        let mut direct = 0;
        let waits = &mut self.waits;
        read(&mut self.net, &mut self.ep, &mut |from, msg| {
            // A reply with nothing before it in this read is handled at
            // once, from the socket's buffer (a page's reply is not
            // copied twice); anything else waits its turn, in order.
            if let Some((kind, body)) = protocol::split(msg) {
                if index.is_empty() && !is_request(kind) {
                    waits.on_reply(from, kind, body, region);
                    direct += 1;
                    return;
                }
            }
            index.push((from, inbox.len(), msg.len()));
            inbox.extend_from_slice(msg);
        });
        for &(from, start, len) in &index {
            self.handle(from, &inbox[start..start + len], region);
        }
        let arrived = direct + index.len();
        self.inbox = inbox;
        self.inbox_index = index;
        arrived
    }

    /// Retransmit what timed out, send owed acknowledgements.
    pub fn tick(&mut self) {
        self.net.tick(&mut self.ep);
    }

    /// One message from `from` (or from this rank's own computation).
    pub fn handle(&mut self, from: usize, msg: &[u8], region: &DsmRegion) {
        let Some((kind, body)) = protocol::split(msg) else {
            return;
        };
        if is_request(kind) {
            if let Some(q) = self.serve_queue.as_mut() {
                if from != self.rank {
                    q.push_back((from, msg.to_vec()));
                    return;
                }
            }
            self.serve(from, kind, body, region);
        } else {
            self.waits.on_reply(from, kind, body, region);
        }
    }

    /// Serve one request.
    pub fn serve(&mut self, from: usize, kind: u8, body: &[u8], region: &DsmRegion) {
        self.served += 1;
        let (mut out, managers) = self.outbox(region);
        match kind {
            protocol::GETP => {
                let Some((page, _)) = protocol::u32_head(body) else {
                    return;
                };
                if page as usize >= region.pages() {
                    return;
                }
                let start = protocol::start(out.scratch, protocol::GETP_REPLY, page);
                let p = page as usize;
                let words = &region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
                // One slice, so the loop is a load and a store per word
                // (indexing `out.scratch` per word re-read its bounds).
                let body = &mut out.scratch[start..start + DSM_PAGE];
                for (b, w) in body.chunks_exact_mut(8).zip(words) {
                    b.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
                }
                out.send(from, start + DSM_PAGE);
            }
            protocol::DIFF => {
                let Some((page, runs)) = protocol::u32_head(body) else {
                    return;
                };
                let p = page as usize;
                if p >= region.pages() {
                    return;
                }
                let words = &region.dsm_words()[p * PAGE_WORDS..(p + 1) * PAGE_WORDS];
                // A malformed diff is dropped unacknowledged: its sender
                // waits, and the run fails at its timeout rather than
                // computing on a half-applied page.
                if protocol::diff_runs(runs, |i, v| words[i].store(v, Ordering::Relaxed)).is_some()
                {
                    let len = protocol::start(out.scratch, protocol::DIFF_ACK, page);
                    out.send(from, len);
                }
            }
            protocol::ACQ => {
                if let Some((lock, _)) = protocol::u32_head(body) {
                    managers.acquire(from, lock as usize, &mut out);
                }
            }
            protocol::REL => {
                if let Some((lock, rest)) = protocol::u32_head(body) {
                    if let Some((epoch, pages)) = protocol::u32_head(rest) {
                        managers.release(from, lock as usize, epoch, pages, &mut out);
                    }
                }
            }
            protocol::BARR => managers.arrive(from, body, &mut out),
            _ => {}
        }
    }

    /// Send a message of this rank's computation: to itself it is served
    /// at once; to others it goes to the endpoint (or waits its turn).
    pub fn send(&mut self, to: usize, msg: &[u8], region: &DsmRegion) {
        if to == self.rank {
            self.handle(to, msg, region);
            return;
        }
        // Straight to the endpoint unless earlier messages wait (in
        // order, behind them): no copy on the common path.
        if self.pending.is_empty() {
            match self.net.send(&mut self.ep, to, msg) {
                Ok(()) => return,
                Err(SendError::WindowFull) => {}
                Err(e) => panic!("DSM message to rank {to}: {e}"),
            }
        }
        self.pending.push_back((to, msg.to_vec()));
        self.flush_pending();
    }

    /// Queue a message of this rank's computation for a sending thread.
    pub fn enqueue(&mut self, to: usize, msg: &[u8]) {
        self.pending.push_back((to, msg.to_vec()));
    }

    /// Hand queued messages to the endpoint while its windows allow.
    pub fn flush_pending(&mut self) {
        while let Some((to, msg)) = self.pending.front() {
            match self.net.send(&mut self.ep, *to, msg) {
                Ok(()) => {
                    self.pending.pop_front();
                }
                Err(SendError::WindowFull) => break,
                Err(e) => panic!("DSM message to rank {to}: {e}"),
            }
        }
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// What this rank's communication looks like, in one line: for a
    /// rank that waited too long, to say why.
    pub fn state_line(&self) -> String {
        let c = self.ep.counters();
        let in_flight: Vec<String> = (0..self.ep.config().ranks)
            .filter(|&r| r != self.rank)
            .map(|r| format!("{r}:{}", self.ep.in_flight(r)))
            .collect();
        let at = self
            .net
            .local_addr()
            .map_or_else(|e| e.to_string(), |a| a.to_string());
        let peers: Vec<String> = self.peers.iter().map(ToString::to_string).collect();
        format!(
            "socket {at}, ranks at [{}], datagrams in flight to each rank [{}], messages \
             waiting for the window {}, messages sent {}, received {}, retransmissions {}, \
             duplicates {}, strangers {}, send errors {}, receive errors {}",
            peers.join(" "),
            in_flight.join(" "),
            self.pending.len(),
            c.messages_sent,
            c.messages_received,
            c.retransmissions,
            c.duplicates_dropped,
            c.strangers_dropped,
            self.net.send_errors(),
            self.net.recv_errors()
        )
    }

    /// The ranks that have not arrived at the barrier this rank manages
    /// (rank 0's), bit r.
    pub fn missing_arrivals(&self) -> u64 {
        self.managers.missing_arrivals()
    }

    /// Acknowledge now what is owed (before sleeping).
    pub fn flush_acks(&mut self) {
        self.net.flush_acks(&mut self.ep);
    }
}
