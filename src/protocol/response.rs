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
    pub error: Option<String>,
}

impl Response {
    pub fn ok(id: Option<Value>, command: &str, data: Option<Value>) -> Response {
        Response {
            id,
            command: Value::String(command.to_string()),
            success: true,
            data,
            error: None,
        }
    }

    /// The whole line of a success whose `data` `write_data` appends as JSON text (large
    /// answers — `get_messages`, `get_entries`, `get_tree` — are printed straight into the
    /// line's buffer, with no intermediate value and no second copy). `write_data` must append
    /// exactly one JSON value; text that is not UTF-8 (never produced by our own writers)
    /// degrades to an error response.
    pub fn ok_line(
        id: Option<Value>,
        command: &str,
        capacity: usize,
        write_data: impl FnOnce(&mut Vec<u8>),
    ) -> String {
        let mut out = Vec::with_capacity(capacity + 96);
        out.push(b'{');
        if let Some(id) = &id {
            out.extend_from_slice(b"\"id\":");
            crate::js::json::write_js(&mut out, id);
            out.push(b',');
        }
        out.extend_from_slice(b"\"type\":\"response\",\"command\":");
        crate::js::json::write_js(&mut out, &Value::String(command.to_string()));
        out.extend_from_slice(b",\"success\":true,\"data\":");
        write_data(&mut out);
        out.push(b'}');
        String::from_utf8(out).unwrap_or_else(|e| {
            crate::protocol::framing::encode(&Response::err(
                id,
                command,
                format!("internal error: response data is not UTF-8: {e}"),
            ))
        })
    }

    pub fn err(id: Option<Value>, command: &str, error: impl Into<String>) -> Response {
        Response {
            id,
            command: Value::String(command.to_string()),
            success: false,
            data: None,
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
            if let Some(d) = &self.data {
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
        let line = Response::ok_line(Some(json!(7)), "get_tree", 0, |out| {
            out.extend_from_slice(br#"{"tree":[]}"#)
        });
        assert_eq!(
            line,
            serde_json::to_string(&Response::ok(
                Some(json!(7)),
                "get_tree",
                Some(json!({"tree": []}))
            ))
            .unwrap()
        );
        let r = Response::err(Some(json!("x")), "set_model", "Model not found: a/b");
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"id":"x","type":"response","command":"set_model","success":false,"error":"Model not found: a/b"}"#
        );
    }
}
