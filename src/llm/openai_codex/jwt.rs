//! The ChatGPT account id inside a Codex OAuth access token (pi's `extractAccountId`): the
//! token is a JWT whose payload (decoded with `atob`) carries the claim
//! `https://api.openai.com/auth` → `chatgpt_account_id`.

use serde_json::Value;

/// The claim that holds the ChatGPT account.
const JWT_CLAIM_PATH: &str = "https://api.openai.com/auth";
/// pi's error for every failure (not three parts, bad base64 or JSON, no account id).
pub const NO_ACCOUNT_ID: &str = "Failed to extract accountId from token";

/// The account id of `token`, or pi's error text.
pub fn extract_account_id(token: &str) -> Result<String, String> {
    let parts: Vec<&str> = token.split('.').collect();
    let [_, payload, _] = parts.as_slice() else {
        return Err(NO_ACCOUNT_ID.into());
    };
    let bytes = atob(payload).ok_or(NO_ACCOUNT_ID)?;
    // `atob` yields one character per byte (Latin-1), which `JSON.parse` then reads.
    let text: String = bytes.iter().map(|&b| char::from(b)).collect();
    let claims: Value = serde_json::from_str(&text).map_err(|_| NO_ACCOUNT_ID)?;
    let id = claims
        .get(JWT_CLAIM_PATH)
        .and_then(|c| c.get("chatgpt_account_id"))
        .ok_or(NO_ACCOUNT_ID)?;
    match id {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        Value::Number(n) if n.as_f64() != Some(0.0) => Ok(n.to_string()),
        Value::Bool(true) => Ok("true".into()),
        Value::Array(_) | Value::Object(_) => Ok(crate::js::value::js_template(Some(id))),
        _ => Err(NO_ACCOUNT_ID.into()),
    }
}

/// The HTML `atob` (forgiving base64): ASCII whitespace ignored, one or two `=` of padding
/// accepted when the length is a multiple of 4, the standard alphabet only (`-` and `_` of
/// base64url fail, as in pi). `None` when the text is not valid.
pub fn atob(input: &str) -> Option<Vec<u8>> {
    let mut s: Vec<u8> = input
        .bytes()
        .filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r'))
        .collect();
    if s.len() % 4 == 0 {
        if s.ends_with(b"==") {
            s.truncate(s.len() - 2);
        } else if s.ends_with(b"=") {
            s.truncate(s.len() - 1);
        }
    }
    if s.len() % 4 == 1 {
        return None;
    }
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for c in s {
        buffer = (buffer << 6) | value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atob_is_forgiving_base64() {
        assert_eq!(atob("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(atob("aGVsbG8").as_deref(), Some(&b"hello"[..]));
        assert_eq!(atob(" aGVs\nbG8= ").as_deref(), Some(&b"hello"[..]));
        assert_eq!(atob("aGVsbA==").as_deref(), Some(&b"hell"[..]));
        assert_eq!(atob("").as_deref(), Some(&b""[..]));
        assert_eq!(atob("a"), None);
        assert_eq!(atob("a-b_"), None);
        assert_eq!(atob("aGVsbG8=="), None);
    }

    #[test]
    fn account_id_from_the_token_claim() {
        // {"https://api.openai.com/auth":{"chatgpt_account_id":"acct_123"}}
        let payload = "eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjdF8xMjMifX0";
        assert_eq!(
            extract_account_id(&format!("h.{payload}.s")).as_deref(),
            Ok("acct_123")
        );
        for bad in ["abc", "a.b", "a.!!.c", "a.e30.c", "a.b.c.d"] {
            assert_eq!(
                extract_account_id(bad),
                Err(NO_ACCOUNT_ID.to_string()),
                "{bad}"
            );
        }
    }
}
