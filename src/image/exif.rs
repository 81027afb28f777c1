//! The EXIF orientation of a JPEG (APP1 `Exif`) or WebP (`EXIF` chunk), read the way pi's
//! `utils/exif-orientation.js` reads it: only the first IFD's tag 0x0112, and 1 (no transform)
//! for anything missing, malformed or out of range.

/// Byte `i` of `b`, 0 outside it (JavaScript reads `undefined`, which bit operations treat as 0).
fn at(b: &[u8], i: i64) -> u32 {
    usize::try_from(i)
        .ok()
        .and_then(|i| b.get(i))
        .map_or(0, |&v| u32::from(v))
}

fn has_exif_header(b: &[u8], offset: i64) -> bool {
    (0..6).all(|k| at(b, offset + k) == u32::from(b"Exif\0\0"[k as usize]))
        && offset + 6 <= b.len() as i64
}

fn orientation_from_tiff(b: &[u8], tiff_start: i64) -> u8 {
    let len = b.len() as i64;
    if tiff_start + 8 > len {
        return 1;
    }
    let le = ((at(b, tiff_start) << 8) | at(b, tiff_start + 1)) == 0x4949;
    let read16 = |pos: i64| -> u32 {
        if le {
            at(b, pos) | (at(b, pos + 1) << 8)
        } else {
            (at(b, pos) << 8) | at(b, pos + 1)
        }
    };
    // Little-endian offsets are signed 32-bit in pi (`<< 24` on a number); big-endian unsigned.
    let ifd_offset: i64 = if le {
        i64::from(
            (at(b, tiff_start + 4)
                | (at(b, tiff_start + 5) << 8)
                | (at(b, tiff_start + 6) << 16)
                | (at(b, tiff_start + 7) << 24)) as i32,
        )
    } else {
        i64::from(
            (at(b, tiff_start + 4) << 24)
                | (at(b, tiff_start + 5) << 16)
                | (at(b, tiff_start + 6) << 8)
                | at(b, tiff_start + 7),
        )
    };
    let ifd_start = tiff_start + ifd_offset;
    if ifd_start + 2 > len {
        return 1;
    }
    let entries = i64::from(read16(ifd_start));
    for i in 0..entries {
        let entry = ifd_start + 2 + i * 12;
        if entry + 12 > len {
            return 1;
        }
        if read16(entry) == 0x0112 {
            let value = read16(entry + 8);
            return if (1..=8).contains(&value) {
                value as u8
            } else {
                1
            };
        }
    }
    1
}

fn jpeg_tiff_offset(b: &[u8]) -> Option<i64> {
    let len = b.len() as i64;
    let mut offset = 2i64;
    while offset < len - 1 {
        if at(b, offset) != 0xff {
            return None;
        }
        let marker = at(b, offset + 1);
        if marker == 0xff {
            offset += 1;
            continue;
        }
        if marker == 0xe1 {
            if offset + 4 >= len {
                return None;
            }
            let segment_start = offset + 4;
            if segment_start + 6 > len {
                return None;
            }
            if has_exif_header(b, segment_start) {
                return Some(segment_start + 6);
            }
        }
        if offset + 4 > len {
            return None;
        }
        let length = i64::from((at(b, offset + 2) << 8) | at(b, offset + 3));
        offset += 2 + length;
    }
    None
}

fn webp_tiff_offset(b: &[u8]) -> Option<i64> {
    let len = b.len() as i64;
    let mut offset = 12i64;
    while offset + 8 <= len {
        let id = b.get(offset as usize..offset as usize + 4)?;
        let size = i64::from(
            (at(b, offset + 4)
                | (at(b, offset + 5) << 8)
                | (at(b, offset + 6) << 16)
                | (at(b, offset + 7) << 24)) as i32,
        );
        let data_start = offset + 8;
        if id == b"EXIF" {
            if data_start + size > len {
                return None;
            }
            let with_header = size >= 6 && has_exif_header(b, data_start);
            return Some(if with_header {
                data_start + 6
            } else {
                data_start
            });
        }
        // RIFF chunks are padded to an even size. (A negative size would loop forever in pi.)
        let next = data_start + size + size % 2;
        if next <= offset {
            return None;
        }
        offset = next;
    }
    None
}

/// The EXIF orientation (1–8) of JPEG or WebP bytes; 1 when there is none.
pub fn orientation(b: &[u8]) -> u8 {
    let tiff = if b.starts_with(&[0xff, 0xd8]) {
        jpeg_tiff_offset(b)
    } else if b.len() >= 12 && &b[0..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        webp_tiff_offset(b)
    } else {
        None
    };
    tiff.map_or(1, |t| orientation_from_tiff(b, t))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A TIFF block (`II` or `MM`) whose first IFD holds one orientation entry.
    pub(crate) fn tiff_with_orientation(little_endian: bool, value: u16) -> Vec<u8> {
        let u16b = |v: u16| {
            if little_endian {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let u32b = |v: u32| {
            if little_endian {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let mut t = Vec::new();
        t.extend_from_slice(if little_endian { b"II" } else { b"MM" });
        t.extend_from_slice(&u16b(42));
        t.extend_from_slice(&u32b(8));
        t.extend_from_slice(&u16b(1)); // one entry
        t.extend_from_slice(&u16b(0x0112));
        t.extend_from_slice(&u16b(3)); // SHORT
        t.extend_from_slice(&u32b(1));
        t.extend_from_slice(&u16b(value));
        t.extend_from_slice(&[0, 0]);
        t.extend_from_slice(&u32b(0)); // no next IFD
        t
    }

    /// JPEG bytes with an APP1 Exif segment inserted after SOI.
    pub(crate) fn jpeg_with_exif(jpeg: &[u8], tiff: &[u8]) -> Vec<u8> {
        let mut out = vec![0xff, 0xd8, 0xff, 0xe1];
        let len = (2 + 6 + tiff.len()) as u16;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(b"Exif\0\0");
        out.extend_from_slice(tiff);
        out.extend_from_slice(&jpeg[2..]);
        out
    }

    #[test]
    fn reads_jpeg_orientation_in_both_byte_orders() {
        let body = [0xff, 0xd8, 0xff, 0xdb, 0x00, 0x02, 0xff, 0xd9];
        assert_eq!(orientation(&body), 1);
        for le in [true, false] {
            for v in 1..=8 {
                let j = jpeg_with_exif(&body, &tiff_with_orientation(le, v));
                assert_eq!(orientation(&j), v as u8, "le {le} value {v}");
            }
            let j = jpeg_with_exif(&body, &tiff_with_orientation(le, 9));
            assert_eq!(orientation(&j), 1, "out of range");
        }
    }

    #[test]
    fn reads_webp_exif_chunk_with_and_without_header() {
        for header in [true, false] {
            let mut chunk = Vec::new();
            if header {
                chunk.extend_from_slice(b"Exif\0\0");
            }
            chunk.extend_from_slice(&tiff_with_orientation(true, 6));
            let mut w = b"RIFF\0\0\0\0WEBP".to_vec();
            w.extend_from_slice(b"VP8X");
            w.extend_from_slice(&10u32.to_le_bytes());
            w.extend_from_slice(&[0; 10]);
            w.extend_from_slice(b"EXIF");
            w.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
            w.extend_from_slice(&chunk);
            assert_eq!(orientation(&w), 6);
        }
    }

    #[test]
    fn malformed_input_means_no_transform() {
        assert_eq!(orientation(b""), 1);
        assert_eq!(orientation(&[0xff, 0xd8]), 1);
        assert_eq!(orientation(&[0xff, 0xd8, 0xff, 0xe1, 0x00]), 1);
        assert_eq!(orientation(b"\x89PNG\r\n\x1a\n"), 1);
        // A truncated IFD and a negative chunk size (which would hang pi) both give 1.
        let mut t = tiff_with_orientation(true, 6);
        t.truncate(14);
        assert_eq!(
            orientation(&jpeg_with_exif(&[0xff, 0xd8, 0xff, 0xd9], &t)),
            1
        );
        let mut w = b"RIFF\0\0\0\0WEBPJUNK".to_vec();
        w.extend_from_slice(&(-8i32).to_le_bytes());
        w.extend_from_slice(&[0; 8]);
        assert_eq!(orientation(&w), 1);
    }
}
