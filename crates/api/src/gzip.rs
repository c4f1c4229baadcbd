//! Gzip as Fleet's fields carry it (Content manifests, `base64+gz` resources, Helm release
//! records), with one compression and one decompression state per thread, reset for each use.
//!
//! A fresh state is tens of KiB of tables and window (hundreds for compression), allocated,
//! zeroed and faulted in again for every value of a few KiB: an agent decoding a Content per
//! BundleDeployment spent most of the decode there.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

thread_local! {
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
    static INFLATE: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

/// Why gzip data could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GunzipError {
    /// Not gzip, or damaged (header, deflate data, CRC or length).
    #[error("corrupt gzip data: {0}")]
    Corrupt(String),
    /// The data ends before the gzip stream does.
    #[error("truncated gzip data")]
    Truncated,
}

/// `data` gzipped at the fastest level, with the header `flate2::write::GzEncoder` writes at that
/// level (no name, mtime 0, XFL 4, OS 255). Any level decodes the same, and the default level
/// was most of the cost of writing a Helm release record.
pub fn gzip_fast(data: &[u8]) -> std::io::Result<Vec<u8>> {
    DEFLATE.with_borrow_mut(|c| {
        c.reset();
        let mut out = Vec::with_capacity(data.len() / 2 + 64);
        out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
        loop {
            let done = usize::try_from(c.total_in()).unwrap_or(data.len());
            let status = c
                .compress_vec(
                    data.get(done..).unwrap_or_default(),
                    &mut out,
                    FlushCompress::Finish,
                )
                .map_err(std::io::Error::other)?;
            if status == Status::StreamEnd {
                break;
            }
            out.reserve(out.capacity().max(64));
        }
        let mut crc = flate2::Crc::new();
        crc.update(data);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        Ok(out)
    })
}

/// The bytes of the first gzip member of `data` (what `flate2::read::GzDecoder` reads), its
/// CRC and length checked. The gzip framing (RFC 1952) is read here around a raw deflate
/// state: a gzip-mode state of this flate2 backend is allocated anew on every reset.
pub fn gunzip(data: &[u8]) -> Result<Vec<u8>, GunzipError> {
    let body = data.get(header_len(data)?..).unwrap_or_default();
    INFLATE.with_borrow_mut(|d| {
        d.reset(false);
        let mut out = Vec::with_capacity(body.len().saturating_mul(4).clamp(64, 1 << 20));
        loop {
            let done = usize::try_from(d.total_in()).unwrap_or(body.len());
            let input = body.get(done..).unwrap_or_default();
            let before = (d.total_in(), d.total_out());
            let status = d
                .decompress_vec(input, &mut out, FlushDecompress::Finish)
                .map_err(|e| GunzipError::Corrupt(e.message().unwrap_or("invalid data").into()))?;
            if status == Status::StreamEnd {
                let end = usize::try_from(d.total_in()).unwrap_or(body.len());
                check_trailer(body.get(end..).unwrap_or_default(), &out)?;
                return Ok(out);
            }
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(64));
            } else if (d.total_in(), d.total_out()) == before {
                // Room to write and nothing consumed or produced: the input is used up.
                return Err(GunzipError::Truncated);
            }
        }
    })
}

/// Header flags (RFC 1952, 2.3.1).
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const FRESERVED: u8 = 0xe0;

/// The length of the gzip header at the start of `data`: the fixed ten bytes, then the optional
/// extra field, name, comment and header CRC its flags announce.
fn header_len(data: &[u8]) -> Result<usize, GunzipError> {
    let bad = |what: &str| GunzipError::Corrupt(format!("invalid gzip header: {what}"));
    let fixed = data.get(..10).ok_or(GunzipError::Truncated)?;
    let [id1, id2, method, flags, ..] = *fixed else {
        return Err(GunzipError::Truncated);
    };
    if (id1, id2) != (0x1f, 0x8b) {
        return Err(bad("not gzip"));
    }
    if method != 8 {
        return Err(bad("not deflate"));
    }
    if flags & FRESERVED != 0 {
        return Err(bad("reserved flags set"));
    }
    let mut pos = 10;
    if flags & FEXTRA != 0 {
        let xlen = data.get(pos..pos + 2).ok_or(GunzipError::Truncated)?;
        pos += 2 + usize::from(u16::from_le_bytes([xlen[0], xlen[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = data.get(pos..).ok_or(GunzipError::Truncated)?;
            let nul = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or(GunzipError::Truncated)?;
            pos += nul + 1;
        }
    }
    if flags & FHCRC != 0 {
        let header = data.get(..pos).ok_or(GunzipError::Truncated)?;
        let stored = data.get(pos..pos + 2).ok_or(GunzipError::Truncated)?;
        let mut crc = flate2::Crc::new();
        crc.update(header);
        if u16::from_le_bytes([stored[0], stored[1]]) != crc.sum() as u16 {
            return Err(bad("header CRC mismatch"));
        }
        pos += 2;
    }
    if pos > data.len() {
        return Err(GunzipError::Truncated);
    }
    Ok(pos)
}

/// Checks the CRC-32 and length (modulo 2^32) that follow the deflate data.
fn check_trailer(trailer: &[u8], out: &[u8]) -> Result<(), GunzipError> {
    let t = trailer.get(..8).ok_or(GunzipError::Truncated)?;
    let mut crc = flate2::Crc::new();
    crc.update(out);
    let stored_crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    let stored_len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
    if stored_crc != crc.sum() || stored_len != crc.amount() {
        return Err(GunzipError::Corrupt("CRC or length mismatch".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::{Read, Write};

    fn reference_gunzip(data: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .ok()?;
        Some(out)
    }

    #[test]
    fn gzip_is_read_back_by_gz_decoder_also_with_a_reused_state() {
        let big: String = (0..20_000).map(|i| format!("{i:x}-")).collect();
        for data in [&b""[..], b"x", br#"{"a":1}"#, big.as_bytes(), b"x"] {
            let gz = gzip_fast(data).unwrap();
            assert_eq!(&gz[..10], &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255]);
            assert_eq!(
                reference_gunzip(&gz).as_deref(),
                Some(data),
                "{} bytes",
                data.len()
            );
            assert_eq!(
                gzip_fast(data).unwrap(),
                gz,
                "the same bytes from a reused state"
            );
        }
    }

    #[test]
    fn reads_headers_with_name_comment_extra_and_crc() {
        let data = b"resources".repeat(100);
        let mut enc = flate2::GzBuilder::new()
            .filename("manifest.json")
            .comment("written by go")
            .extra(vec![1, 2, 3, 4])
            .mtime(1_700_000_000)
            .write(Vec::new(), Compression::best());
        enc.write_all(&data).unwrap();
        let gz = enc.finish().unwrap();
        assert_eq!(gunzip(&gz).unwrap(), data);
        // And again on the same thread's reused state.
        assert_eq!(gunzip(&gzip_fast(b"again").unwrap()).unwrap(), b"again");
    }

    #[test]
    fn checks_a_header_crc_and_refuses_reserved_flags() {
        let gz = gzip_fast(b"with a header crc").unwrap();
        let mut header = gz[..10].to_vec();
        header[3] |= FHCRC;
        let mut crc = flate2::Crc::new();
        crc.update(&header);
        let mut with_crc = header.clone();
        with_crc.extend_from_slice(&(crc.sum() as u16).to_le_bytes());
        with_crc.extend_from_slice(&gz[10..]);
        assert_eq!(
            reference_gunzip(&with_crc).as_deref(),
            Some(&b"with a header crc"[..])
        );
        assert_eq!(gunzip(&with_crc).unwrap(), b"with a header crc");
        let mut bad = with_crc.clone();
        bad[10] ^= 1;
        assert!(matches!(gunzip(&bad), Err(GunzipError::Corrupt(_))));
        assert_eq!(gunzip(&with_crc[..11]), Err(GunzipError::Truncated));
        let mut reserved = gz.clone();
        reserved[3] |= 0x20;
        assert!(matches!(gunzip(&reserved), Err(GunzipError::Corrupt(_))));
        assert_eq!(reference_gunzip(&reserved), None);
    }

    #[test]
    fn names_damage() {
        let gz = gzip_fast(&b"hello world, hello world".repeat(50)).unwrap();
        assert_eq!(gunzip(&gz[..gz.len() - 3]), Err(GunzipError::Truncated));
        assert_eq!(gunzip(&gz[..5]), Err(GunzipError::Truncated));
        assert_eq!(gunzip(b""), Err(GunzipError::Truncated));
        let mut bad_crc = gz.clone();
        let n = bad_crc.len();
        bad_crc[n - 6] ^= 0xff;
        assert!(matches!(gunzip(&bad_crc), Err(GunzipError::Corrupt(_))));
        assert!(matches!(
            gunzip(b"{\"plain\":\"json\"}"),
            Err(GunzipError::Corrupt(_))
        ));
        // The state is usable after an error.
        assert_eq!(gunzip(&gz).unwrap(), b"hello world, hello world".repeat(50));
    }

    proptest! {
        #[test]
        fn round_trips(data in proptest::collection::vec(any::<u8>(), 0..5000)) {
            prop_assert_eq!(gunzip(&gzip_fast(&data).unwrap()).unwrap(), data);
        }

        #[test]
        fn agrees_with_gz_decoder_on_any_bytes(
            data in proptest::collection::vec(any::<u8>(), 0..300),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
            bits in 1u8..=255,
        ) {
            // Arbitrary bytes, and valid gzip cut short or with one byte changed.
            let gz = gzip_fast(&data).unwrap();
            let mut flipped = gz.clone();
            let i = flip.index(flipped.len());
            flipped[i] ^= bits;
            for input in [&data[..], &gz[..cut.index(gz.len() + 1)], &flipped[..]] {
                let ours = gunzip(input).ok();
                prop_assert_eq!(ours, reference_gunzip(input));
            }
        }
    }
}
