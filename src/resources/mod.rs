//! Settings, and the resources discovered on disk: skills and prompt templates (and, later,
//! context files and the system prompt).

pub mod context_files;
pub mod frontmatter;
pub mod prompts;
pub mod settings;
pub mod skills;
pub mod system_prompt;

pub use settings::Settings;
