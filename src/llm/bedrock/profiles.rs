//! The shared AWS files (`~/.aws/credentials`, `~/.aws/config`) read as the SDK reads them
//! (`@smithy/core/config`: `parseIni`, `loadSharedConfigFiles`, `parseKnownFiles`,
//! `loadSsoSessionData`).
//!
//! The config file's `[profile name]` sections (and `[default]`) are profiles; its
//! `[sso-session name]` sections are SSO sessions; its other sections are ignored. The
//! credentials file's sections are profiles by their plain name. A key in both files takes the
//! credentials file's value (`parseKnownFiles`), except for settings the SDK reads with
//! `loadConfig` (region, the instance metadata endpoint), where the config file wins. Comments
//! start with `#` or `;` at the line start or after whitespace; a key with an empty value opens
//! a sub-section whose indented keys are stored as `parent.key`; a later duplicate key wins.

use std::collections::BTreeMap;

use super::credentials::Env;

/// The keys of one section.
pub type Section = BTreeMap<String, String>;

/// The section types the SDK knows in `[type name]` headers.
const SECTION_TYPES: &[&str] = &["profile", "sso-session", "services"];

/// Parses an INI text into `section -> key -> value`; a typed section `[profile x]` is stored
/// as `profile.x` (the SDK's `parseIni`).
pub fn parse_ini(text: &str) -> BTreeMap<String, Section> {
    let mut map: BTreeMap<String, Section> = BTreeMap::new();
    let mut section: Option<String> = None;
    let mut sub: Option<String> = None;
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let line = strip_comment(raw).trim();
        if line.len() >= 2 && line.starts_with('[') && line.ends_with(']') {
            sub = None;
            let name = &line[1..line.len() - 1];
            section = match typed_section(name) {
                Some((kind, n)) if SECTION_TYPES.contains(&kind) => Some(format!("{kind}.{n}")),
                Some(_) => None,
                None => Some(name.to_string()),
            };
            continue;
        }
        let Some(current) = &section else { continue };
        let Some(eq) = line.find('=').filter(|&i| i > 0) else {
            continue;
        };
        let (name, value) = (line[..eq].trim(), line[eq + 1..].trim());
        if value.is_empty() {
            sub = Some(name.to_string());
            continue;
        }
        if sub.is_some() && raw.trim_start() == raw {
            sub = None;
        }
        let key = match &sub {
            Some(parent) => format!("{parent}.{name}"),
            None => name.to_string(),
        };
        map.entry(current.clone())
            .or_default()
            .insert(key, value.to_string());
    }
    map
}

/// The text before a comment: `#` or `;` at the start or after whitespace.
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if (b == b'#' || b == b';') && (i == 0 || bytes[i - 1].is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
}

/// `type name` (one whitespace, the name optionally quoted) as the SDK's `prefixKeyRegex`
/// matches it.
fn typed_section(name: &str) -> Option<(&str, &str)> {
    let (kind, rest) = name.split_once(char::is_whitespace)?;
    let kind_ok = !kind.is_empty()
        && kind
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let unquoted = ['"', '\'']
        .iter()
        .find_map(|q| rest.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
        .unwrap_or(rest);
    let name_ok = !unquoted.is_empty()
        && unquoted
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-@+.%:/".contains(&b));
    (kind_ok && name_ok).then_some((kind, unquoted))
}

/// The two shared files, parsed.
#[derive(Clone, Debug, Default)]
pub struct SharedFiles {
    /// Profiles of the config file (`[profile x]` → `x`, `[default]`).
    pub config: BTreeMap<String, Section>,
    /// Sections of the credentials file.
    pub credentials: BTreeMap<String, Section>,
    /// `[sso-session x]` sections of the config file.
    pub sso_sessions: BTreeMap<String, Section>,
    /// A digest of both texts and their paths (the credential cache keys on it).
    pub fingerprint: String,
}

impl SharedFiles {
    /// Reads the files (`AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` move them; a
    /// missing or unreadable file counts as empty, as in the SDK).
    pub fn load(env: Env<'_>, home: Option<&str>) -> SharedFiles {
        let path = |var: &str, default: &str| {
            let p = env(var)
                .filter(|v| !v.is_empty())
                .or_else(|| home.map(|h| format!("{h}/.aws/{default}")))?;
            Some(match (p.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => format!("{h}/{rest}"),
                _ => p,
            })
        };
        let read = |p: &Option<String>| {
            p.as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_default()
        };
        let (config_path, credentials_path) = (
            path("AWS_CONFIG_FILE", "config"),
            path("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
        );
        let (config_text, credentials_text) = (read(&config_path), read(&credentials_path));
        let mut files = SharedFiles::parse(&config_text, &credentials_text);
        files.fingerprint = super::sigv4::sha256_hex(
            format!("{config_path:?}\0{config_text}\0{credentials_path:?}\0{credentials_text}")
                .as_bytes(),
        );
        files
    }

    /// Parses the two texts.
    pub fn parse(config_text: &str, credentials_text: &str) -> SharedFiles {
        let mut config = BTreeMap::new();
        let mut sso_sessions = BTreeMap::new();
        let parsed = parse_ini(config_text);
        if let Some(d) = parsed.get("default") {
            config.insert("default".to_string(), d.clone());
        }
        for (name, section) in parsed {
            if let Some(p) = name.strip_prefix("profile.") {
                config.insert(p.to_string(), section);
            } else if let Some(s) = name.strip_prefix("sso-session.") {
                sso_sessions.insert(s.to_string(), section);
            }
        }
        SharedFiles {
            config,
            credentials: parse_ini(credentials_text),
            sso_sessions,
            fingerprint: String::new(),
        }
    }

    /// The merged profile (config keys, overridden by the credentials file's); `None` when
    /// neither file has it.
    pub fn profile(&self, name: &str) -> Option<Section> {
        let (config, credentials) = (self.config.get(name), self.credentials.get(name));
        if config.is_none() && credentials.is_none() {
            return None;
        }
        let mut merged = config.cloned().unwrap_or_default();
        if let Some(c) = credentials {
            merged.extend(c.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Some(merged)
    }

    /// A setting of a profile as `loadConfig` reads it: the config file first.
    pub fn setting(&self, profile: &str, key: &str) -> Option<String> {
        [self.config.get(profile), self.credentials.get(profile)]
            .into_iter()
            .flatten()
            .find_map(|s| s.get(key).cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdks_ini_rules() {
        let text = "# top\n[default]\nregion = us-west-2 ; note\nkey=a#b\n[profile work]\nrole_arn = arn:aws:iam::1:role/r\ns3 =\n  max = 10\nafter = x\n[sso-session corp]\nsso_region = eu-west-1\n[other]\nignored = 1\n[profile work]\nrole_arn = arn2\n[profile bad name]\nx = 1\n";
        let files = SharedFiles::parse(text, "[work]\naws_access_key_id = K\nrole_arn = cred\n");
        let default = files.config.get("default").unwrap();
        assert_eq!(default.get("region").map(String::as_str), Some("us-west-2"));
        assert_eq!(default.get("key").map(String::as_str), Some("a#b"));
        let work = files.config.get("work").unwrap();
        assert_eq!(work.get("role_arn").map(String::as_str), Some("arn2"));
        assert_eq!(work.get("s3.max").map(String::as_str), Some("10"));
        assert_eq!(work.get("after").map(String::as_str), Some("x"));
        assert!(!files.config.contains_key("other"));
        assert!(!files.config.contains_key("bad name"));
        assert_eq!(
            files.sso_sessions["corp"]
                .get("sso_region")
                .map(String::as_str),
            Some("eu-west-1")
        );
        let merged = files.profile("work").unwrap();
        assert_eq!(merged.get("role_arn").map(String::as_str), Some("cred"));
        assert_eq!(
            merged.get("aws_access_key_id").map(String::as_str),
            Some("K")
        );
        assert_eq!(files.setting("work", "role_arn").as_deref(), Some("arn2"));
        assert!(files.profile("none").is_none());
    }
}
