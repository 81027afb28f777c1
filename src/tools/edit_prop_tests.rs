//! Property tests of the edit tool's matcher (issue 17, "keep them out"): random file contents
//! (Unicode, NFKC-foldable characters, curly quotes and dashes, special spaces, trailing
//! whitespace, LF / CRLF / CR / mixed line ends, a BOM, no final newline, invalid UTF-8 on
//! disk) and random edit lists (none, exact pieces of the file, fuzzy variants of them,
//! overlapping, duplicated, empty, absent, whole-file), through
//! `apply_edits_to_normalized_content`, `apply_replacements_to_original` and, for a share of
//! the cases, the whole tool on a temp file. For every case:
//!
//! - nothing panics; an error is one of the tool's own texts;
//! - a success is consistent: the replacements are sorted, disjoint, inside the content and on
//!   character boundaries, and `new_content` is the content with them applied (and differs);
//! - when every `oldText` occurs exactly in the file (no fuzzy matching): one replacement per
//!   edit at the first exact occurrence, the length is the content's plus the sum of
//!   `len(newText) - len(oldText)`, every `newText` is in the output, and applying the edits
//!   backwards (newText → oldText) gives the original back, or fails only because a fuzzy-
//!   normalized `newText` is not unique;
//! - with fuzzy matching, the replacements are whole lines (untouched lines keep their bytes);
//! - mapped back onto the original line ends, the result normalizes to `new_content`, and a
//!   CRLF-only file stays CRLF-only;
//! - through the tool: the file keeps its BOM, its content is the mapped result, and a failed
//!   edit leaves the file as it was.
//!
//! `PI_RPC_PROPERTY_CASES` sets the number of cases (default 5000, what CI runs: about a second
//! in a debug build); `PI_RPC_PROPERTY_SEED` replays another seed. A longer run:
//! `PI_RPC_PROPERTY_CASES=200000 cargo test --lib tools::edit_prop_tests -- --nocapture`.

use serde_json::{json, Value};

use super::edit::{
    apply_edits_to_normalized_content, apply_replacements_to_original, normalize_to_lf, split_bom,
    Edit, EditTool,
};
use super::Tool;
use crate::cancel::CancelToken;
use crate::tools::args::test_support::{temp_dir, tool_context};

use crate::test_rng::{seed, Rng};

fn cases() -> usize {
    crate::test_rng::cases(5000)
}

/// Words of a line: few distinct ones, so pieces repeat (uniqueness matters to the matcher).
const WORDS: &[&str] = &[
    "a",
    "b",
    "fn",
    "let x = 1;",
    "é",
    "e\u{301}",
    "\u{fb01}ne",
    "fine",
    "\u{2018}q\u{2019}",
    "'q'",
    "\u{201c}dq\u{201d}",
    "\"dq\"",
    "\u{2014}",
    "-",
    "\u{2212}",
    "\u{ff21}",
    "A",
    "日本",
    "😀",
    "\u{3000}",
    "\u{a0}",
    "\t",
    " ",
    "  ",
    "\u{feff}",
    "\u{2028}",
    "½",
    "x\u{0}",
    "\u{fffd}",
];

/// Trailing whitespace a line may end with.
const TRAILING: &[&str] = &["", "", "", " ", "  ", "\t", "\u{a0}", "\u{3000}", " \t "];

/// A file's text (before line ends are chosen): lines joined with `\n`.
fn random_lines(rng: &mut Rng) -> Vec<String> {
    let unique = rng.chance(2);
    (0..rng.below(8))
        .map(|i| {
            let mut line = String::new();
            if unique {
                // Most lines of real files differ somewhere.
                line.push_str(&format!("L{i} "));
            }
            for _ in 0..rng.below(5) {
                line.push_str(rng.pick::<&str>(WORDS));
            }
            line.push_str(rng.pick::<&str>(TRAILING));
            line
        })
        .collect()
}

/// The file: lines with LF, CRLF, CR or mixed line ends, maybe a BOM, maybe no final newline.
fn random_file(rng: &mut Rng) -> String {
    let lines = random_lines(rng);
    let style = rng.below(4);
    let mut out = String::new();
    if rng.chance(5) {
        out.push('\u{feff}');
    }
    let final_newline = rng.below(3) != 0;
    for (i, line) in lines.iter().enumerate() {
        out.push_str(line);
        if i + 1 < lines.len() || final_newline {
            out.push_str(match style {
                0 => "\n",
                1 => "\r\n",
                2 => "\r",
                _ => ["\n", "\r\n", "\r"][rng.below(3)],
            });
        }
    }
    out
}

/// Character boundaries of `s`, end included.
fn boundaries(s: &str) -> Vec<usize> {
    s.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .collect()
}

/// A piece of `s` at character boundaries (maybe empty).
fn random_slice<'s>(rng: &mut Rng, s: &'s str) -> &'s str {
    let b = boundaries(s);
    let i = rng.below(b.len());
    let j = (i + 1 + rng.below(24)).min(b.len() - 1);
    &s[b[i]..b[j]]
}

fn random_new_text(rng: &mut Rng) -> String {
    match rng.below(6) {
        0 => String::new(),
        1 => "\n".into(),
        2 => "X\r\nY".into(),
        _ => {
            let mut s = String::new();
            for _ in 0..1 + rng.below(3) {
                s.push_str(rng.pick::<&str>(WORDS));
                if rng.chance(3) {
                    s.push('\n');
                }
            }
            s
        }
    }
}

/// The variants of a piece fuzzy matching should still find.
fn fuzzy_variant(rng: &mut Rng, s: &str) -> String {
    match rng.below(6) {
        0 => s
            .replace(['\u{2018}', '\u{2019}'], "'")
            .replace(['\u{201c}', '\u{201d}'], "\""),
        1 => s.replace(['\u{2014}', '\u{2212}'], "-"),
        2 => s.replace('\u{fb01}', "fi").replace('\u{ff21}', "A"),
        3 => s.replace('\n', "   \n"),
        4 => s.replace('\n', "\r\n"),
        _ => s.replace(['\u{a0}', '\u{3000}'], " "),
    }
}

/// One or more whole lines of `normalized` as a model would quote them: trailing whitespace
/// dropped, typographic characters typed as ASCII.
fn retyped_lines(rng: &mut Rng, normalized: &str) -> String {
    let lines: Vec<&str> = normalized.split('\n').collect();
    let i = rng.below(lines.len());
    let j = (i + 1 + rng.below(3)).min(lines.len());
    let mut s = lines[i..j]
        .iter()
        .map(|l| l.trim_end_matches([' ', '\t', '\u{a0}', '\u{3000}']))
        .collect::<Vec<_>>()
        .join("\n");
    for _ in 0..rng.below(3) {
        s = fuzzy_variant(rng, &s);
    }
    s
}

fn random_edits(rng: &mut Rng, normalized: &str) -> Vec<Edit> {
    let n = *rng.pick(&[0, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4]);
    let mut edits: Vec<Edit> = Vec::new();
    for _ in 0..n {
        let old_text = match rng.below(12) {
            0 => String::new(),
            10 | 11 => retyped_lines(rng, normalized),
            1 => random_new_text(rng),
            2 => normalized.to_string(),
            3 | 4 => {
                let piece = random_slice(rng, normalized);
                fuzzy_variant(rng, piece)
            }
            5 if !edits.is_empty() => {
                // The same text as another edit, or one overlapping it.
                let other = rng.pick(&edits).old_text.clone();
                if rng.chance(2) {
                    other
                } else {
                    let b = boundaries(&other);
                    other[b[b.len() / 2]..].to_string()
                }
            }
            _ => random_slice(rng, normalized).to_string(),
        };
        edits.push(Edit {
            old_text,
            new_text: random_new_text(rng),
        });
    }
    edits
}

/// Occurrences of `needle` in `hay` at every character boundary (overlapping ones counted).
fn count_overlapping(hay: &str, needle: &str) -> usize {
    hay.char_indices()
        .filter(|(i, _)| hay[*i..].starts_with(needle))
        .count()
}

const ERROR_STARTS: &[&str] = &[
    "oldText must not be empty in ",
    "edits[",
    "Could not find ",
    "Found ",
    "No changes made to ",
    "Cannot preserve unchanged lines",
    "Replacement range is outside",
];

fn is_tool_error(e: &str) -> bool {
    ERROR_STARTS.iter().any(|s| e.starts_with(s))
}

/// What the cases exercised.
#[derive(Debug, Default)]
struct Tally {
    refused: usize,
    exact: usize,
    fuzzy: usize,
    backwards: usize,
    crlf_or_cr: usize,
    through_tool: usize,
}

/// Checks one case; `Err` describes the broken property.
fn check_case(
    rng: &mut Rng,
    file: &str,
    edits: &[Edit],
    through_tool: bool,
    tally: &mut Tally,
) -> Result<(), String> {
    let (bom, content) = split_bom(file);
    let normalized = normalize_to_lf(content);
    let result = apply_edits_to_normalized_content(&normalized, edits, "f.txt");
    let applied = match &result {
        Err(e) if is_tool_error(e) => {
            tally.refused += 1;
            None
        }
        Err(e) => return Err(format!("unexpected error text {e:?}")),
        Ok(a) => Some(a),
    };
    if let Some(applied) = applied {
        let reps = &applied.replacements;
        let mut end = 0;
        for r in reps {
            let stop = r.match_index + r.match_length;
            if r.match_index < end
                || stop > normalized.len()
                || !normalized.is_char_boundary(r.match_index)
                || !normalized.is_char_boundary(stop)
            {
                return Err(format!("bad replacements {reps:?}"));
            }
            end = stop;
        }
        let mut spliced = normalized.clone();
        for r in reps.iter().rev() {
            spliced.replace_range(r.match_index..r.match_index + r.match_length, &r.new_text);
        }
        if spliced != applied.new_content {
            return Err(format!(
                "new_content {:?} is not the replacements applied: {spliced:?}",
                applied.new_content
            ));
        }
        if applied.new_content == normalized {
            return Err("a success that changed nothing".into());
        }
        let lf: Vec<Edit> = edits
            .iter()
            .map(|e| Edit {
                old_text: normalize_to_lf(&e.old_text),
                new_text: normalize_to_lf(&e.new_text),
            })
            .collect();
        let exact = lf.iter().all(|e| normalized.contains(e.old_text.as_str()));
        if exact {
            tally.exact += 1;
            if check_exact(&normalized, &lf, applied)? {
                tally.backwards += 1;
            }
        } else {
            tally.fuzzy += 1;
            // Fuzzy: whole lines are replaced, the others keep their text.
            for r in reps {
                let stop = r.match_index + r.match_length;
                let starts_line =
                    r.match_index == 0 || normalized.as_bytes()[r.match_index - 1] == b'\n';
                let ends_line =
                    stop == normalized.len() || normalized.as_bytes()[stop - 1] == b'\n';
                if !starts_line || !ends_line {
                    return Err(format!("fuzzy replacement not on whole lines: {r:?}"));
                }
            }
        }
        if content != normalized {
            tally.crlf_or_cr += 1;
            let mapped = apply_replacements_to_original(content, reps);
            if normalize_to_lf(&mapped) != applied.new_content {
                return Err(format!(
                    "mapped onto the original line ends: {mapped:?}, which normalizes to {:?}, not {:?}",
                    normalize_to_lf(&mapped),
                    applied.new_content
                ));
            }
            let crlf_only = content.matches('\n').count() == content.matches("\r\n").count()
                && content.matches('\r').count() == content.matches("\r\n").count();
            let mapped_crlf_only = mapped.matches('\n').count() == mapped.matches("\r\n").count()
                && mapped.matches('\r').count() == mapped.matches("\r\n").count();
            if crlf_only && !mapped_crlf_only {
                return Err(format!("a CRLF file got other line ends: {mapped:?}"));
            }
        }
    }
    if through_tool {
        tally.through_tool += 1;
        check_tool(rng, bom, content, &normalized, edits, &result)?;
    }
    Ok(())
}

/// The properties of an all-exact success; `Ok(true)` when the backwards edit was checked.
fn check_exact(
    normalized: &str,
    lf: &[Edit],
    applied: &super::edit::Applied,
) -> Result<bool, String> {
    let reps = &applied.replacements;
    if reps.len() != lf.len() {
        return Err(format!("{} edits, {} replacements", lf.len(), reps.len()));
    }
    for e in lf {
        let at = normalized.find(e.old_text.as_str());
        let matched = reps.iter().any(|r| {
            Some(r.match_index) == at
                && r.match_length == e.old_text.len()
                && r.new_text == e.new_text
        });
        if !matched {
            return Err(format!(
                "no replacement at the exact match of {e:?}: {reps:?}"
            ));
        }
    }
    let expected_len = lf.iter().fold(normalized.len() as isize, |n, e| {
        n + e.new_text.len() as isize - e.old_text.len() as isize
    });
    if applied.new_content.len() as isize != expected_len {
        return Err(format!(
            "length {} instead of {expected_len}",
            applied.new_content.len()
        ));
    }
    for e in lf {
        if !applied.new_content.contains(e.new_text.as_str()) {
            return Err(format!("newText {:?} not in the output", e.new_text));
        }
    }
    // Backwards: well-defined when every newText is non-empty and occurs exactly once.
    let out = &applied.new_content;
    if lf
        .iter()
        .all(|e| !e.new_text.is_empty() && count_overlapping(out, &e.new_text) == 1)
    {
        let back: Vec<Edit> = lf
            .iter()
            .map(|e| Edit {
                old_text: e.new_text.clone(),
                new_text: e.old_text.clone(),
            })
            .collect();
        match apply_edits_to_normalized_content(out, &back, "f.txt") {
            Ok(b) if b.new_content == normalized => {}
            Ok(b) => {
                return Err(format!(
                    "backwards gave {:?}, not the original",
                    b.new_content
                ))
            }
            // Uniqueness is counted on fuzzy-normalized text (pi's rule), exact matching found it.
            Err(e) if e.starts_with("Found ") => {}
            Err(e) => return Err(format!("backwards failed: {e}")),
        }
        return Ok(true);
    }
    Ok(false)
}

/// The whole tool on a temp file holding `bom + content`.
fn check_tool(
    rng: &mut Rng,
    bom: &str,
    content: &str,
    normalized: &str,
    edits: &[Edit],
    direct: &Result<super::edit::Applied, String>,
) -> Result<(), String> {
    let dir = temp_dir("edit-prop");
    let path = dir.join("f.txt");
    let original = format!("{bom}{content}");
    // U+FFFD stands for invalid UTF-8 on disk (the tool reads the file lossily, as Node does):
    // half of the time the file gets a lone continuation byte there instead.
    let raw: Vec<u8> = if rng.chance(2) {
        let pieces: Vec<&[u8]> = original.split('\u{fffd}').map(str::as_bytes).collect();
        pieces.join(&0x80u8)
    } else {
        original.clone().into_bytes()
    };
    std::fs::write(&path, &raw).map_err(|e| e.to_string())?;
    let cancel = CancelToken::new();
    let ctx = tool_context(&dir, &cancel, false, "m");
    let mut args = json!({
        "path": "f.txt",
        "edits": edits.iter().map(|e| json!({"oldText": e.old_text, "newText": e.new_text})).collect::<Vec<Value>>(),
    });
    if rng.chance(4) {
        // As a JSON string, as some models send it.
        args["edits"] = json!(args["edits"].to_string());
    }
    let prepared = EditTool.prepare_arguments(&mut args);
    let out = EditTool.execute(&prepared, &ctx, &mut |_| {});
    let after_raw = std::fs::read(&path).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    let after_raw = after_raw?;
    let after = String::from_utf8_lossy(&after_raw).into_owned();
    match (out, direct) {
        (Ok(_), Ok(applied)) => {
            let expected_body = if content == normalized {
                applied.new_content.clone()
            } else {
                apply_replacements_to_original(content, &applied.replacements)
            };
            if after_raw != format!("{bom}{expected_body}").into_bytes() {
                return Err(format!("the file holds {after:?}"));
            }
            Ok(())
        }
        (Err(e), _) if edits.is_empty() => {
            if e != "Edit tool input is invalid. edits must contain at least one replacement."
                || after_raw != raw
            {
                return Err(format!("no edits: {e:?}, the file holds {after:?}"));
            }
            Ok(())
        }
        (Err(e), Err(d)) if &e == d => {
            if after_raw != raw {
                return Err(format!("a failed edit changed the file to {after:?}"));
            }
            Ok(())
        }
        (out, direct) => Err(format!(
            "the tool and the matcher disagree: {:?} vs {direct:?}",
            out.map(|o| o.content)
        )),
    }
}

fn run_property(seed: u64, cases: usize) -> Result<Tally, String> {
    let mut rng = Rng::new(seed, 17);
    let mut tally = Tally::default();
    for case in 0..cases {
        let file = random_file(&mut rng);
        let normalized = normalize_to_lf(split_bom(&file).1);
        let edits = random_edits(&mut rng, &normalized);
        let through_tool = rng.chance(4);
        let mut case_rng = Rng::new(rng.next(), 1);
        let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check_case(&mut case_rng, &file, &edits, through_tool, &mut tally)
        }));
        let verdict = match checked {
            Ok(v) => v,
            Err(panic) => Err(format!(
                "panicked: {}",
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_string()))
                    .unwrap_or_default()
            )),
        };
        if let Err(e) = verdict {
            return Err(format!(
                "case {case} (seed {seed}, through the tool: {through_tool}): {e}\n  file {file:?}\n  edits {edits:?}"
            ));
        }
    }
    Ok(tally)
}

#[test]
fn edit_matcher_properties() {
    let started = std::time::Instant::now();
    let n = cases();
    match run_property(seed(), n) {
        Ok(t) => eprintln!("edit matcher: {n} cases in {:?}: {t:?}", started.elapsed()),
        Err(e) => panic!("{e}"),
    }
}
