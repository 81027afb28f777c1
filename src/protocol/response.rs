//! The `response` record: `{"id"?,"type":"response","command"?,"success",("data"|"error")?}` in
//! exactly that key order (`rpc-protocol.md` §2).

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// One answer to one command line.
#[derive(Clone, Debug)]
pub struct Response {
    /// The command's `id`, echoed verbatim; `None` when the command had none.
    pub id: Option<Value>,
    /// The command's `type` (`"parse"` for unparsable lines). Always present in pi-rpc.
    pub command: Value,
    pub success: bool,
    /// `Some(Value::Null)` writes `"data":null`; `None` omits the key.
    pub data: Option<Value>,
    /// Pre-serialized `data` (entries kept as the exact text of the session file); wins over
    /// `data` when set.
    pub raw_data: Option<Box<serde_json::value::RawValue>>,
    pub error: Option<String>,
}

impl Response {
    pub fn ok(id: Option<Value>, command: &str, data: Option<Value>) -> Response {
        Response {
            id,
            command: Value::String(command.to_string()),
            success: true,
            data,
            raw_data: None,
            error: None,
        }
    }

    /// A success whose `data` is already-serialized JSON text. Invalid text (never produced by
    /// our own serializers) degrades to an error response.
    pub fn ok_raw(id: Option<Value>, command: &str, json_text: String) -> Response {
        match serde_json::value::RawValue::from_string(json_text) {
            Ok(raw) => Response {
                raw_data: Some(raw),
                ..Response::ok(id, command, None)
            },
            Err(e) => Response::err(
                id,
                command,
                format!("internal error: invalid JSON data: {e}"),
            ),
        }
    }

    pub fn err(id: Option<Value>, command: &str, error: impl Into<String>) -> Response {
        Response {
            id,
            command: Value::String(command.to_string()),
            success: false,
            data: None,
            raw_data: None,
            error: Some(error.into()),
        }
    }

    /// The answer to a line that is not a command object.
    pub fn parse_error(id: Option<Value>, error: impl Into<String>) -> Response {
        Response::err(id, "parse", error)
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if let Some(id) = &self.id {
            m.serialize_entry("id", id)?;
        }
        m.serialize_entry("type", "response")?;
        m.serialize_entry("command", &self.command)?;
        m.serialize_entry("success", &self.success)?;
        if self.success {
            if let Some(raw) = &self.raw_data {
                m.serialize_entry("data", raw)?;
            } else if let Some(d) = &self.data {
                m.serialize_entry("data", d)?;
            }
        } else if let Some(e) = &self.error {
            m.serialize_entry("error", e)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_optional_keys() {
        let r = Response::ok(Some(json!("1")), "get_state", Some(json!({"a": 1})));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"id":"1","type":"response","command":"get_state","success":true,"data":{"a":1}}"#
        );
        let r = Response::ok(None, "abort", None);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"type":"response","command":"abort","success":true}"#
        );
        let r = Response::ok(None, "cycle_model", Some(Value::Null));
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"type":"response","command":"cycle_model","success":true,"data":null}"#
        );
        let r = Response::err(Some(json!("x")), "set_model", "Model not found: a/b");
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"id":"x","type":"response","command":"set_model","success":false,"error":"Model not found: a/b"}"#
        );
    }
}
