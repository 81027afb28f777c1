//! pi's error patterns as JavaScript regexes (`/…/i`, without `u`), parsed ([`Pattern::new`]:
//! the subset pi uses) and translated once into the `regex` crate's syntax with JavaScript's
//! meaning kept (the parent module's docs list the differences), and matched within both ends
//! of a text ([`super::SCAN_WINDOW`]).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use regex::Regex;

use super::{SCAN_WINDOW, STAND_IN};
// ---------------------------------------------------------------------------------------------
// The patterns

/// JavaScript's `\s`: WhiteSpace (TAB, VT, FF, U+FEFF and the `Zs` spaces) and LineTerminator
/// (LF, CR, U+2028, U+2029), as `regex` class items.
pub(super) const JS_SPACE: &str = r"\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
/// The characters JavaScript's `.` does not match, as `regex` class items.
pub(super) const JS_LINE_TERMINATORS: &str = r"\x{A}\x{D}\x{2028}\x{2029}";
/// A class that matches nothing.
pub(super) const NEVER: &str = r"[^\x{0}-\x{10FFFF}]";

#[derive(Clone, Debug)]
pub(super) enum ClassItem {
    /// An ASCII character (either case of a letter).
    Char(char),
    /// An ASCII range (with the other case of the letters in it).
    Range(char, char),
    Digit,
    Word,
    Space,
    NotSpace,
}

#[derive(Clone, Debug)]
pub(super) enum Atom {
    /// Any character but a line terminator (`.`).
    Any,
    Class {
        items: Vec<ClassItem>,
        negated: bool,
    },
    Group(Vec<Vec<Item>>),
    Start,
    End,
    /// `(?<![…])` at the start of a top-level alternative: the previous character does not match.
    NotBehind(Box<Atom>),
    /// `(?![…])` at the end of a top-level alternative: the next character does not match.
    NotAhead(Box<Atom>),
}

#[derive(Clone, Debug)]
pub(super) struct Item {
    atom: Atom,
    min: usize,
    max: usize,
}

/// Which part of a text a translation searches: `^` and `$` keep meaning the start and the
/// end of the whole text, so they cannot match at the cut edge of a part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Whole = 0,
    /// The first bytes: `$` cannot match.
    Head = 1,
    /// The last bytes: `^` cannot match.
    Tail = 2,
}

/// A compiled case-insensitive JavaScript pattern of the supported subset.
#[derive(Clone, Debug)]
pub(super) struct Pattern {
    alts: Vec<Vec<Item>>,
    /// The translations, by [`Part`]; head and tail ones are compiled when first needed.
    regexes: [OnceLock<Option<Regex>>; 3],
}

impl Pattern {
    /// Compiles one JavaScript pattern; `None` for syntax outside the supported subset.
    #[cfg(test)]
    pub(super) fn new(src: &str) -> Option<Pattern> {
        Pattern::any(&[src])
    }

    /// Compiles several patterns as one (joined by `|`); `None` if one of them is outside the
    /// supported subset.
    pub fn any(srcs: &[&str]) -> Option<Pattern> {
        let mut alts = Vec::new();
        for src in srcs {
            let chars: Vec<char> = src.chars().collect();
            let mut p = Parser { s: &chars, i: 0 };
            let mut parsed = p.alternation()?;
            if p.i != chars.len() || !parsed.iter().all(|seq| lookarounds_at_edges(seq)) {
                return None;
            }
            alts.append(&mut parsed);
        }
        let pattern = Pattern {
            alts,
            regexes: Default::default(),
        };
        pattern.regex(Part::Whole)?;
        Some(pattern)
    }

    /// A pattern that matches nothing.
    pub(super) fn never() -> Pattern {
        Pattern {
            alts: vec![vec![Item {
                atom: Atom::Class {
                    items: Vec::new(),
                    negated: false,
                },
                min: 1,
                max: 1,
            }]],
            regexes: Default::default(),
        }
    }

    /// Whether the pattern matches in `text` as JavaScript's `test` would, looking at most at
    /// the first and the last [`SCAN_WINDOW`] bytes (see the module docs).
    pub fn is_match(&self, text: &str) -> bool {
        if text.len() <= 2 * SCAN_WINDOW {
            return self.search(Part::Whole, text);
        }
        let head_end = floor_char_boundary(text, SCAN_WINDOW);
        let tail_start = ceil_char_boundary(text, text.len() - SCAN_WINDOW);
        self.search(Part::Head, &text[..head_end]) || self.search(Part::Tail, &text[tail_start..])
    }

    fn search(&self, part: Part, text: &str) -> bool {
        self.regex(part)
            .is_some_and(|re| re.is_match(&utf16_units(text)))
    }

    pub(super) fn regex(&self, part: Part) -> Option<&Regex> {
        self.regexes[part as usize]
            .get_or_init(|| Regex::new(&translate(&self.alts, part)).ok())
            .as_ref()
    }
}

/// Look-arounds only as the first (`(?<!…)`) or last (`(?!…)`) item of a top-level
/// alternative, and not inside groups: where the translation to consuming groups is exact.
pub(super) fn lookarounds_at_edges(seq: &[Item]) -> bool {
    fn none_inside(alts: &[Vec<Item>]) -> bool {
        alts.iter().flatten().all(|item| match &item.atom {
            Atom::NotBehind(_) | Atom::NotAhead(_) => false,
            Atom::Group(inner) => none_inside(inner),
            _ => true,
        })
    }
    let last = seq.len().saturating_sub(1);
    seq.iter().enumerate().all(|(i, item)| match &item.atom {
        Atom::NotBehind(_) => i == 0,
        Atom::NotAhead(_) => i == last,
        Atom::Group(inner) => none_inside(inner),
        _ => true,
    })
}

/// `text` as JavaScript sees it, one character per UTF-16 code unit: each character outside
/// the BMP becomes two [`STAND_IN`]s. Borrowed when there is none (no 4-byte UTF-8 sequence).
pub(super) fn utf16_units(text: &str) -> Cow<'_, str> {
    if !crate::js::utf16::has_surrogate_pairs(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if u32::from(c) > 0xFFFF {
            out.push(STAND_IN);
            out.push(STAND_IN);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The largest char boundary at or before `i`.
pub(super) fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary at or after `i`.
pub(super) fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

// ---------------------------------------------------------------------------------------------
// Translation into the `regex` crate's syntax (no flags; every character written as `\x{…}`)

pub(super) fn translate(alts: &[Vec<Item>], part: Part) -> String {
    let mut out = String::new();
    write_alts(alts, part, &mut out);
    out
}

pub(super) fn write_alts(alts: &[Vec<Item>], part: Part, out: &mut String) {
    for (i, seq) in alts.iter().enumerate() {
        if i > 0 {
            out.push('|');
        }
        for item in seq {
            write_atom(&item.atom, part, out);
            out.push_str(match (item.min, item.max) {
                (0, 1) => "?",
                (0, _) => "*",
                (1, 1) => "",
                _ => "+",
            });
        }
    }
}

pub(super) fn write_atom(atom: &Atom, part: Part, out: &mut String) {
    let start = if part == Part::Tail { NEVER } else { r"\A" };
    let end = if part == Part::Head { NEVER } else { r"\z" };
    match atom {
        Atom::Any | Atom::Class { .. } => write_class(atom, false, out),
        Atom::Group(alts) => {
            out.push_str("(?:");
            write_alts(alts, part, out);
            out.push(')');
        }
        Atom::Start => out.push_str(start),
        Atom::End => out.push_str(end),
        Atom::NotBehind(inner) => {
            let _ = write!(out, "(?:{start}|");
            write_class(inner, true, out);
            out.push(')');
        }
        Atom::NotAhead(inner) => {
            out.push_str("(?:");
            write_class(inner, true, out);
            let _ = write!(out, "|{end})");
        }
    }
}

/// A one-character atom as a `regex` class; `invert` writes its complement.
pub(super) fn write_class(atom: &Atom, invert: bool, out: &mut String) {
    let (items, negated): (&[ClassItem], bool) = match atom {
        Atom::Any => {
            let _ = write!(
                out,
                "[{}{JS_LINE_TERMINATORS}]",
                if invert { "" } else { "^" }
            );
            return;
        }
        Atom::Class { items, negated } => (items, *negated),
        _ => {
            out.push_str(NEVER);
            return;
        }
    };
    let negated = negated != invert;
    if items.is_empty() {
        // `[]` matches nothing, `[^]` anything.
        out.push_str(if negated {
            r"[\x{0}-\x{10FFFF}]"
        } else {
            NEVER
        });
        return;
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    for item in items {
        match *item {
            ClassItem::Char(c) => {
                push_hex(out, c);
                if let Some(other) = other_case(c) {
                    push_hex(out, other);
                }
            }
            ClassItem::Range(lo, hi) => {
                push_range(out, lo, hi);
                // The other case of the letters in the range.
                for (a, z, shift) in [('a', 'z', -32i32), ('A', 'Z', 32)] {
                    let (l, h) = (lo.max(a), hi.min(z));
                    if l <= h {
                        push_range(out, shifted(l, shift), shifted(h, shift));
                    }
                }
            }
            ClassItem::Digit => push_range(out, '0', '9'),
            ClassItem::Word => {
                push_range(out, '0', '9');
                push_range(out, 'A', 'Z');
                push_hex(out, '_');
                push_range(out, 'a', 'z');
            }
            ClassItem::Space => out.push_str(JS_SPACE),
            ClassItem::NotSpace => {
                let _ = write!(out, "[^{JS_SPACE}]");
            }
        }
    }
    out.push(']');
}

pub(super) fn other_case(c: char) -> Option<char> {
    if c.is_ascii_lowercase() {
        Some(c.to_ascii_uppercase())
    } else if c.is_ascii_uppercase() {
        Some(c.to_ascii_lowercase())
    } else {
        None
    }
}

pub(super) fn shifted(c: char, by: i32) -> char {
    char::from_u32((c as i32 + by) as u32).unwrap_or(c)
}

pub(super) fn push_hex(out: &mut String, c: char) {
    let _ = write!(out, r"\x{{{:X}}}", u32::from(c));
}

pub(super) fn push_range(out: &mut String, lo: char, hi: char) {
    push_hex(out, lo);
    out.push('-');
    push_hex(out, hi);
}

// ---------------------------------------------------------------------------------------------
// The parser

pub(super) struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, lit: &str) -> bool {
        let n = lit.chars().count();
        if self.s.len() >= self.i + n && self.s[self.i..self.i + n].iter().copied().eq(lit.chars())
        {
            self.i += n;
            true
        } else {
            false
        }
    }

    fn alternation(&mut self) -> Option<Vec<Vec<Item>>> {
        let mut alts = vec![self.sequence()?];
        while self.eat('|') {
            alts.push(self.sequence()?);
        }
        Some(alts)
    }

    fn sequence(&mut self) -> Option<Vec<Item>> {
        let mut seq = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let (min, max) = match self.peek() {
                Some('?') => (0, 1),
                Some('*') => (0, usize::MAX),
                Some('+') => (1, usize::MAX),
                _ => (1, 1),
            };
            if (min, max) != (1, 1) {
                self.i += 1;
                if matches!(
                    atom,
                    Atom::Start | Atom::End | Atom::NotAhead(_) | Atom::NotBehind(_)
                ) {
                    return None;
                }
            }
            seq.push(Item { atom, min, max });
        }
        Some(seq)
    }

    fn atom(&mut self) -> Option<Atom> {
        let c = self.peek()?;
        self.i += 1;
        Some(match c {
            '.' => Atom::Any,
            '^' => Atom::Start,
            '$' => Atom::End,
            '[' => self.class()?,
            '(' => {
                if self.eat_str("?<!") {
                    let inner = self.single_char_atom()?;
                    if !self.eat(')') {
                        return None;
                    }
                    Atom::NotBehind(Box::new(inner))
                } else if self.eat_str("?!") {
                    let inner = self.single_char_atom()?;
                    if !self.eat(')') {
                        return None;
                    }
                    Atom::NotAhead(Box::new(inner))
                } else {
                    // `(?:…)` and capturing `(…)` match the same way here.
                    if !self.eat_str("?:") && self.peek() == Some('?') {
                        return None;
                    }
                    let alts = self.alternation()?;
                    if !self.eat(')') {
                        return None;
                    }
                    Atom::Group(alts)
                }
            }
            '\\' => {
                let e = self.peek()?;
                self.i += 1;
                Atom::Class {
                    items: vec![escape_item(e)?],
                    negated: false,
                }
            }
            ')' | '|' | '?' | '*' | '+' | '{' | '}' | ']' => return None,
            other => Atom::Class {
                items: vec![ascii(other)?],
                negated: false,
            },
        })
    }

    /// The content of a look-around: one class, escape or literal character.
    fn single_char_atom(&mut self) -> Option<Atom> {
        let a = self.atom()?;
        match a {
            Atom::Class { .. } | Atom::Any => Some(a),
            _ => None,
        }
    }

    fn class(&mut self) -> Option<Atom> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        loop {
            let c = self.peek()?;
            self.i += 1;
            if c == ']' {
                break;
            }
            let first = if c == '\\' {
                let e = self.peek()?;
                self.i += 1;
                escape_item(e)?
            } else {
                ascii(c)?
            };
            // A range `a-z` (a `-` before `]` is literal).
            if let ClassItem::Char(lo) = first {
                if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|&n| n != ']') {
                    self.i += 1;
                    let hi = self.peek()?;
                    self.i += 1;
                    if hi == '\\' || !hi.is_ascii() || hi < lo {
                        return None;
                    }
                    items.push(ClassItem::Range(lo, hi));
                    continue;
                }
            }
            items.push(first);
        }
        Some(Atom::Class { items, negated })
    }
}

/// A literal character: only ASCII ones are supported (case-insensitive matching of other
/// characters follows rules this file does not implement).
pub(super) fn ascii(c: char) -> Option<ClassItem> {
    c.is_ascii().then_some(ClassItem::Char(c))
}

pub(super) fn escape_item(e: char) -> Option<ClassItem> {
    Some(match e {
        'd' => ClassItem::Digit,
        'w' => ClassItem::Word,
        's' => ClassItem::Space,
        'S' => ClassItem::NotSpace,
        'n' => ClassItem::Char('\n'),
        't' => ClassItem::Char('\t'),
        'r' => ClassItem::Char('\r'),
        c if c.is_ascii_alphanumeric() => return None,
        c => ascii(c)?,
    })
}
