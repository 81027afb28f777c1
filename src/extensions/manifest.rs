//! `*.ext.json` manifests (`extensions.md` §B2): the command that starts a process extension.

use std::path::Path;

use serde_json::Value;

/// How to start a process extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// The protocol version pi-rpc speaks.
pub(crate) const PROTOCOL: u64 = 1;

/// Reads a manifest; the error is the text after `Failed to load extension: `.
pub(crate) fn read(path: &Path) -> Result<Launch, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("invalid manifest: cannot read {}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("/"));
    parse(&text, dir)
}

/// Parses manifest text; relative paths resolve against `dir`.
pub(crate) fn parse(text: &str, dir: &Path) -> Result<Launch, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid manifest: {e}"))?;
    let Value::Object(m) = v else {
        return Err("invalid manifest: not a JSON object".into());
    };
    let argv: Vec<String> = match m.get("command") {
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("invalid manifest: \"command\" must be an array of strings")?,
        Some(_) => {
            return Err("invalid manifest: \"command\" must be a non-empty array of strings".into())
        }
        None => return Err("invalid manifest: missing \"command\"".into()),
    };
    match m.get("protocol") {
        None => return Err("invalid manifest: missing \"protocol\"".into()),
        Some(p) if p.as_u64() == Some(PROTOCOL) => {}
        Some(p) => {
            return Err(format!(
                "unsupported extension protocol {}",
                crate::js::value::js_template(Some(p))
            ))
        }
    }
    let env = match m.get("env") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(e)) => e
            .iter()
            .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect::<Option<Vec<_>>>()
            .ok_or("invalid manifest: \"env\" values must be strings")?,
        Some(_) => return Err("invalid manifest: \"env\" must be an object".into()),
    };
    let resolve = |s: &str| dir.join(s).to_string_lossy().into_owned();
    let argv = argv
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let relative_program = i == 0 && a.contains('/') && !a.starts_with('/');
            if relative_program || a.starts_with("./") || a.starts_with("../") {
                resolve(a)
            } else {
                a.clone()
            }
        })
        .collect();
    Ok(Launch { argv, env })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_against_the_manifest_folder() {
        let l = parse(
            r#"{"command":["bin/gate","./x.py","--strict","../y"],"protocol":1,"env":{"A":"1"},"other":2}"#,
            Path::new("/ext"),
        )
        .unwrap();
        assert_eq!(
            l.argv,
            ["/ext/bin/gate", "/ext/./x.py", "--strict", "/ext/../y"]
        );
        assert_eq!(l.env, [("A".to_string(), "1".to_string())]);
        let bare = parse(
            r#"{"command":["python3","/abs.py"],"protocol":1}"#,
            Path::new("/e"),
        );
        assert_eq!(bare.unwrap().argv, ["python3", "/abs.py"]);
    }

    #[test]
    fn bad_manifests_say_why() {
        let e = |t: &str| parse(t, Path::new("/")).unwrap_err();
        assert_eq!(
            e(r#"{"protocol":1}"#),
            "invalid manifest: missing \"command\""
        );
        assert_eq!(
            e(r#"{"command":["x"]}"#),
            "invalid manifest: missing \"protocol\""
        );
        assert_eq!(
            e(r#"{"command":["x"],"protocol":2}"#),
            "unsupported extension protocol 2"
        );
        assert!(e("{").starts_with("invalid manifest: "));
        assert!(e(r#"{"command":[],"protocol":1}"#).starts_with("invalid manifest: "));
    }
}
