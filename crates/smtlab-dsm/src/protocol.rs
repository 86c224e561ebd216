//! The DSM's messages, as bytes over smtlab-msg: a kind byte, then fixed
//! little-endian fields, then a page, a diff or a list of page numbers.
//! Encoding writes into a caller's buffer and decoding borrows from the
//! message, so serving a request allocates nothing (the `sigio` handler
//! serves in a signal context).

use smtlab_sys::DSM_PAGE;

/// Page fetch: `page: u32`. Sent to the page's home.
pub const GETP: u8 = 1;
/// The page: `page: u32`, then [`DSM_PAGE`] bytes.
pub const GETP_REPLY: u8 = 2;
/// Changes to a page: `page: u32`, then runs of `(first word: u16, words:
/// u16, words x 8 bytes)`. Sent to the page's home at a release.
pub const DIFF: u8 = 3;
/// The diff is applied: `page: u32`.
pub const DIFF_ACK: u8 = 4;
/// Acquire: `lock: u32`. Sent to the lock's manager.
pub const ACQ: u8 = 5;
/// The lock is yours: `lock: u32`, then the pages written under it (u32s):
/// the write notices to invalidate.
pub const GRANT: u8 = 6;
/// Release: `lock: u32`, then the pages written in this interval.
pub const REL: u8 = 7;
/// Arrival at a barrier: the pages written since the last barrier.
pub const BARR: u8 = 8;
/// Everybody arrived: the pages to invalidate (written by another rank).
pub const BARR_GO: u8 = 9;
/// A rank's statistics, JSON, to rank 0 at the end.
pub const GATHER: u8 = 10;
/// Rank 0 has everything: a rank may stop serving.
pub const BYE: u8 = 11;

/// A message's kind and its fields after the kind byte.
pub fn split(msg: &[u8]) -> Option<(u8, &[u8])> {
    msg.split_first().map(|(k, rest)| (*k, rest))
}

/// The leading u32 of a body, and what follows.
pub fn u32_head(body: &[u8]) -> Option<(u32, &[u8])> {
    let head: [u8; 4] = body.get(..4)?.try_into().ok()?;
    Some((u32::from_le_bytes(head), &body[4..]))
}

/// Write `kind`, `head` into `buf`; returns the length so far.
pub fn start(buf: &mut [u8], kind: u8, head: u32) -> usize {
    buf[0] = kind;
    buf[1..5].copy_from_slice(&head.to_le_bytes());
    5
}

/// A message of a kind byte only.
pub fn bare(buf: &mut [u8], kind: u8) -> usize {
    buf[0] = kind;
    1
}

/// Append page numbers to a message being built; returns the new length.
pub fn put_pages(buf: &mut [u8], mut len: usize, pages: impl Iterator<Item = u32>) -> usize {
    for p in pages {
        buf[len..len + 4].copy_from_slice(&p.to_le_bytes());
        len += 4;
    }
    len
}

/// The page numbers of a notice list.
pub fn pages(list: &[u8]) -> impl Iterator<Item = u32> + '_ {
    list.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Words in a page.
pub const PAGE_WORDS: usize = DSM_PAGE / 8;

/// Largest diff body: every other word changed, 4 + 8 bytes each, plus the
/// page number (a diff never exceeds a page plus its run headers).
pub const MAX_DIFF: usize = 1 + 4 + PAGE_WORDS * 12;

/// Encode the words of `now` that differ from `twin` as runs; returns the
/// length, or `None` when nothing changed.
pub fn encode_diff(buf: &mut [u8], page: u32, twin: &[u64], now: &[u64]) -> Option<usize> {
    let mut len = start(buf, DIFF, page);
    let mut i = 0;
    let mut any = false;
    while i < PAGE_WORDS {
        if twin[i] == now[i] {
            i += 1;
            continue;
        }
        let first = i;
        while i < PAGE_WORDS && twin[i] != now[i] {
            i += 1;
        }
        any = true;
        buf[len..len + 2].copy_from_slice(&(first as u16).to_le_bytes());
        buf[len + 2..len + 4].copy_from_slice(&((i - first) as u16).to_le_bytes());
        len += 4;
        for w in &now[first..i] {
            buf[len..len + 8].copy_from_slice(&w.to_le_bytes());
            len += 8;
        }
    }
    any.then_some(len)
}

/// The runs of a diff body (after the page number): `(first word, words)`.
/// `None` for a malformed diff (a run past the page, a cut word).
pub fn diff_runs(mut runs: &[u8], mut apply: impl FnMut(usize, u64)) -> Option<()> {
    while !runs.is_empty() {
        let first = u16::from_le_bytes([*runs.first()?, *runs.get(1)?]) as usize;
        let words = u16::from_le_bytes([*runs.get(2)?, *runs.get(3)?]) as usize;
        if first + words > PAGE_WORDS || runs.len() < 4 + words * 8 {
            return None;
        }
        for w in 0..words {
            let at = 4 + w * 8;
            let v = u64::from_le_bytes(runs[at..at + 8].try_into().ok()?);
            apply(first + w, v);
        }
        runs = &runs[4 + words * 8..];
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_carries_exactly_the_changed_words() {
        let twin = vec![0u64; PAGE_WORDS];
        let mut now = twin.clone();
        assert_eq!(encode_diff(&mut [0; MAX_DIFF], 3, &twin, &now), None);
        now[0] = 1;
        now[5] = 2;
        now[6] = 3;
        now[PAGE_WORDS - 1] = 4;
        let mut buf = vec![0; MAX_DIFF];
        let len = encode_diff(&mut buf, 3, &twin, &now).unwrap();
        let (kind, body) = split(&buf[..len]).unwrap();
        assert_eq!(kind, DIFF);
        let (page, runs) = u32_head(body).unwrap();
        assert_eq!(page, 3);
        let mut got = twin.clone();
        diff_runs(runs, |i, v| got[i] = v).unwrap();
        assert_eq!(got, now);
        // 3 runs: 4 words, 12 header bytes, 5 bytes of kind and page.
        assert_eq!(len, 5 + 12 + 32);
    }

    #[test]
    fn the_largest_diff_fits_and_a_malformed_one_is_refused() {
        let twin = vec![0u64; PAGE_WORDS];
        let now: Vec<u64> = (0..PAGE_WORDS as u64).map(|i| i % 2).collect();
        let mut buf = vec![0; MAX_DIFF];
        assert!(encode_diff(&mut buf, 0, &twin, &now).unwrap() <= MAX_DIFF);
        let bad = [0u8, 2, 255, 1];
        assert!(diff_runs(&bad, |_, _| {}).is_none());
        assert!(diff_runs(&[1, 0, 1, 0, 9], |_, _| {}).is_none());
    }
}
