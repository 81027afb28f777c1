//! Commands read from stdin (`rpc-protocol.md` §3) and their validation. A line becomes an
//! [`Incoming`]: a well-formed command, a known command with bad fields, an unknown command, a
//! value that is not a command at all, or an `extension_ui_response`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::llm::ThinkingLevel;
use crate::resources::settings::QueueMode;

/// `{"type":"image","data":<base64>,"mimeType":<string>}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageContent {
    #[serde(rename = "type")]
    pub kind: String,
    pub data: String,
    #[serde(rename = "mimeType")]
    pub mime_type: String,
}

/// `prompt.streamingBehavior`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamingBehavior {
    Steer,
    FollowUp,
}

/// Every command of the protocol, with its validated fields.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Prompt {
        message: String,
        images: Vec<ImageContent>,
        streaming_behavior: Option<StreamingBehavior>,
    },
    Steer {
        message: String,
        images: Vec<ImageContent>,
    },
    FollowUp {
        message: String,
        images: Vec<ImageContent>,
    },
    Abort,
    ClearQueue,
    NewSession {
        parent_session: Option<String>,
    },
    GetState,
    GetMessages,
    SetModel {
        provider: String,
        model_id: String,
    },
    CycleModel,
    GetAvailableModels,
    SetThinkingLevel {
        level: ThinkingLevel,
    },
    CycleThinkingLevel,
    GetAvailableThinkingLevels,
    SetSteeringMode {
        mode: QueueMode,
    },
    SetFollowUpMode {
        mode: QueueMode,
    },
    Compact {
        custom_instructions: Option<String>,
    },
    SetAutoCompaction {
        enabled: bool,
    },
    SetAutoRetry {
        enabled: bool,
    },
    AbortRetry,
    Bash {
        command: String,
        exclude_from_context: bool,
    },
    AbortBash,
    GetSessionStats,
    ExportHtml {
        output_path: Option<String>,
    },
    SwitchSession {
        session_path: String,
    },
    Fork {
        entry_id: String,
    },
    Clone,
    GetForkMessages,
    GetEntries {
        since: Option<String>,
    },
    GetTree,
    GetLastAssistantText,
    SetSessionName {
        name: String,
    },
    GetCommands,
}

/// All command type names, in the order of `rpc-protocol.md` §4.
pub const COMMAND_NAMES: [&str; 33] = [
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "new_session",
    "get_state",
    "get_messages",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_entries",
    "get_tree",
    "get_last_assistant_text",
    "set_session_name",
    "get_commands",
];

impl Command {
    /// The wire `type` of this command.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Prompt { .. } => "prompt",
            Command::Steer { .. } => "steer",
            Command::FollowUp { .. } => "follow_up",
            Command::Abort => "abort",
            Command::ClearQueue => "clear_queue",
            Command::NewSession { .. } => "new_session",
            Command::GetState => "get_state",
            Command::GetMessages => "get_messages",
            Command::SetModel { .. } => "set_model",
            Command::CycleModel => "cycle_model",
            Command::GetAvailableModels => "get_available_models",
            Command::SetThinkingLevel { .. } => "set_thinking_level",
            Command::CycleThinkingLevel => "cycle_thinking_level",
            Command::GetAvailableThinkingLevels => "get_available_thinking_levels",
            Command::SetSteeringMode { .. } => "set_steering_mode",
            Command::SetFollowUpMode { .. } => "set_follow_up_mode",
            Command::Compact { .. } => "compact",
            Command::SetAutoCompaction { .. } => "set_auto_compaction",
            Command::SetAutoRetry { .. } => "set_auto_retry",
            Command::AbortRetry => "abort_retry",
            Command::Bash { .. } => "bash",
            Command::AbortBash => "abort_bash",
            Command::GetSessionStats => "get_session_stats",
            Command::ExportHtml { .. } => "export_html",
            Command::SwitchSession { .. } => "switch_session",
            Command::Fork { .. } => "fork",
            Command::Clone => "clone",
            Command::GetForkMessages => "get_fork_messages",
            Command::GetEntries { .. } => "get_entries",
            Command::GetTree => "get_tree",
            Command::GetLastAssistantText => "get_last_assistant_text",
            Command::SetSessionName { .. } => "set_session_name",
            Command::GetCommands => "get_commands",
        }
    }
}

/// An `extension_ui_response` line (`rpc-protocol.md` §8); it gets no response record.
#[derive(Clone, Debug, PartialEq)]
pub struct UiResponse {
    pub id: String,
    pub value: Option<String>,
    pub confirmed: Option<bool>,
    pub cancelled: bool,
}

/// What one input line turned out to be.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    Command {
        id: Option<Value>,
        command: Command,
    },
    /// A known command whose fields are missing or of the wrong type.
    Invalid {
        id: Option<Value>,
        command: &'static str,
        error: CommandError,
    },
    /// A string `type` that names no command.
    Unknown {
        id: Option<Value>,
        type_name: String,
    },
    /// Not a command object at all (non-object, no string `type`): answered as a parse error.
    NotACommand {
        id: Option<Value>,
        error: String,
    },
    UiResponse(UiResponse),
}

/// Why a known command's fields were rejected. The `Display` text is the response's `error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandError {
    Missing {
        field: &'static str,
        expected: &'static str,
    },
    WrongType {
        field: &'static str,
        expected: &'static str,
        got: &'static str,
    },
    BadValue {
        field: &'static str,
        message: String,
    },
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Missing { field, expected } => {
                write!(f, "Missing required field \"{field}\" ({expected})")
            }
            CommandError::WrongType {
                field,
                expected,
                got,
            } => write!(
                f,
                "Invalid field \"{field}\": expected {expected}, got {got}"
            ),
            CommandError::BadValue { field, message } => {
                write!(f, "Invalid field \"{field}\": {message}")
            }
        }
    }
}

impl std::error::Error for CommandError {}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn req_str(&self, field: &'static str) -> Result<String, CommandError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Err(CommandError::Missing {
                field,
                expected: "a string",
            }),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(CommandError::WrongType {
                field,
                expected: "a string",
                got: type_name(other),
            }),
        }
    }

    fn opt_str(&self, field: &'static str) -> Result<Option<String>, CommandError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(CommandError::WrongType {
                field,
                expected: "a string",
                got: type_name(other),
            }),
        }
    }

    fn req_bool(&self, field: &'static str) -> Result<bool, CommandError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Err(CommandError::Missing {
                field,
                expected: "true or false",
            }),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(CommandError::WrongType {
                field,
                expected: "true or false",
                got: type_name(other),
            }),
        }
    }

    fn opt_bool(&self, field: &'static str) -> Result<bool, CommandError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(CommandError::WrongType {
                field,
                expected: "true or false",
                got: type_name(other),
            }),
        }
    }

    fn images(&self) -> Result<Vec<ImageContent>, CommandError> {
        let list = match self.0.get("images") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(a)) => a,
            Some(other) => {
                return Err(CommandError::WrongType {
                    field: "images",
                    expected: "an array of image objects",
                    got: type_name(other),
                })
            }
        };
        let mut out = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let bad = |message: String| CommandError::BadValue {
                field: "images",
                message,
            };
            let obj = item.as_object().ok_or_else(|| {
                bad(format!(
                    "images[{i}] must be an object {{\"type\":\"image\",\"data\",\"mimeType\"}}, got {}",
                    type_name(item)
                ))
            })?;
            if obj.get("type").and_then(Value::as_str) != Some("image") {
                return Err(bad(format!("images[{i}].type must be \"image\"")));
            }
            let data = obj
                .get("data")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("images[{i}].data must be a base64 string")))?;
            let mime = obj
                .get("mimeType")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("images[{i}].mimeType must be a string")))?;
            out.push(ImageContent {
                kind: "image".into(),
                data: data.to_string(),
                mime_type: mime.to_string(),
            });
        }
        Ok(out)
    }

    fn thinking_level(&self) -> Result<ThinkingLevel, CommandError> {
        const EXPECTED: &str = "one of off, minimal, low, medium, high, xhigh, max";
        match self.0.get("level") {
            None | Some(Value::Null) => Err(CommandError::Missing {
                field: "level",
                expected: EXPECTED,
            }),
            Some(Value::String(s)) => ThinkingLevel::parse(s).ok_or(CommandError::BadValue {
                field: "level",
                message: format!("unknown thinking level \"{s}\"; expected {EXPECTED}"),
            }),
            Some(other) => Err(CommandError::WrongType {
                field: "level",
                expected: EXPECTED,
                got: type_name(other),
            }),
        }
    }

    fn queue_mode(&self) -> Result<QueueMode, CommandError> {
        const EXPECTED: &str = "\"all\" or \"one-at-a-time\"";
        match self.0.get("mode") {
            None | Some(Value::Null) => Err(CommandError::Missing {
                field: "mode",
                expected: EXPECTED,
            }),
            Some(Value::String(s)) => QueueMode::parse(s).ok_or(CommandError::BadValue {
                field: "mode",
                message: format!("unknown mode \"{s}\"; expected {EXPECTED}"),
            }),
            Some(other) => Err(CommandError::WrongType {
                field: "mode",
                expected: EXPECTED,
                got: type_name(other),
            }),
        }
    }

    fn streaming_behavior(&self) -> Result<Option<StreamingBehavior>, CommandError> {
        const EXPECTED: &str = "\"steer\" or \"followUp\"";
        match self.0.get("streamingBehavior") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s == "steer" => Ok(Some(StreamingBehavior::Steer)),
            Some(Value::String(s)) if s == "followUp" => Ok(Some(StreamingBehavior::FollowUp)),
            Some(Value::String(s)) => Err(CommandError::BadValue {
                field: "streamingBehavior",
                message: format!("unknown value \"{s}\"; expected {EXPECTED}"),
            }),
            Some(other) => Err(CommandError::WrongType {
                field: "streamingBehavior",
                expected: EXPECTED,
                got: type_name(other),
            }),
        }
    }
}

/// Classifies one parsed JSON value.
pub fn parse_incoming(value: Value) -> Incoming {
    let obj = match value {
        Value::Object(o) => o,
        other => {
            return Incoming::NotACommand {
                id: None,
                error: format!(
                "Failed to parse command: expected a JSON object with a string \"type\", got {}",
                type_name(&other)
            ),
            }
        }
    };
    let id = obj.get("id").cloned();
    let type_name_str = match obj.get("type") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Incoming::NotACommand {
                id: id.filter(Value::is_string),
                error: format!(
                    "Failed to parse command: \"type\" must be a string, got {}",
                    type_name(other)
                ),
            }
        }
        None => {
            return Incoming::NotACommand {
                id: id.filter(Value::is_string),
                error: "Failed to parse command: missing string field \"type\"".to_string(),
            }
        }
    };
    if type_name_str == "extension_ui_response" {
        return Incoming::UiResponse(UiResponse {
            id: match obj.get("id") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            },
            value: obj.get("value").and_then(Value::as_str).map(str::to_string),
            confirmed: obj.get("confirmed").and_then(Value::as_bool),
            cancelled: obj.get("cancelled").and_then(Value::as_bool) == Some(true),
        });
    }
    let Some(&name) = COMMAND_NAMES.iter().find(|n| **n == type_name_str) else {
        return Incoming::Unknown {
            id,
            type_name: type_name_str,
        };
    };
    match parse_fields(name, &Fields(&obj)) {
        Ok(command) => Incoming::Command { id, command },
        Err(error) => Incoming::Invalid {
            id,
            command: name,
            error,
        },
    }
}

fn parse_fields(name: &str, f: &Fields<'_>) -> Result<Command, CommandError> {
    Ok(match name {
        "prompt" => Command::Prompt {
            message: f.req_str("message")?,
            images: f.images()?,
            streaming_behavior: f.streaming_behavior()?,
        },
        "steer" => Command::Steer {
            message: f.req_str("message")?,
            images: f.images()?,
        },
        "follow_up" => Command::FollowUp {
            message: f.req_str("message")?,
            images: f.images()?,
        },
        "abort" => Command::Abort,
        "clear_queue" => Command::ClearQueue,
        "new_session" => Command::NewSession {
            parent_session: f.opt_str("parentSession")?,
        },
        "get_state" => Command::GetState,
        "get_messages" => Command::GetMessages,
        "set_model" => Command::SetModel {
            provider: f.req_str("provider")?,
            model_id: f.req_str("modelId")?,
        },
        "cycle_model" => Command::CycleModel,
        "get_available_models" => Command::GetAvailableModels,
        "set_thinking_level" => Command::SetThinkingLevel {
            level: f.thinking_level()?,
        },
        "cycle_thinking_level" => Command::CycleThinkingLevel,
        "get_available_thinking_levels" => Command::GetAvailableThinkingLevels,
        "set_steering_mode" => Command::SetSteeringMode {
            mode: f.queue_mode()?,
        },
        "set_follow_up_mode" => Command::SetFollowUpMode {
            mode: f.queue_mode()?,
        },
        "compact" => Command::Compact {
            custom_instructions: f.opt_str("customInstructions")?,
        },
        "set_auto_compaction" => Command::SetAutoCompaction {
            enabled: f.req_bool("enabled")?,
        },
        "set_auto_retry" => Command::SetAutoRetry {
            enabled: f.req_bool("enabled")?,
        },
        "abort_retry" => Command::AbortRetry,
        "bash" => Command::Bash {
            command: f.req_str("command")?,
            exclude_from_context: f.opt_bool("excludeFromContext")?,
        },
        "abort_bash" => Command::AbortBash,
        "get_session_stats" => Command::GetSessionStats,
        "export_html" => Command::ExportHtml {
            output_path: f.opt_str("outputPath")?,
        },
        "switch_session" => Command::SwitchSession {
            session_path: f.req_str("sessionPath")?,
        },
        "fork" => Command::Fork {
            entry_id: f.req_str("entryId")?,
        },
        "clone" => Command::Clone,
        "get_fork_messages" => Command::GetForkMessages,
        "get_entries" => Command::GetEntries {
            since: f.opt_str("since")?,
        },
        "get_tree" => Command::GetTree,
        "get_last_assistant_text" => Command::GetLastAssistantText,
        "set_session_name" => Command::SetSessionName {
            name: f.req_str("name")?,
        },
        "get_commands" => Command::GetCommands,
        // COMMAND_NAMES and this match list the same names; reaching here is a programming error
        // that still answers cleanly.
        other => {
            return Err(CommandError::BadValue {
                field: "type",
                message: format!("command \"{other}\" is not implemented"),
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_name_parses() {
        for name in COMMAND_NAMES {
            let mut v = json!({"type": name, "message": "m", "provider": "p", "modelId": "m",
                "level": "high", "mode": "all", "enabled": true, "command": "ls",
                "sessionPath": "/x", "entryId": "e", "name": "n"});
            if let Value::Object(o) = &mut v {
                o.insert("id".into(), json!("i"));
            }
            match parse_incoming(v) {
                Incoming::Command { command, .. } => assert_eq!(command.name(), name),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn not_commands() {
        assert!(matches!(
            parse_incoming(json!([1, 2])),
            Incoming::NotACommand { id: None, .. }
        ));
        assert!(matches!(
            parse_incoming(Value::Null),
            Incoming::NotACommand { id: None, .. }
        ));
        match parse_incoming(json!({"id": "nt", "message": "x"})) {
            Incoming::NotACommand { id, .. } => assert_eq!(id, Some(json!("nt"))),
            other => panic!("{other:?}"),
        }
        match parse_incoming(json!({"id": "u", "type": "nope"})) {
            Incoming::Unknown { id, type_name } => {
                assert_eq!(id, Some(json!("u")));
                assert_eq!(type_name, "nope");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_fields_name_the_problem() {
        match parse_incoming(json!({"id": "a", "type": "set_thinking_level", "level": "bogus"})) {
            Incoming::Invalid { command, error, .. } => {
                assert_eq!(command, "set_thinking_level");
                assert!(error.to_string().contains("bogus"));
            }
            other => panic!("{other:?}"),
        }
        match parse_incoming(json!({"type": "set_auto_retry", "enabled": "yes"})) {
            Incoming::Invalid { error, .. } => assert_eq!(
                error.to_string(),
                "Invalid field \"enabled\": expected true or false, got a string"
            ),
            other => panic!("{other:?}"),
        }
        match parse_incoming(json!({"type": "prompt"})) {
            Incoming::Invalid { error, .. } => assert_eq!(
                error.to_string(),
                "Missing required field \"message\" (a string)"
            ),
            other => panic!("{other:?}"),
        }
    }
}
