//! Thinking levels: the seven pi levels, which of them a model supports, and clamping a requested
//! level onto a model (data-model.md §6).

use serde::{Deserialize, Serialize};

use super::model::Model;

/// A pi thinking level, ordered from `Off` to `Max`. Serialized lowercase (`"xhigh"`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    Off,
    Minimal,
    Low,
    /// pi's default level.
    #[default]
    Medium,
    High,
    Xhigh,
    Max,
}

impl ThinkingLevel {
    /// Every level, in order.
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// The wire name: `"off"`, `"minimal"`, … `"max"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    /// Parses an exact lowercase level name; anything else is `None`.
    pub fn parse(s: &str) -> Option<ThinkingLevel> {
        ThinkingLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a model's `thinkingLevelMap` says about one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelMapping<'a> {
    /// No entry for the level: the API's default treatment.
    Unmapped,
    /// Mapped to `null`: the level is not supported.
    Unsupported,
    /// Mapped to a provider value (e.g. `"xhigh"`, `"none"`, `"HIGH"`).
    Value(&'a str),
}

/// Looks `level` up in the model's `thinkingLevelMap`. A non-string, non-null entry counts as
/// unmapped for the value but still as "mapped" for [`supported_levels`].
pub fn level_mapping(model: &Model, level: ThinkingLevel) -> LevelMapping<'_> {
    match model
        .thinking_level_map
        .as_ref()
        .and_then(|m| m.get(level.as_str()))
    {
        None => LevelMapping::Unmapped,
        Some(serde_json::Value::Null) => LevelMapping::Unsupported,
        Some(serde_json::Value::String(s)) => LevelMapping::Value(s),
        Some(_) => LevelMapping::Unmapped,
    }
}

/// The levels a model supports (pi's `getSupportedThinkingLevels`):
/// non-reasoning → `[off]`; otherwise every level except those mapped to `null`, and `xhigh` /
/// `max` only when explicitly mapped to a non-null value.
pub fn supported_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    let map = model.thinking_level_map.as_ref();
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let mapped = map.and_then(|m| m.get(level.as_str()));
            match mapped {
                Some(serde_json::Value::Null) => false,
                _ if matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max) => mapped.is_some(),
                _ => true,
            }
        })
        .collect()
}

/// Clamps `level` onto the model: kept when supported, else the nearest supported level above
/// it, else the nearest below, else the first supported level (`off` if none).
pub fn clamp_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    clamp_to(&supported_levels(model), level)
}

/// [`clamp_level`] against an explicit list of supported levels.
pub fn clamp_to(supported: &[ThinkingLevel], level: ThinkingLevel) -> ThinkingLevel {
    if supported.contains(&level) {
        return level;
    }
    let all = ThinkingLevel::ALL;
    let idx = level.index();
    if let Some(up) = all[idx..].iter().find(|l| supported.contains(l)) {
        return *up;
    }
    if let Some(down) = all[..idx].iter().rev().find(|l| supported.contains(l)) {
        return *down;
    }
    supported.first().copied().unwrap_or(ThinkingLevel::Off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ThinkingLevel::*;

    fn model(reasoning: bool, map: Option<serde_json::Value>) -> Model {
        let mut m = Model::placeholder();
        m.reasoning = reasoning;
        m.thinking_level_map = map.and_then(|v| v.as_object().cloned());
        m
    }

    #[test]
    fn names_round_trip() {
        for l in ThinkingLevel::ALL {
            assert_eq!(ThinkingLevel::parse(l.as_str()), Some(l));
            assert_eq!(l.to_string(), l.as_str());
            assert_eq!(
                serde_json::to_string(&l).unwrap(),
                format!("\"{}\"", l.as_str())
            );
        }
        assert_eq!(ThinkingLevel::parse("High"), None);
        assert_eq!(ThinkingLevel::parse("bogus"), None);
        assert_eq!(ThinkingLevel::default(), Medium);
        assert!(Off < Minimal && High < Xhigh && Xhigh < Max);
    }

    #[test]
    fn supported_levels_examples() {
        assert_eq!(supported_levels(&model(false, None)), vec![Off]);
        assert_eq!(
            supported_levels(&model(true, None)),
            vec![Off, Minimal, Low, Medium, High]
        );
        // claude-opus-4-7
        assert_eq!(
            supported_levels(&model(true, Some(json!({"xhigh":"xhigh","max":"max"})))),
            ThinkingLevel::ALL.to_vec()
        );
        // claude-fable-5
        assert_eq!(
            supported_levels(&model(
                true,
                Some(json!({"off":null,"xhigh":"xhigh","max":"max"}))
            )),
            vec![Minimal, Low, Medium, High, Xhigh, Max]
        );
        // gpt-5
        assert_eq!(
            supported_levels(&model(
                true,
                Some(json!({"off":null,"xhigh":null,"max":null}))
            )),
            vec![Minimal, Low, Medium, High]
        );
        // gpt-5.2
        assert_eq!(
            supported_levels(&model(
                true,
                Some(json!({"off":"none","minimal":null,"xhigh":"xhigh"}))
            )),
            vec![Off, Low, Medium, High, Xhigh]
        );
    }

    #[test]
    fn clamping() {
        let plain = model(true, None);
        assert_eq!(clamp_level(&plain, Xhigh), High);
        assert_eq!(clamp_level(&plain, Max), High);
        assert_eq!(clamp_level(&plain, Low), Low);
        let non_reasoning = model(false, None);
        assert_eq!(clamp_level(&non_reasoning, High), Off);
        let gpt5 = model(true, Some(json!({"off":null,"xhigh":null,"max":null})));
        assert_eq!(clamp_level(&gpt5, Off), Minimal);
        assert_eq!(clamp_level(&gpt5, Max), High);
        let gpt52 = model(
            true,
            Some(json!({"off":"none","minimal":null,"xhigh":"xhigh"})),
        );
        assert_eq!(clamp_level(&gpt52, Minimal), Low);
        assert_eq!(clamp_level(&gpt52, Max), Xhigh);
        assert_eq!(clamp_to(&[], Medium), Off);
    }

    #[test]
    fn mapping_lookup() {
        let m = model(true, Some(json!({"off":"none","minimal":null})));
        assert_eq!(level_mapping(&m, Off), LevelMapping::Value("none"));
        assert_eq!(level_mapping(&m, Minimal), LevelMapping::Unsupported);
        assert_eq!(level_mapping(&m, High), LevelMapping::Unmapped);
    }
}
