//! The one integration-test binary: every test spawns the real `pi-rpc` and talks to it over
//! pipes. One module per area.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod cli_flags;
mod compaction;
mod error_bodies;
mod export_html;
mod extension_events;
mod extensions;
mod faults;
mod foundation;
mod llm_anthropic;
mod llm_anthropic_federation;
mod llm_azure;
mod llm_bedrock;
mod llm_bedrock_chain;
mod llm_google;
mod llm_live;
mod llm_live_cloud;
mod llm_live_mistral_azure;
mod llm_mid_convo_system;
mod llm_mistral;
mod llm_openai_codex;
mod llm_openai_completions;
mod llm_openai_responses;
mod llm_pi_messages;
mod llm_vertex;
mod llm_vertex_adc;
mod locks;
mod mcp;
mod mcp_http;
mod mcp_modes;
mod mcp_npm;
mod mcp_results;
mod mock_llm_selftest;
mod node_host;
mod oauth;
mod oauth_login;
mod pi_acp;
mod print_modes;
mod properties;
mod properties_more;
mod providers;
mod regression;
mod rpc_bash;
mod run_abort;
mod run_images;
mod run_queues;
mod run_retry;
mod run_tools;
mod run_turns;
mod session_commands;
mod sessions;
mod system_prompt;
