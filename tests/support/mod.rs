//! Test support shared by the integration tests: a temp workspace, a driver that spawns the
//! real `pi-rpc` binary and talks to it over pipes, and what the tests of runs share (starting
//! a run against the scripted LLM server, reading its records, the processes it starts).

#![allow(dead_code)]

pub mod agent;
pub mod ext;
pub mod llm;
pub mod mcp;
pub mod mcp_http;
pub mod mock_llm;
pub mod node;
pub mod outside;
pub mod process;
pub mod raw_server;
pub mod records;
pub mod rng;
pub mod run;
pub mod tempdir;

pub use agent::Agent;
pub use tempdir::TempDir;
