//! Child processes and signals: the only module with `unsafe` (process groups, kill(2)).
//! `process` runs shell commands in their own process group (shared by the bash tool and the
//! RPC `bash` command in `bash`); `groups` is the registry of live process groups, killed on
//! shutdown; `signals` is the signal thread; `spawner` forks every child from one long-lived
//! thread with a parent-death signal, so children die with pi-rpc.

// The one module where `unsafe` is allowed (Cargo.toml's [lints] deny it elsewhere): setpgid,
// kill(2) and signal masks for child processes.
#![allow(unsafe_code)]

pub mod bash;
pub mod groups;
pub mod process;
pub mod signals;
pub mod spawner;
