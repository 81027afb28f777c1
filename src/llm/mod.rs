//! Models and the providers' wire APIs: provider-neutral model types, the model registry
//! (built-in catalog + `models.json`), credentials, and one adapter per wire API.
//!
//! - [`wire::stream_assistant`]: the entry point; picks the adapter for `model.api`;
//! - `drive`: the one request/stream/cancel loop every adapter runs (`drive::WireApi`);
//! - one folder per wire API, each a request builder and an event state machine:
//!   `anthropic`, `openai_completions`, `openai_responses`, `google`, `mistral`,
//!   `azure_responses`, `bedrock`, `vertex`, `openai_codex`, `pi_messages`;
//! - [`stream`]: the adapters' shared toolkit (the streamed message, failures, token budgets);
//!   [`sse`], `http`, `request`: the transport; `tool_args`: streamed tool-call arguments;
//! - [`convert`]: the agent's messages as LLM messages; [`types`]: the LLM-side types;
//!   [`transcript`]: system messages kept in place for models that accept them
//!   mid-conversation (their renderings, and the split of tool declarations between the
//!   request's list and in-place changes);
//! - [`model`], [`registry`], [`auth`], [`thinking`]: models, the catalog, credentials,
//!   thinking levels;
//! - [`errors`]: pi's error classification (retryable, context overflow).

pub mod auth;
pub mod model;
pub mod oauth;
pub mod registry;
mod role;
pub mod thinking;

pub use model::{Model, ModelCost};
pub use registry::ModelRegistry;
pub(crate) use role::Role;
pub use thinking::ThinkingLevel;

/// Frees a session's provider state (pi's `cleanupSessionResources`, run when a session is
/// replaced): Anthropic message threads and strict-tool limits.
pub fn cleanup_session_resources(session_id: &str) {
    anthropic::cleanup_session_resources(session_id);
}
pub(crate) mod anthropic;
pub(crate) mod azure_responses;
pub(crate) mod bedrock;
pub mod convert;
pub(crate) mod drive;
pub mod errors;
#[cfg(test)]
mod golden;
pub(crate) mod google;
pub(crate) mod http;
pub(crate) mod mistral;
pub(crate) mod openai_codex;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;
pub(crate) mod pi_messages;
#[cfg(test)]
mod prop_tests;
pub(crate) mod request;
pub(crate) mod specials;
pub mod sse;
pub mod stream;
pub(crate) mod strict_schema;
pub(crate) mod tool_args;
pub mod transcript;
pub mod types;
pub(crate) mod vertex;
pub mod wire;
