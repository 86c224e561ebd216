//! The end of a run: every rank sends its statistics to rank 0, which
//! gathers them and says goodbye; each rank then serves until what it
//! sent is acknowledged.

use std::time::Duration;

use smtlab_types::Comm;

use crate::clock::now_ns;
use crate::core::Waits;
use crate::error::GatherError;
use crate::node::Node;
use crate::protocol;
use crate::waiting::{Awaited, Wanted};

impl Node {
    /// Gather: send this rank's statistics to rank 0 (or, at rank 0,
    /// wait for everybody's and say goodbye). Returns the gathered JSON at
    /// rank 0.
    pub fn finish(&self, stats_json: &[u8], limit: Duration) -> Result<Vec<Vec<u8>>, GatherError> {
        let deadline = now_ns() + limit.as_nanos() as u64;
        if self.rank != 0 {
            let mut msg = vec![protocol::GATHER];
            msg.extend_from_slice(stats_json);
            self.request(0, &msg, |_| {});
            self.wait_until(|w| w.bye, deadline)
                .map_err(|_| GatherError::NoGoodbye)?;
            // Our last messages acknowledged; linger briefly to acknowledge
            // a retransmitted goodbye.
            let linger = now_ns() + 50_000_000;
            let _ = self.wait_idle(linger.min(deadline));
            return Ok(Vec::new());
        }
        let ranks = self.ranks;
        self.wait_until(|w| w.gathers + 1 >= ranks, deadline)
            .map_err(|_| GatherError::MissingStatistics)?;
        let mut gathered = self.with_core(|c| std::mem::take(&mut c.waits.gathered));
        gathered[0] = stats_json.to_vec();
        for r in 1..self.ranks {
            self.request(r, &[protocol::BYE], |_| {});
        }
        let _ = self.wait_idle(now_ns() + 1_000_000_000);
        Ok(gathered)
    }

    /// Wait for `done`, giving up at `deadline` (ns).
    fn wait_until(&self, done: impl Fn(&Waits) -> bool, deadline: u64) -> Result<(), ()> {
        // `wait` returns only once its condition holds: `done`, or the
        // deadline passed; which of the two is read back once.
        let from = if self.rank == 0 {
            Awaited::Gathers
        } else {
            Awaited::rank(0)
        };
        self.wait(Wanted::End, from, |w| done(w) || now_ns() >= deadline);
        if self.with_core(|c| done(&c.waits)) {
            Ok(())
        } else {
            Err(())
        }
    }

    /// Serve until nothing this rank sent is unacknowledged, or `deadline`.
    fn wait_idle(&self, deadline: u64) -> Result<(), ()> {
        while now_ns() < deadline {
            let idle = self.with_core(|c| {
                if matches!(self.comm, Comm::Poll) {
                    c.service(&self.region);
                }
                c.flush_acks();
                c.idle()
            });
            if idle {
                return Ok(());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Err(())
    }
}
