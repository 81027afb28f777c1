//! The `role` of an agent message (data-model.md §3), read from the message's JSON: the
//! messages themselves stay JSON values (the session keeps their exact text), and code that
//! branches on the role matches this enum instead of strings.

use serde_json::Value;

/// An agent message's `role`: the provider-level roles, the roles the coding agent adds, and any
/// other one as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Replayed into the system prompt and tool loadout.
    System,
    User,
    Assistant,
    ToolResult,
    /// A `!command` run by the user.
    BashExecution,
    /// A message from an extension (`custom_message` entries).
    Custom,
    BranchSummary,
    CompactionSummary,
    /// A role this agent does not know, as written.
    Other(String),
}

impl Role {
    /// The role of message `msg`; `None` when it has no string `role`.
    pub(crate) fn of(msg: &Value) -> Option<Role> {
        msg.get("role").and_then(Value::as_str).map(Role::from)
    }

    /// The role as written in the message.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::BashExecution => "bashExecution",
            Role::Custom => "custom",
            Role::BranchSummary => "branchSummary",
            Role::CompactionSummary => "compactionSummary",
            Role::Other(s) => s,
        }
    }
}

impl From<&str> for Role {
    fn from(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            "custom" => Role::Custom,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            other => Role::Other(other.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roles_read_and_print_as_written() {
        for s in [
            "system",
            "user",
            "assistant",
            "toolResult",
            "bashExecution",
            "custom",
            "branchSummary",
            "compactionSummary",
            "hookMessage",
            "",
        ] {
            assert_eq!(Role::from(s).as_str(), s);
        }
        assert_eq!(Role::from("hookMessage"), Role::Other("hookMessage".into()));
        assert_eq!(
            Role::of(&json!({"role": "toolResult"})),
            Some(Role::ToolResult)
        );
        assert_eq!(Role::of(&json!({"role": 1})), None);
        assert_eq!(Role::of(&json!({})), None);
        assert_eq!(Role::of(&json!("user")), None);
    }
}
