//! What a unit registered (`extensions.md` §B5): subscriptions, commands, tools and flags, from
//! its `initialize` answer and later `register` messages.

use serde_json::{json, Value};

#[derive(Clone, Debug)]
pub(super) struct Subscription {
    pub(super) event: String,
    pub(super) awaited: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct CommandReg {
    pub name: String,
    pub description: Option<String>,
}

#[derive(Clone, Debug)]
pub(crate) struct ToolReg {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub prompt_snippet: Option<String>,
    pub prompt_guidelines: Vec<String>,
    pub default_active: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct FlagReg {
    pub name: String,
    pub string: bool,
    pub default: Option<Value>,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Registrations {
    pub(super) subscriptions: Vec<Subscription>,
    pub(super) commands: Vec<CommandReg>,
    pub(super) tools: Vec<ToolReg>,
    pub(super) flags: Vec<FlagReg>,
}

/// Reads registrations (`initialize` unit answer or `register` message) into `regs`: lists
/// append; a command or tool of an existing name replaces it in place.
pub(super) fn add_registrations(regs: &mut Registrations, v: &Value) {
    let items = |key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for s in items("subscriptions") {
        let Some(event) = s.get("event").and_then(Value::as_str) else {
            continue;
        };
        let awaited = s.get("await").and_then(Value::as_bool).unwrap_or(true);
        match regs.subscriptions.iter_mut().find(|x| x.event == event) {
            Some(x) => x.awaited |= awaited,
            None => regs.subscriptions.push(Subscription {
                event: event.to_string(),
                awaited,
            }),
        }
    }
    for c in items("commands") {
        let Some(name) = c.get("name").and_then(Value::as_str) else {
            continue;
        };
        let reg = CommandReg {
            name: name.to_string(),
            description: c
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        match regs.commands.iter_mut().find(|x| x.name == name) {
            Some(x) => *x = reg,
            None => regs.commands.push(reg),
        }
    }
    for t in items("tools") {
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            continue;
        };
        let reg = ToolReg {
            name: name.to_string(),
            description: t
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            parameters: t
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            prompt_snippet: t
                .get("promptSnippet")
                .and_then(Value::as_str)
                .map(str::to_string),
            prompt_guidelines: t
                .get("promptGuidelines")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            default_active: t
                .get("defaultActive")
                .and_then(Value::as_bool)
                .unwrap_or(true),
        };
        match regs.tools.iter_mut().find(|x| x.name == name) {
            Some(x) => *x = reg,
            None => regs.tools.push(reg),
        }
    }
    for f in items("flags") {
        let Some(name) = f.get("name").and_then(Value::as_str) else {
            continue;
        };
        regs.flags.push(FlagReg {
            name: name.to_string(),
            string: f.get("type").and_then(Value::as_str) == Some("string"),
            default: f.get("default").cloned(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn registrations_append_and_replace_by_name() {
        let mut regs = Registrations::default();
        add_registrations(
            &mut regs,
            &json!({"subscriptions":[{"event":"tool_call"},{"event":"message_update","await":false}],
                    "commands":[{"name":"a","description":"one"},{"name":"b"}]}),
        );
        add_registrations(
            &mut regs,
            &json!({"commands":[{"name":"a","description":"two"}],"tools":[{"name":"t"}]}),
        );
        let names: Vec<_> = regs
            .commands
            .iter()
            .map(|c| (c.name.as_str(), c.description.as_deref()))
            .collect();
        assert_eq!(names, [("a", Some("two")), ("b", None)]);
        assert!(!regs.subscriptions[1].awaited);
        assert_eq!(
            regs.tools[0].parameters,
            json!({"type":"object","properties":{}})
        );
    }
}
