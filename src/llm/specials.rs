//! Request headers some built-in providers add per request, from the conversation itself
//! (providers-catalog.md §2.3). Applied to every request in `wire::stream_assistant`; the
//! provider is the model's `provider` id, so a built-in provider rerouted by models.json keeps
//! them, as in pi.

use std::borrow::Cow;

use super::model::Model;
use super::types::{ContentBlock, LlmContext, LlmMessage, StreamOptions};

/// `opts` with the provider's per-request headers added (borrowed unchanged when there are
/// none).
pub(crate) fn apply<'a>(
    model: &Model,
    ctx: &LlmContext,
    opts: &'a StreamOptions,
) -> Cow<'a, StreamOptions> {
    let mut extra: Vec<(String, String)> = Vec::new();
    let mut bearer_key = false;
    match model.provider.as_str() {
        "github-copilot" => {
            let initiator = match ctx.messages.last() {
                Some(LlmMessage::User { .. }) => "user",
                _ => "agent",
            };
            extra.push(("X-Initiator".into(), initiator.into()));
            extra.push(("Openai-Intent".into(), "conversation-edits".into()));
            if ctx.messages.iter().any(has_image) {
                extra.push(("Copilot-Vision-Request".into(), "true".into()));
            }
            // Copilot's Anthropic models take the token as a bearer, never as `x-api-key`.
            bearer_key = model.api == "anthropic-messages";
        }
        "opencode" | "opencode-go" => {
            if let Some(id) = &opts.session_id {
                extra.push(("x-opencode-session".into(), id.clone()));
            }
        }
        _ => {}
    }
    if extra.is_empty() && !bearer_key {
        return Cow::Borrowed(opts);
    }
    let mut out = opts.clone();
    if bearer_key {
        if let Some(key) = out.api_key.take() {
            out.headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case("authorization"));
            out.headers
                .push(("Authorization".into(), format!("Bearer {key}")));
        }
    }
    for (name, value) in extra {
        if !out
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(&name))
        {
            out.headers.push((name, value));
        }
    }
    Cow::Owned(out)
}

fn has_image(m: &LlmMessage) -> bool {
    let content = match m {
        LlmMessage::User { content, .. } | LlmMessage::ToolResult { content, .. } => content,
        LlmMessage::Assistant(_) | LlmMessage::System(_) => return false,
    };
    content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(provider: &str, api: &str) -> Model {
        Model {
            id: "m".into(),
            provider: provider.into(),
            api: api.into(),
            ..Model::default()
        }
    }

    fn user(content: Vec<ContentBlock>) -> LlmMessage {
        LlmMessage::User {
            content,
            timestamp: 1,
            as_string: false,
        }
    }

    #[test]
    fn copilot_headers_follow_the_conversation() {
        let opts = StreamOptions {
            api_key: Some("tok".into()),
            ..StreamOptions::default()
        };
        let text = ContentBlock::Text {
            text: "hi".into(),
            text_signature: None,
        };
        let image = ContentBlock::Image {
            data: "AA==".into(),
            mime_type: "image/png".into(),
        };
        let ctx = LlmContext {
            messages: vec![user(vec![text.clone(), image])],
            ..LlmContext::default()
        };
        let out = apply(&model("github-copilot", "anthropic-messages"), &ctx, &opts);
        assert_eq!(out.api_key, None);
        assert_eq!(
            out.headers,
            vec![
                ("Authorization".to_string(), "Bearer tok".to_string()),
                ("X-Initiator".to_string(), "user".to_string()),
                (
                    "Openai-Intent".to_string(),
                    "conversation-edits".to_string()
                ),
                ("Copilot-Vision-Request".to_string(), "true".to_string()),
            ]
        );
        let ctx = LlmContext {
            messages: vec![
                user(vec![text]),
                LlmMessage::ToolResult {
                    tool_call_id: "c".into(),
                    tool_name: "bash".into(),
                    content: Vec::new(),
                    is_error: false,
                },
            ],
            ..LlmContext::default()
        };
        let out = apply(&model("github-copilot", "openai-responses"), &ctx, &opts);
        assert_eq!(out.api_key.as_deref(), Some("tok"));
        assert_eq!(
            out.headers,
            vec![
                ("X-Initiator".to_string(), "agent".to_string()),
                (
                    "Openai-Intent".to_string(),
                    "conversation-edits".to_string()
                ),
            ]
        );
    }

    #[test]
    fn opencode_session_header_and_others_untouched() {
        let opts = StreamOptions {
            session_id: Some("s-1".into()),
            ..StreamOptions::default()
        };
        let ctx = LlmContext::default();
        let out = apply(&model("opencode-go", "openai-completions"), &ctx, &opts);
        assert_eq!(
            out.headers,
            vec![("x-opencode-session".to_string(), "s-1".to_string())]
        );
        assert!(matches!(
            apply(&model("deepseek", "openai-completions"), &ctx, &opts),
            Cow::Borrowed(_)
        ));
    }
}
