//! The datagram format: a fixed 22-byte header, then at most
//! [`MAX_FRAGMENT`] payload bytes.
//!
//! Every field is big-endian (network order) at a fixed offset, so encoding
//! and decoding are a few loads and stores into caller-owned bytes: nothing
//! here allocates, and decoding never panics, whatever the bytes (datagrams
//! from strangers reach us too).
//!
//! Sequence numbers are 64-bit in memory and only their low 32 bits travel
//! (the receiver restores the rest), so a channel never runs out of numbers.

use thiserror::Error;

/// A DSM page, the unit most messages are sized by.
pub const PAGE: usize = 4096;

/// The most payload one datagram carries: a page plus room for the DSM's
/// own request header, so a page travels in one datagram. Longer messages
/// are split into fragments of this size.
pub const MAX_FRAGMENT: usize = PAGE + 256;

/// The header's size in bytes.
pub const HEADER_LEN: usize = 22;

/// The largest datagram this layer sends or accepts.
pub const MAX_DATAGRAM: usize = HEADER_LEN + MAX_FRAGMENT;

/// Identifies smtlab-msg datagrams ("SM"), so stray traffic is dropped.
pub const MAGIC: u16 = 0x534d;

/// The format version; a peer speaking another one is a stranger.
pub const VERSION: u8 = 1;

/// Flag byte of a datagram carrying a message fragment (and an ack).
const FLAG_DATA: u8 = 0x01;
/// Flag byte of a datagram carrying only an ack.
const FLAG_ACK: u8 = 0x02;

/// Byte offset of the `ack` field, so a stored datagram's ack can be
/// refreshed in place before it is retransmitted.
const ACK_OFFSET: usize = 12;

/// What a datagram carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One fragment of a message, with the sender's cumulative ack.
    Data,
    /// Only the sender's cumulative ack (no sequence number, no payload).
    Ack,
}

/// A decoded datagram header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Data or ack-only.
    pub kind: Kind,
    /// The sending rank.
    pub src: u16,
    /// The receiving rank.
    pub dst: u16,
    /// Low 32 bits of the datagram's sequence number on the channel
    /// `src → dst` (first datagram: 1); 0 in an ack-only datagram.
    pub seq: u32,
    /// Low 32 bits of the cumulative ack for the channel `dst → src`: the
    /// sender has every datagram with a smaller sequence number.
    pub ack: u32,
    /// This fragment's index within its message (0 in an ack).
    pub frag_index: u16,
    /// How many fragments the message has (0 in an ack, at least 1 in data).
    pub frag_count: u16,
    /// Payload bytes following the header.
    pub len: u16,
}

/// Why a datagram was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum WireError {
    /// Fewer bytes than a header.
    #[error("datagram of {0} bytes is shorter than the {HEADER_LEN}-byte header")]
    Short(usize),
    /// Not one of ours.
    #[error("wrong magic {0:#06x}")]
    Magic(u16),
    /// Another version of the format.
    #[error("unsupported version {0}")]
    Version(u8),
    /// Neither data nor ack-only.
    #[error("unknown flags {0:#04x}")]
    Flags(u8),
    /// The length field disagrees with the datagram, or exceeds
    /// [`MAX_FRAGMENT`].
    #[error("payload length {claimed} does not match the {actual} bytes present (at most {MAX_FRAGMENT})")]
    Length {
        /// The header's `len`.
        claimed: u16,
        /// Bytes after the header.
        actual: usize,
    },
    /// Fragment fields that cannot be: index not below count, or an ack with
    /// a sequence number, fragments or payload.
    #[error("inconsistent fields for its kind")]
    Fields,
}

impl Header {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `out` and
    /// returns [`HEADER_LEN`].
    ///
    /// # Panics
    /// If `out` is shorter than [`HEADER_LEN`] (a bug of this crate, never
    /// caused by input).
    pub fn encode(&self, out: &mut [u8]) -> usize {
        let out = &mut out[..HEADER_LEN];
        out[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        out[2] = VERSION;
        out[3] = match self.kind {
            Kind::Data => FLAG_DATA,
            Kind::Ack => FLAG_ACK,
        };
        out[4..6].copy_from_slice(&self.src.to_be_bytes());
        out[6..8].copy_from_slice(&self.dst.to_be_bytes());
        out[8..12].copy_from_slice(&self.seq.to_be_bytes());
        out[ACK_OFFSET..ACK_OFFSET + 4].copy_from_slice(&self.ack.to_be_bytes());
        out[16..18].copy_from_slice(&self.frag_index.to_be_bytes());
        out[18..20].copy_from_slice(&self.frag_count.to_be_bytes());
        out[20..22].copy_from_slice(&self.len.to_be_bytes());
        HEADER_LEN
    }

    /// Reads a datagram: its header and its payload, after checking that
    /// they are consistent. Never panics, whatever the bytes.
    pub fn decode(datagram: &[u8]) -> Result<(Header, &[u8]), WireError> {
        let Some((h, payload)) = datagram.split_first_chunk::<HEADER_LEN>() else {
            return Err(WireError::Short(datagram.len()));
        };
        let u16_at = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let magic = u16_at(0);
        if magic != MAGIC {
            return Err(WireError::Magic(magic));
        }
        if h[2] != VERSION {
            return Err(WireError::Version(h[2]));
        }
        let kind = match h[3] {
            FLAG_DATA => Kind::Data,
            FLAG_ACK => Kind::Ack,
            other => return Err(WireError::Flags(other)),
        };
        let header = Header {
            kind,
            src: u16_at(4),
            dst: u16_at(6),
            seq: u32_at(8),
            ack: u32_at(ACK_OFFSET),
            frag_index: u16_at(16),
            frag_count: u16_at(18),
            len: u16_at(20),
        };
        if usize::from(header.len) != payload.len() || payload.len() > MAX_FRAGMENT {
            return Err(WireError::Length {
                claimed: header.len,
                actual: payload.len(),
            });
        }
        let consistent = match kind {
            Kind::Data => header.frag_index < header.frag_count,
            Kind::Ack => {
                header.seq == 0
                    && header.frag_index == 0
                    && header.frag_count == 0
                    && header.len == 0
            }
        };
        if !consistent {
            return Err(WireError::Fields);
        }
        Ok((header, payload))
    }
}

/// Overwrites the ack field of an encoded datagram, so a retransmission
/// carries the newest ack rather than the one of its first transmission.
///
/// # Panics
/// If `datagram` is shorter than [`HEADER_LEN`] (a bug of this crate).
pub(crate) fn set_ack(datagram: &mut [u8], ack: u32) {
    datagram[ACK_OFFSET..ACK_OFFSET + 4].copy_from_slice(&ack.to_be_bytes());
}

/// The low 32 bits of a sequence number, as they travel.
pub(crate) fn low32(seq: u64) -> u32 {
    // Truncation is the point: the receiver restores the high bits.
    seq as u32
}

/// The 64-bit sequence number whose low 32 bits are `wire` and which lies
/// nearest to `reference` (within 2^31 either way), or `None` if that would
/// be below 0. Both ends keep 64-bit counters that never wrap; only
/// numbers near the counters' current values are ever in flight.
pub(crate) fn unwrap_seq(reference: u64, wire: u32) -> Option<u64> {
    // The signed distance from the reference's low bits to the wire value.
    let delta = wire.wrapping_sub(low32(reference)) as i32;
    reference.checked_add_signed(i64::from(delta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn data(len: u16) -> Header {
        Header {
            kind: Kind::Data,
            src: 3,
            dst: 7,
            seq: 0xdead_beef,
            ack: 42,
            frag_index: 2,
            frag_count: 5,
            len,
        }
    }

    fn datagram(h: &Header, payload: &[u8]) -> Vec<u8> {
        let mut d = vec![0; HEADER_LEN + payload.len()];
        h.encode(&mut d);
        d[HEADER_LEN..].copy_from_slice(payload);
        d
    }

    #[test]
    fn round_trip_data_and_ack() {
        let h = data(5);
        let d = datagram(&h, b"hello");
        assert_eq!(Header::decode(&d), Ok((h, &b"hello"[..])));
        let a = Header {
            kind: Kind::Ack,
            src: 1,
            dst: 0,
            seq: 0,
            ack: 9,
            frag_index: 0,
            frag_count: 0,
            len: 0,
        };
        let d = datagram(&a, &[]);
        assert_eq!(Header::decode(&d), Ok((a, &[][..])));
    }

    #[test]
    fn a_full_fragment_fits_and_one_more_byte_does_not() {
        let payload = vec![7; MAX_FRAGMENT];
        let d = datagram(&data(MAX_FRAGMENT as u16), &payload);
        assert_eq!(d.len(), MAX_DATAGRAM);
        assert!(Header::decode(&d).is_ok());
        let payload = vec![7; MAX_FRAGMENT + 1];
        let d = datagram(&data(MAX_FRAGMENT as u16 + 1), &payload);
        assert!(matches!(Header::decode(&d), Err(WireError::Length { .. })));
    }

    #[test]
    fn garbage_is_rejected_with_the_reason() {
        let good = datagram(&data(3), b"abc");
        assert_eq!(Header::decode(&good[..5]), Err(WireError::Short(5)));
        let mut d = good.clone();
        d[0] = 0;
        assert_eq!(Header::decode(&d), Err(WireError::Magic(0x004d)));
        let mut d = good.clone();
        d[2] = 9;
        assert_eq!(Header::decode(&d), Err(WireError::Version(9)));
        let mut d = good.clone();
        d[3] = 3;
        assert_eq!(Header::decode(&d), Err(WireError::Flags(3)));
        // One payload byte missing, one too many.
        assert!(matches!(
            Header::decode(&good[..good.len() - 1]),
            Err(WireError::Length {
                claimed: 3,
                actual: 2
            })
        ));
        let mut d = good.clone();
        d.push(0);
        assert!(matches!(Header::decode(&d), Err(WireError::Length { .. })));
        // Fragment index not below the count.
        let mut h = data(0);
        h.frag_index = 5;
        assert_eq!(Header::decode(&datagram(&h, &[])), Err(WireError::Fields));
        // An ack with a payload or a sequence number.
        let mut h = data(1);
        h.kind = Kind::Ack;
        h.frag_index = 0;
        h.frag_count = 0;
        assert_eq!(Header::decode(&datagram(&h, b"x")), Err(WireError::Fields));
    }

    #[test]
    fn set_ack_rewrites_only_the_ack() {
        let h = data(3);
        let mut d = datagram(&h, b"abc");
        set_ack(&mut d, 77);
        let (got, payload) = Header::decode(&d).unwrap();
        assert_eq!(got, Header { ack: 77, ..h });
        assert_eq!(payload, b"abc");
    }

    #[test]
    fn sequence_numbers_unwrap_across_the_32_bit_boundary() {
        assert_eq!(unwrap_seq(1, 1), Some(1));
        assert_eq!(unwrap_seq(10, 7), Some(7));
        assert_eq!(unwrap_seq(10, 70), Some(70));
        // Just before and after 2^32.
        let near = (1u64 << 32) - 3;
        assert_eq!(unwrap_seq(near, 2), Some((1 << 32) + 2));
        assert_eq!(unwrap_seq((1 << 32) + 2, u32::MAX), Some((1 << 32) - 1));
        // Far below zero is no sequence number.
        assert_eq!(unwrap_seq(1, u32::MAX - 5), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Header::decode(&bytes);
        }

        #[test]
        fn arbitrary_bytes_after_a_valid_prefix_never_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..(HEADER_LEN + 64)),
        ) {
            // Magic and version right, so decoding gets past the first checks.
            let mut bytes = vec![0x53, 0x4d, VERSION];
            bytes.extend_from_slice(&tail);
            if let Ok((h, payload)) = Header::decode(&bytes) {
                prop_assert_eq!(usize::from(h.len), payload.len());
            }
        }

        #[test]
        fn every_valid_data_header_round_trips(
            src in any::<u16>(), dst in any::<u16>(), seq in any::<u32>(), ack in any::<u32>(),
            count in 1u16.., index_frac in 0.0f64..1.0, len in 0usize..=MAX_FRAGMENT,
        ) {
            let frag_index = (f64::from(count) * index_frac) as u16 % count;
            let h = Header { kind: Kind::Data, src, dst, seq, ack, frag_index, frag_count: count, len: len as u16 };
            let payload = vec![0xa5; len];
            let d = datagram(&h, &payload);
            prop_assert_eq!(Header::decode(&d), Ok((h, &payload[..])));
        }
    }
}
