//! Test support shared by the integration tests: a temp workspace and a driver that spawns the
//! real `pi-rpc` binary and talks to it over pipes.

#![allow(dead_code)]

pub mod agent;
pub mod llm;
pub mod mock_llm;
pub mod outside;
pub mod tempdir;

pub use agent::Agent;
pub use tempdir::TempDir;
