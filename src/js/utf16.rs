//! Strings as JavaScript measures them: in UTF-16 code units. A character outside the Basic
//! Multilingual Plane (an emoji, say) is one `char` in Rust but two units (a surrogate pair) in
//! JavaScript, so `"a😀".length` is 3. pi's limits and counts (`text.length`, `slice(0, n)`,
//! sorting with `<`) are all in these units; these helpers reproduce them on UTF-8 text without
//! converting it.
//!
//! Cutting a string where a limit falls inside a surrogate pair is the one place where the
//! copies this module replaced differed, and the difference is kept as two functions:
//! `prefix` leaves the pair out whole (pi's `sliceHead`, and where the exact cut does not
//! matter), `prefix_lossy` keeps its first half as Node would write it out (U+FFFD).

use std::borrow::Cow;
use std::cmp::Ordering;

/// `s.length` in JavaScript: the number of UTF-16 code units (a character outside the BMP
/// counts two).
pub(crate) fn len(s: &str) -> usize {
    // Every byte but a continuation byte (0b10xx_xxxx) starts a character, one unit; the lead
    // byte of a 4-byte sequence (0xF0 and up) starts a surrogate pair, one more.
    s.bytes()
        .map(|b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
        .sum()
}

/// The longest prefix of `s` of at most `max` UTF-16 code units that does not split a
/// character: a surrogate pair that would straddle the limit is left out whole (so the prefix
/// may be one unit short of `max`). `s` itself when it is no longer than `max`.
pub(crate) fn prefix(s: &str, max: usize) -> &str {
    let mut units = 0usize;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if units + w > max {
            return &s[..i];
        }
        units += w;
    }
    s
}

/// `s.slice(0, max)` as Node writes the result out as UTF-8: exactly the first `max` code
/// units, where a surrogate pair cut in half leaves its lone high surrogate, which becomes
/// U+FFFD (what `String::from_utf16_lossy` makes of the first `max` units). Borrowed when
/// nothing is cut or the cut falls between characters.
pub(crate) fn prefix_lossy(s: &str, max: usize) -> Cow<'_, str> {
    let head = prefix(s, max);
    if head.len() == s.len() || len(head) == max {
        return Cow::Borrowed(head);
    }
    // One unit short: the next character is a pair whose first half fits.
    let mut out = String::with_capacity(head.len() + 3);
    out.push_str(head);
    out.push(char::REPLACEMENT_CHARACTER);
    Cow::Owned(out)
}

/// The longest suffix of `s` of at most `max` UTF-16 code units that does not split a
/// character (a surrogate pair straddling the limit is left out whole).
pub(crate) fn suffix(s: &str, max: usize) -> &str {
    let mut units = 0usize;
    let mut start = s.len();
    for (i, c) in s.char_indices().rev() {
        units += c.len_utf16();
        if units > max {
            break;
        }
        start = i;
    }
    &s[start..]
}

/// JavaScript's string order (`a < b`, and `Array.prototype.sort` without a comparator): by
/// UTF-16 code units, which differs from Rust's `str` order (by code points) when a character
/// outside the BMP meets one in U+E000..U+FFFF.
pub(crate) fn cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Whether `s` holds a character outside the BMP, i.e. whether its JavaScript length differs
/// from its number of `char`s.
pub(crate) fn has_surrogate_pairs(s: &str) -> bool {
    s.bytes().any(|b| b >= 0xF0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings mixing 1-, 2-, 3- and 4-byte characters (the last are surrogate pairs).
    fn samples() -> Vec<String> {
        let pieces = [
            "a",
            "é",
            "€",
            "😀",
            "\u{ffff}",
            "\u{10000}",
            "\u{10ffff}",
            "\n",
        ];
        let mut out = vec![String::new()];
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..300 {
            let mut text = String::new();
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            for k in 0..(s % 9) {
                text.push_str(pieces[((s >> (5 * k + 4)) % 8) as usize]);
            }
            out.push(text);
        }
        out
    }

    #[test]
    fn length_counts_code_units() {
        assert_eq!(len(""), 0);
        assert_eq!(len("abc"), 3);
        assert_eq!(len("é€"), 2);
        assert_eq!(len("a😀"), 3);
        assert_eq!(len("\u{10ffff}\u{ffff}"), 3);
        for s in samples() {
            assert_eq!(len(&s), s.encode_utf16().count(), "{s:?}");
        }
    }

    #[test]
    fn prefix_keeps_surrogate_pairs_whole() {
        assert_eq!(prefix("abc", 5), "abc");
        assert_eq!(prefix("abc", 3), "abc");
        assert_eq!(prefix("abc", 2), "ab");
        assert_eq!(prefix("abc", 0), "");
        // 😀 is units 1..3: a limit of 2 would split it, so it is left out.
        assert_eq!(prefix("a😀b", 2), "a");
        assert_eq!(prefix("a😀b", 3), "a😀");
        assert_eq!(prefix("😀", 1), "");
        for s in samples() {
            for max in 0..=len(&s) + 1 {
                let p = prefix(&s, max);
                assert!(s.starts_with(p));
                let n = len(p);
                assert!(n <= max && n + 1 >= max.min(len(&s)), "{s:?} {max}");
            }
        }
    }

    #[test]
    fn lossy_prefix_cuts_at_the_unit() {
        assert_eq!(prefix_lossy("abc", 3), Cow::Borrowed("abc"));
        assert_eq!(prefix_lossy("a😀b", 2), "a\u{fffd}");
        assert_eq!(prefix_lossy("a😀b", 3), "a😀");
        assert!(matches!(prefix_lossy("a😀b", 1), Cow::Borrowed("a")));
        for s in samples() {
            let units: Vec<u16> = s.encode_utf16().collect();
            for max in 0..=units.len() {
                let want = String::from_utf16_lossy(&units[..max]);
                assert_eq!(prefix_lossy(&s, max), want, "{s:?} {max}");
            }
            assert_eq!(prefix_lossy(&s, units.len() + 1), s.as_str());
        }
    }

    #[test]
    fn suffix_keeps_surrogate_pairs_whole() {
        assert_eq!(suffix("abc", 5), "abc");
        assert_eq!(suffix("abc", 2), "bc");
        assert_eq!(suffix("abc", 0), "");
        assert_eq!(suffix("a😀b", 2), "b");
        assert_eq!(suffix("a😀b", 3), "😀b");
        for s in samples() {
            for max in 0..=len(&s) + 1 {
                let t = suffix(&s, max);
                assert!(s.ends_with(t));
                let n = len(t);
                assert!(n <= max && n + 1 >= max.min(len(&s)), "{s:?} {max}");
            }
        }
    }

    #[test]
    fn order_is_by_code_units() {
        // U+FFFF is above both halves of a surrogate pair: JavaScript sorts 😀 first.
        assert_eq!(cmp("😀", "\u{ffff}"), Ordering::Less);
        assert_eq!("😀".cmp("\u{ffff}"), Ordering::Greater);
        assert_eq!(cmp("a", "b"), Ordering::Less);
        assert_eq!(cmp("ab", "a"), Ordering::Greater);
        assert_eq!(cmp("é", "é"), Ordering::Equal);
    }

    #[test]
    fn surrogate_pairs_are_detected() {
        assert!(!has_surrogate_pairs("abc é € \u{ffff}"));
        assert!(has_surrogate_pairs("a😀"));
        for s in samples() {
            assert_eq!(has_surrogate_pairs(&s), len(&s) != s.chars().count());
        }
    }
}
