//! The `extension_ui_request` records (`extensions.md` §A6): nine methods, keys in pi's order
//! (`type`, `id`, `method`, then the method's fields), `undefined` fields omitted.

use serde::Serialize;
use serde_json::Value;

/// One UI request as written on stdout.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct UiRequest<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: &'a str,
    #[serde(flatten)]
    pub method: &'a UiMethod,
}

impl<'a> UiRequest<'a> {
    pub fn new(id: &'a str, method: &'a UiMethod) -> UiRequest<'a> {
        UiRequest {
            kind: "extension_ui_request",
            id,
            method,
        }
    }
}

/// The method and its fields. Dialogs (`select`, `confirm`, `input`, `editor`) wait for an
/// `extension_ui_response`; the others are fire-and-forget.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "method", rename_all_fields = "camelCase")]
pub(crate) enum UiMethod {
    #[serde(rename = "select")]
    Select {
        title: String,
        options: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        timeout: Option<Value>,
    },
    #[serde(rename = "confirm")]
    Confirm {
        title: String,
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        timeout: Option<Value>,
    },
    #[serde(rename = "input")]
    Input {
        title: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        placeholder: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        timeout: Option<Value>,
    },
    #[serde(rename = "editor")]
    Editor {
        title: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        prefill: Option<String>,
    },
    #[serde(rename = "notify")]
    Notify {
        message: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        notify_type: Option<String>,
    },
    #[serde(rename = "setStatus")]
    SetStatus {
        status_key: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        status_text: Option<String>,
    },
    #[serde(rename = "setWidget")]
    SetWidget {
        widget_key: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        widget_lines: Option<Vec<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        widget_placement: Option<String>,
    },
    #[serde(rename = "setTitle")]
    SetTitle { title: String },
    #[serde(rename = "set_editor_text")]
    SetEditorText { text: String },
}

/// What an unanswered, cancelled or timed-out dialog resolves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DialogKind {
    /// `confirm`: `false`.
    Confirm,
    /// `select`, `input`, `editor`: `undefined` (`null` on the extension protocol).
    Value,
}

impl DialogKind {
    pub fn default_value(self) -> Value {
        match self {
            DialogKind::Confirm => Value::Bool(false),
            DialogKind::Value => Value::Null,
        }
    }
}

impl UiMethod {
    /// The dialog kind, `None` for fire-and-forget methods.
    pub fn dialog(&self) -> Option<DialogKind> {
        match self {
            UiMethod::Confirm { .. } => Some(DialogKind::Confirm),
            UiMethod::Select { .. } | UiMethod::Input { .. } | UiMethod::Editor { .. } => {
                Some(DialogKind::Value)
            }
            _ => None,
        }
    }

    /// The dialog's timeout in ms when it is truthy (a positive number): pi starts a timer only
    /// then; `timeout: 0` is written but never fires.
    pub fn timeout_ms(&self) -> Option<u64> {
        let t = match self {
            UiMethod::Select { timeout, .. }
            | UiMethod::Confirm { timeout, .. }
            | UiMethod::Input { timeout, .. } => timeout.as_ref()?,
            _ => return None,
        };
        let ms = t.as_f64()?;
        (ms > 0.0 && ms.is_finite()).then(|| ms.ceil() as u64)
    }

    /// The record for a `ui.*` call of the extension protocol (`extensions.md` §B7), or the
    /// error the call is answered with. `Ok(None)`: a method pi degrades to a no-op in RPC mode.
    pub fn from_call(method: &str, params: &Value) -> Result<Option<UiMethod>, String> {
        let text = |key: &str| -> Result<String, String> {
            match params.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Ok(crate::js::value::js_template(Some(other))),
                None => Err(format!("{method}: missing \"{key}\"")),
            }
        };
        let opt_text = |key: &str| -> Option<String> {
            match params.get(key) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(crate::js::value::js_template(Some(other))),
            }
        };
        let timeout = || params.get("timeout").filter(|v| !v.is_null()).cloned();
        Ok(Some(match method {
            "ui.select" => UiMethod::Select {
                title: text("title")?,
                options: match params.get("options") {
                    Some(v @ Value::Array(_)) => v.clone(),
                    _ => return Err("ui.select: \"options\" must be an array".into()),
                },
                timeout: timeout(),
            },
            "ui.confirm" => UiMethod::Confirm {
                title: text("title")?,
                message: opt_text("message").unwrap_or_default(),
                timeout: timeout(),
            },
            "ui.input" => UiMethod::Input {
                title: text("title")?,
                placeholder: opt_text("placeholder"),
                timeout: timeout(),
            },
            "ui.editor" => UiMethod::Editor {
                title: text("title")?,
                prefill: opt_text("prefill"),
            },
            "ui.notify" => UiMethod::Notify {
                message: text("message")?,
                notify_type: opt_text("type"),
            },
            "ui.setStatus" => UiMethod::SetStatus {
                status_key: text("key")?,
                status_text: opt_text("text"),
            },
            "ui.setWidget" => UiMethod::SetWidget {
                widget_key: text("key")?,
                widget_lines: match params.get("content") {
                    None | Some(Value::Null) => None,
                    Some(Value::Array(items)) => Some(
                        items
                            .iter()
                            .map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => crate::js::value::js_template(Some(other)),
                            })
                            .collect(),
                    ),
                    Some(_) => {
                        return Err("ui.setWidget: \"content\" must be an array of strings".into())
                    }
                },
                widget_placement: opt_text("placement"),
            },
            "ui.setTitle" => UiMethod::SetTitle {
                title: text("title")?,
            },
            "ui.setEditorText" | "ui.pasteToEditor" => UiMethod::SetEditorText {
                text: text("text")?,
            },
            _ => return Ok(None),
        }))
    }
}

/// The value an RPC-mode UI method pi degrades answers with (§A6), `None` for unknown methods.
pub(crate) fn degraded_value(method: &str) -> Option<Value> {
    Some(match method {
        "ui.custom" | "ui.getTheme" => Value::Null,
        "ui.getEditorText" => Value::String(String::new()),
        "ui.getToolsExpanded" => Value::Bool(false),
        "ui.getAllThemes" => Value::Array(Vec::new()),
        "ui.setTheme" => serde_json::json!({
            "success": false,
            "error": "Theme switching not supported in RPC mode"
        }),
        "ui.setFooter"
        | "ui.setHeader"
        | "ui.setWorkingMessage"
        | "ui.setWorkingVisible"
        | "ui.setWorkingIndicator"
        | "ui.setHiddenThinkingLabel"
        | "ui.addAutocompleteProvider"
        | "ui.setEditorComponent"
        | "ui.setToolsExpanded"
        | "ui.onTerminalInput" => Value::Null,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wire(method: &str, params: Value) -> String {
        let m = UiMethod::from_call(method, &params).unwrap().unwrap();
        crate::protocol::framing::encode(&UiRequest::new("u1", &m))
    }

    #[test]
    fn records_have_pis_keys_in_pis_order() {
        assert_eq!(
            wire(
                "ui.confirm",
                json!({"title":"Dangerous command","message":"rm -r dist","timeout":1500})
            ),
            r#"{"type":"extension_ui_request","id":"u1","method":"confirm","title":"Dangerous command","message":"rm -r dist","timeout":1500}"#
        );
        assert_eq!(
            wire("ui.setStatus", json!({"key":"demo"})),
            r#"{"type":"extension_ui_request","id":"u1","method":"setStatus","statusKey":"demo"}"#
        );
        assert_eq!(
            wire(
                "ui.setWidget",
                json!({"key":"demo","placement":"belowEditor"})
            ),
            r#"{"type":"extension_ui_request","id":"u1","method":"setWidget","widgetKey":"demo","widgetPlacement":"belowEditor"}"#
        );
        assert_eq!(
            wire("ui.notify", json!({"message":"hi","type":"info"})),
            r#"{"type":"extension_ui_request","id":"u1","method":"notify","message":"hi","notifyType":"info"}"#
        );
        assert_eq!(
            wire("ui.pasteToEditor", json!({"text":"x"})),
            r#"{"type":"extension_ui_request","id":"u1","method":"set_editor_text","text":"x"}"#
        );
        assert_eq!(
            wire(
                "ui.select",
                json!({"title":"Pick","options":["a","b"],"timeout":10000})
            ),
            r#"{"type":"extension_ui_request","id":"u1","method":"select","title":"Pick","options":["a","b"],"timeout":10000}"#
        );
        assert_eq!(
            wire("ui.input", json!({"title":"T","placeholder":"p"})),
            r#"{"type":"extension_ui_request","id":"u1","method":"input","title":"T","placeholder":"p"}"#
        );
    }

    #[test]
    fn only_truthy_timeouts_run_a_timer() {
        let m = |t: Value| UiMethod::from_call("ui.confirm", &json!({"title":"t","timeout":t}));
        assert_eq!(m(json!(1500)).unwrap().unwrap().timeout_ms(), Some(1500));
        assert_eq!(m(json!(0)).unwrap().unwrap().timeout_ms(), None);
        assert_eq!(m(json!("x")).unwrap().unwrap().timeout_ms(), None);
    }

    #[test]
    fn bad_params_are_errors_and_unknown_methods_are_none() {
        assert!(UiMethod::from_call("ui.select", &json!({"title":"t"})).is_err());
        assert!(UiMethod::from_call("ui.notify", &json!({})).is_err());
        assert_eq!(UiMethod::from_call("ui.custom", &json!({})), Ok(None));
        assert_eq!(degraded_value("ui.getEditorText"), Some(json!("")));
    }
}
