//! JavaScript fidelity: the one place that reproduces what Node and V8 print.
//!
//! pi is a Node program, so much of what it writes is produced by its runtime rather than by its
//! own code: numbers as V8's `Number::toString` lays them out, objects as `JSON.stringify`
//! prints them, the messages `JSON.parse` throws for malformed text, string lengths and slices
//! counted in UTF-16 code units, and the texts of Node's `fs` errors. Clients compare these
//! byte for byte, so this crate reproduces each of them here, once, and nowhere else:
//!
//! * [`number`]: `String(n)` / `JSON.stringify` number text, and `Number(string)`;
//! * `json`: `JSON.stringify` (compact and indented), V8's `JSON.parse` error messages and
//!   pi's JSON repair;
//! * `utf16`: string length, prefixes, suffixes and ordering in UTF-16 code units;
//! * `fs_error`: Node's `fs` error messages (`ENOENT: no such file or directory, open '…'`);
//! * `value`: JavaScript's view of a parsed JSON value (truthiness, template-literal text,
//!   `Object.entries` key order);
//! * `string`: the whitespace `String.prototype.trim` removes.
//!
//! Only [`number`] is public (`examples/bench_stream.rs` times its `JsNumberBuf`).

pub(crate) mod fs_error;
pub(crate) mod json;
pub mod number;
pub(crate) mod string;
pub(crate) mod utf16;
pub(crate) mod value;
