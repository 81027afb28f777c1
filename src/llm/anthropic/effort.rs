//! Thinking for the Anthropic Messages API: budget or adaptive thinking, the output cap, and
//! pi's managed effort for models with mid-conversation effort.

use super::*;

/// Thinking and output-cap decisions for one request.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ThinkingPlan {
    pub(super) max_tokens: u64,
    pub(super) thinking: Option<Value>,
    pub(super) output_config: Option<Value>,
    pub(super) interleaved_beta: bool,
    /// The effort the effort markers ask for (a model with mid-conversation effort), also
    /// recorded on the reply as `providerThinkingLevel`.
    pub(super) managed_effort: Option<String>,
}

/// pi's `mapThinkingLevelToEffort`: the model's own mapping, else low/medium/high.
fn adaptive_effort(model: &Model, level: ThinkingLevel) -> String {
    match level_mapping(model, level) {
        LevelMapping::Value(v) => v.to_owned(),
        _ => match level {
            ThinkingLevel::Minimal | ThinkingLevel::Low => "low".into(),
            ThinkingLevel::Medium => "medium".into(),
            _ => "high".into(),
        },
    }
}

/// The thinking plan, with pi's managed effort for models with mid-conversation effort:
/// adaptive thinking whose blocks are dropped on a prefix mismatch, a fixed low top-level
/// effort, and the chosen effort carried by the markers (high when none was chosen). Thinking
/// turned off sends no markers.
pub(super) fn plan_thinking(model: &Model, ctx: &LlmContext, opts: &StreamOptions) -> ThinkingPlan {
    let mut plan = plan_thinking_unmanaged(model, ctx, opts);
    let compat = AnthropicCompat::of(model);
    let level = effective_thinking_level(model, opts.thinking_level);
    let thinking_disabled = model.reasoning
        && level == ThinkingLevel::Off
        && level_mapping(model, ThinkingLevel::Off) != LevelMapping::Unsupported;
    if compat.supports_mid_convo_effort && !thinking_disabled {
        let effort = if level != ThinkingLevel::Off && compat.force_adaptive_thinking {
            adaptive_effort(model, level)
        } else {
            "high".to_owned()
        };
        plan.thinking = Some(json!({
            "type": "adaptive",
            "display": "summarized",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"}
        }));
        plan.output_config = Some(json!({ "effort": MANAGED_TOP_LEVEL_EFFORT }));
        plan.managed_effort = Some(effort);
    }
    plan
}

fn plan_thinking_unmanaged(model: &Model, ctx: &LlmContext, opts: &StreamOptions) -> ThinkingPlan {
    let compat = AnthropicCompat::of(model);
    let level = effective_thinking_level(model, opts.thinking_level);
    let base = base_max_tokens(model, ctx, opts);
    if level == ThinkingLevel::Off {
        let disabled = model.reasoning
            && level_mapping(model, ThinkingLevel::Off) != LevelMapping::Unsupported;
        return ThinkingPlan {
            max_tokens: base,
            thinking: disabled.then(|| json!({"type": "disabled"})),
            output_config: None,
            interleaved_beta: false,
            managed_effort: None,
        };
    }
    if !model.reasoning {
        return ThinkingPlan {
            max_tokens: base,
            thinking: None,
            output_config: None,
            interleaved_beta: false,
            managed_effort: None,
        };
    }
    if compat.force_adaptive_thinking {
        let effort = adaptive_effort(model, level);
        return ThinkingPlan {
            max_tokens: base,
            thinking: Some(json!({"type": "adaptive", "display": "summarized"})),
            output_config: Some(json!({ "effort": effort })),
            interleaved_beta: false,
            managed_effort: None,
        };
    }
    // Budget thinking (pi's adjustMaxTokensForThinking + clampMaxTokensToContext).
    let mut budget = thinking_budget_for_level(level, &opts.thinking_budgets);
    let max_tokens = (base + budget).min(model.max_tokens);
    if max_tokens <= budget {
        budget = clamp_thinking_budget_to_answer_room(budget, max_tokens);
    }
    let max_tokens = clamp_max_tokens_to_context(model, ctx, max_tokens);
    let budget = clamp_thinking_budget_to_answer_room(budget, max_tokens);
    let budget = if budget == 0 { 1024 } else { budget };
    ThinkingPlan {
        max_tokens,
        thinking: Some(
            json!({"type": "enabled", "budget_tokens": budget, "display": "summarized"}),
        ),
        output_config: None,
        interleaved_beta: true,
        managed_effort: None,
    }
}
