//! pi-rpc: a headless coding agent that speaks the RPC protocol of the `pi` coding agent.
//!
//! The binary (`src/main.rs`) is a thin shell over this library. Modules are split by
//! concern, as `design.md` describes: wire types in [`protocol`], the RPC threads in [`rpc`],
//! models and providers in [`llm`], settings and discovered resources in [`resources`],
//! the session tree in [`session`], inline image normalization in [`image`].

// Unit tests may unwrap: a panic is how they fail (Cargo.toml's [lints] deny it elsewhere).
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod agent;
pub mod app;
pub mod cancel;
pub mod cli;
pub mod compaction;
pub mod exec;
pub(crate) mod exit;
pub mod export;
pub mod extensions;
pub mod image;
pub mod llm;
pub(crate) mod output;
pub mod print;
pub mod protocol;
pub mod resources;
pub mod rpc;
pub mod session;
pub mod tools;
pub(crate) mod truncate;
pub mod util;
