//! Provider-neutral model types, the model registry (built-in catalog + `models.json`) and
//! credentials. The wire APIs (one file each) arrive with the providers issue.

pub mod auth;
pub mod model;
pub mod registry;
pub mod thinking;

pub use model::{Model, ModelCost};
pub use registry::ModelRegistry;
pub use thinking::ThinkingLevel;
pub mod anthropic;
pub mod convert;
pub mod drive;
pub mod errors;
#[cfg(test)]
mod golden;
pub mod google;
pub mod http;
pub mod openai_completions;
pub mod openai_responses;
pub mod request;
pub mod sse;
pub mod stream;
pub mod tool_args;
pub mod types;
