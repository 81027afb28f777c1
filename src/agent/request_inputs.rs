//! What a request is built from: a copy of the session's context, model, tools and options
//! taken under the state lock ([`AgentSession::request_inputs`]), converted into the LLM
//! context after the lock is released ([`RequestInputs::build`]), with pi's projections for an
//! extension's `context` replacement and a forced system prompt.

use std::time::Duration;

use serde_json::Value;

use super::state::AgentSession;
use crate::llm::types::{CacheRetention, LlmMessage, StreamOptions, SystemMessage};
use crate::util::now_ms;

impl AgentSession {
    /// What the next request is built from ([`RequestInputs::build`]), copied under the lock:
    /// the context messages share their stored text, so the copy costs a pointer per message.
    pub(crate) fn request_inputs(&self) -> RequestInputs {
        let tools = self
            .active_tool_decls()
            .into_iter()
            .map(|t| crate::llm::types::ToolSpec {
                name: t.name,
                description: t.description,
                parameters: t.parameters,
                strict_prefer: t.constrained_sampling,
            })
            .collect();
        RequestInputs {
            messages: self.messages.clone(),
            model: self.model.clone(),
            run_system_prompt: self.life.run_system_prompt().map(str::to_string),
            block_images: self.settings.images_block_images(),
            tools,
            opts: StreamOptions {
                api_key: None,
                thinking_level: self.thinking_level,
                thinking_budgets: self.settings.thinking_budgets(),
                max_tokens: None,
                cache_retention: CacheRetention::from_env(),
                idle_timeout: Duration::from_millis(self.settings.http_idle_timeout_ms()),
                headers: Vec::new(),
                session_id: Some(self.session.session_id().to_string()),
                env: Vec::new(),
            },
        }
    }
}

/// A copy of what a request needs from the state ([`AgentSession::request_inputs`]).
pub(crate) struct RequestInputs {
    messages: crate::session::messages::ContextMessages,
    model: crate::llm::model::Model,
    run_system_prompt: Option<String>,
    block_images: bool,
    tools: Vec<crate::llm::types::ToolSpec>,
    opts: StreamOptions,
}

impl RequestInputs {
    /// The LLM context and options for the request, without credentials (the caller resolves
    /// them with `registry.request_auth`), with the agent messages an extension's `context`
    /// handler returned in place of the session's (system messages excluded: the session's are
    /// put back first).
    pub(crate) fn build(
        self,
        replaced: Option<Vec<Value>>,
    ) -> (crate::llm::types::LlmContext, StreamOptions) {
        // With an extension's replacement: the session's system messages replayed into one
        // head (pi's `restoreSystemMessages`), then its messages.
        let replaced = replaced.map(|mut r| {
            let system = self.messages.system_messages();
            let mut head: Vec<Value> =
                crate::compaction::estimate::current_system_message(&system, None)
                    .into_iter()
                    .collect();
            head.append(&mut r);
            head
        });
        let crate::llm::convert::Converted {
            mut system_prompt,
            mut messages,
            mut leading_system,
        } = match &replaced {
            Some(source) => crate::llm::convert::convert_to_llm(source, &self.model),
            // One message at a time: a long session is not parsed into `Value`s all at once.
            None => crate::llm::convert::convert_to_llm_each(self.messages.iter(), &self.model),
        };
        if let Some(p) = &self.run_system_prompt {
            system_prompt = p.clone();
            // pi's forced-prompt projection: for a model that keeps system messages in place,
            // one leading message with the forced prompt and the current tools, and no later
            // ones (the updates of the prompt it replaces would contradict it).
            let in_place = leading_system.is_some()
                || messages.iter().any(|m| matches!(m, LlmMessage::System(_)));
            if in_place {
                messages.retain(|m| !matches!(m, LlmMessage::System(_)));
                leading_system = Some(SystemMessage {
                    content: p.clone(),
                    tools_added: self.tools.clone(),
                    timestamp: leading_system.as_ref().map_or(0, |l| l.timestamp),
                    ..Default::default()
                });
            }
        }
        if self.block_images {
            crate::image::block_images(&mut messages);
        }
        let transcript = (self.model.api == "pi-messages").then(|| {
            let source = replaced.unwrap_or_else(|| self.messages.to_vec());
            let t = crate::llm::pi_messages::llm_transcript(&source);
            let mut t = match &self.run_system_prompt {
                Some(p) => crate::llm::pi_messages::force_system_prompt(t, p, now_ms()),
                None => t,
            };
            if self.block_images {
                crate::llm::pi_messages::block_images(&mut t, crate::image::IMAGE_BLOCKED_TEXT);
            }
            t
        });
        (
            crate::llm::types::LlmContext {
                system_prompt,
                messages,
                tools: self.tools,
                transcript,
                leading_system,
            },
            self.opts,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::ToolSpec;
    use serde_json::json;

    fn tool(name: &str) -> Value {
        json!({"name": name, "description": name, "parameters": {"type": "object"}})
    }

    fn spec(name: &str) -> ToolSpec {
        crate::llm::transcript::tool_from_declaration(&tool(name)).unwrap()
    }

    /// A model that keeps system messages in place, or one that folds them.
    fn model(in_place: bool) -> crate::llm::model::Model {
        serde_json::from_value(json!({"id": "m", "name": "m", "api": "openai-responses",
            "provider": "openai", "baseUrl": "http://127.0.0.1:9", "reasoning": false,
            "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 1000, "maxTokens": 100,
            "compat": {"supportsMidConvoSystemMessages": in_place}}))
        .unwrap()
    }

    /// The prompt, a reply, then bash removed and a section patched.
    fn inputs(in_place: bool, forced: Option<&str>) -> RequestInputs {
        let mut messages = crate::session::messages::ContextMessages::new();
        for m in [
            json!({"role": "system", "content": "", "sections": {"a": "A", "b": "B"},
                "toolsAdded": [tool("read"), tool("bash")], "timestamp": 1}),
            json!({"role": "user", "content": "hi", "timestamp": 2}),
            json!({"role": "system", "content": "", "sections": {"b": "B2"},
                "toolsRemoved": [{"name": "bash"}], "timestamp": 3}),
            json!({"role": "user", "content": "again", "timestamp": 4}),
        ] {
            messages.push(m);
        }
        RequestInputs {
            messages,
            model: model(in_place),
            run_system_prompt: forced.map(str::to_owned),
            block_images: false,
            tools: vec![spec("read")],
            opts: StreamOptions::default(),
        }
    }

    fn later_system_messages(messages: &[LlmMessage]) -> usize {
        messages
            .iter()
            .filter(|m| matches!(m, LlmMessage::System(_)))
            .count()
    }

    #[test]
    fn system_messages_stay_in_place_for_a_model_that_keeps_them() {
        let (ctx, _) = inputs(true, None).build(None);
        assert_eq!(ctx.system_prompt, "A\n\nB");
        assert_eq!(later_system_messages(&ctx.messages), 1);
        let (ctx, _) = inputs(false, None).build(None);
        assert_eq!(ctx.system_prompt, "A\n\nB2");
        assert_eq!(later_system_messages(&ctx.messages), 0);
        assert!(ctx.leading_system.is_none());
    }

    /// pi's forced-prompt projection: a forced prompt sent the in-place updates of the prompt it
    /// replaced after it.
    #[test]
    fn a_forced_prompt_drops_the_updates_of_the_prompt_it_replaces() {
        let (ctx, _) = inputs(true, Some("Forced")).build(None);
        assert_eq!(ctx.system_prompt, "Forced");
        assert_eq!(later_system_messages(&ctx.messages), 0);
        let leading = ctx.leading_system.expect("leading");
        assert_eq!(leading.full_text(), "Forced");
        assert_eq!(leading.tools_added, vec![spec("read")]);
        assert_eq!(leading.timestamp, 1);
        let (ctx, _) = inputs(false, Some("Forced")).build(None);
        assert_eq!(ctx.system_prompt, "Forced");
        assert!(ctx.leading_system.is_none());
    }

    /// pi's `restoreSystemMessages`: the session's system messages go before an extension's
    /// replacement as one replayed message, not one after the other.
    #[test]
    fn a_context_replacement_gets_one_replayed_system_message() {
        let replaced = vec![json!({"role": "user", "content": "rewritten", "timestamp": 5})];
        let (ctx, _) = inputs(true, None).build(Some(replaced));
        assert_eq!(later_system_messages(&ctx.messages), 0);
        let leading = ctx.leading_system.expect("leading");
        assert_eq!(leading.full_text(), "A\n\nB2");
        assert_eq!(leading.tools_added, vec![spec("read")]);
        assert_eq!(ctx.messages.len(), 1);
    }
}
