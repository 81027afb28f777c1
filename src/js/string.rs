//! JavaScript string semantics other than UTF-16 length and slicing ([`super::utf16`]): the
//! whitespace
//! `String.prototype.trim` and its relatives remove, and `Number(string)` skips.

/// JavaScript's whitespace and line terminators (what `String.prototype.trim`, `trimStart` and
/// `trimEnd` remove): tab, LF, VT, FF, CR, space, NBSP, U+1680, U+2000–U+200A, U+2028, U+2029,
/// U+202F, U+205F, U+3000 and U+FEFF. Unlike `char::is_whitespace`, not U+0085 but U+FEFF.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}
