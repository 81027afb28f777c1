//! pi-rpc: a headless coding agent that speaks the RPC protocol of the `pi` coding agent.
//!
//! The binary (`src/main.rs`) is a thin shell over this library. `ARCHITECTURE.md` draws the
//! threads, channels, state owners and lock rules; every module's own doc goes into detail.
//!
//! Start-up and modes:
//! - [`cli`]: pi's command-line parser, ported; [`app`]: start-up, then RPC, print or export
//!   mode; `print`: the print modes (`-p`, `--mode json`); `exit`: ending the process (child
//!   process groups first); [`login`]: the `login` / `logout` subcommands.
//!
//! The RPC protocol:
//! - [`protocol`]: wire types only (commands, events, responses, response data, the messages
//!   pi-rpc creates, JSONL framing);
//! - `rpc`: the stdin reader, the command processor and the stdout writer threads;
//! - `output`: the handle every producer writes records through (bounded: backpressure).
//!
//! The agent:
//! - `agent`: the session state commands act on, the run life cycle (`agent::lifecycle`), the
//!   run loop, tool execution, the compaction runner, session replacement;
//! - [`llm`]: models, the registry, credentials, the provider wire APIs, error classification;
//! - `tools`: the built-in tools; `truncate`: output truncation shared by tools and RPC bash;
//!   `exec`: child processes, process groups, signals, the RPC bash runner;
//! - `compaction`: token estimates, cut points, summarization requests;
//! - [`session`]: the session file, its tree, the context projection, loading and migration;
//! - `resources`: settings, skills, prompt templates, context files, the system prompt;
//! - `extensions`: discovery of extension units (loading them is not built yet);
//! - [`image`]: inline image normalization; [`export`]: `export_html`.
//!
//! Shared: [`cancel`] (cancellation tokens: how aborts travel), [`util`] (time, paths), [`js`]
//! (what must print exactly as Node prints it: numbers, `JSON.stringify`, `JSON.parse` errors,
//! UTF-16 lengths, fs error texts).
//!
//! Modules are `pub(crate)` unless the integration tests, examples or the binary use them.

// Unit tests may unwrap: a panic is how they fail (Cargo.toml's [lints] deny it elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub(crate) mod agent;
pub mod app;
pub mod cancel;
pub mod cli;
pub(crate) mod compaction;
pub(crate) mod exec;
pub(crate) mod exit;
pub mod export;
pub(crate) mod extensions;
pub mod image;
pub mod js;
pub mod llm;
pub mod login;
pub(crate) mod mcp;
pub(crate) mod output;
pub(crate) mod print;
pub mod protocol;
pub(crate) mod resources;
pub(crate) mod rpc;
pub mod session;
#[cfg(test)]
pub(crate) mod test_rng;
pub(crate) mod tools;
pub(crate) mod truncate;
pub mod util;
