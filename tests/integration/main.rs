//! The one integration-test binary: every test spawns the real `pi-rpc` and talks to it over
//! pipes. One module per area.

#[path = "../support/mod.rs"]
mod support;

mod foundation;
mod llm_anthropic;
mod llm_google;
mod llm_openai_completions;
mod llm_openai_responses;
mod mock_llm_selftest;
mod sessions;
