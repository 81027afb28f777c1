//! AWS Signature Version 4 as the SDK's Smithy signer computes it for Bedrock
//! (providers-catalog.md §4.1): canonical request, string to sign, the HMAC key chain and the
//! `Authorization` header. Hashing and HMAC come from `ring`.

use ring::{digest, hmac};

/// AWS credentials for signing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

/// Headers the SDK never signs (hop-by-hop and the ones proxies rewrite).
const UNSIGNABLE: &[&str] = &[
    "authorization",
    "cache-control",
    "connection",
    "expect",
    "from",
    "keep-alive",
    "max-forwards",
    "pragma",
    "referer",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "x-amzn-trace-id",
];

fn unsignable(name: &str) -> bool {
    UNSIGNABLE.contains(&name) || name.starts_with("proxy-") || name.starts_with("sec-")
}

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, bytes).as_ref())
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> Vec<u8> {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, data).as_ref().to_vec()
}

/// RFC 3986 percent-encoding of everything but unreserved characters (the SDK's
/// `escapeUri`).
pub fn uri_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The canonical path: each segment of the (already encoded) request path encoded again, as
/// the SDK does for every service but S3.
pub fn canonical_path(path: &str) -> String {
    let segments: Vec<String> = path.split('/').map(uri_escape).collect();
    let joined = segments.join("/");
    if joined.is_empty() {
        "/".into()
    } else {
        joined
    }
}

/// `YYYYMMDDTHHMMSSZ` of a Unix time in seconds.
pub fn amz_date(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Everything one signature is made of (kept for tests and error reports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signed {
    pub canonical_request: String,
    pub string_to_sign: String,
    pub signature: String,
    pub authorization: String,
}

/// One request to sign. `headers` are the request's headers (including `host`, `x-amz-date`,
/// `x-amz-content-sha256` and the session token when there is one); `path` is the encoded
/// request path and `query` its raw query string (empty for Bedrock).
pub struct SigningInput<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a [(String, String)],
    pub payload_hash: &'a str,
    pub amz_date: &'a str,
    pub region: &'a str,
    pub service: &'a str,
}

fn canonical_query(query: &str) -> String {
    if query.is_empty() {
        return String::new();
    }
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_escape(&percent_decode(k)),
                uri_escape(&percent_decode(v)),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Signs `input` with `creds` (SigV4, `AWS4-HMAC-SHA256`).
pub fn sign(input: &SigningInput<'_>, creds: &AwsCredentials) -> Signed {
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in input.headers {
        let name = name.to_ascii_lowercase();
        if unsignable(&name) {
            continue;
        }
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        match headers.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                v.push(',');
                v.push_str(&value);
            }
            None => headers.push((name, value)),
        }
    }
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    let canonical_headers: String = headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let signed_headers = headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        input.method,
        canonical_path(input.path),
        canonical_query(input.query),
        canonical_headers,
        signed_headers,
        input.payload_hash
    );
    let date = &input.amz_date[..input.amz_date.len().min(8)];
    let scope = format!("{date}/{}/{}/aws4_request", input.region, input.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{}\n{scope}\n{}",
        input.amz_date,
        sha256_hex(canonical_request.as_bytes())
    );
    let k_date = hmac_sha256(
        format!("AWS4{}", creds.secret_access_key).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac_sha256(&k_date, input.region.as_bytes());
    let k_service = hmac_sha256(&k_region, input.service.as_bytes());
    let k_signing = hmac_sha256(&k_service, b"aws4_request");
    let signature = hex(&hmac_sha256(&k_signing, string_to_sign.as_bytes()));
    let authorization = format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        creds.access_key_id
    );
    Signed {
        canonical_request,
        string_to_sign,
        signature,
        authorization,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite_creds() -> AwsCredentials {
        AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
            session_token: None,
        }
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// The AWS SigV4 test suite's `get-vanilla` case.
    #[test]
    fn aws_suite_get_vanilla() {
        let headers = h(&[
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Date", "20150830T123600Z"),
        ]);
        let s = sign(
            &SigningInput {
                method: "GET",
                path: "/",
                query: "",
                headers: &headers,
                payload_hash: &sha256_hex(b""),
                amz_date: "20150830T123600Z",
                region: "us-east-1",
                service: "service",
            },
            &suite_creds(),
        );
        assert_eq!(
            s.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            s.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
        );
        assert_eq!(
            s.signature,
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        assert_eq!(
            s.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    /// The suite's `get-vanilla-query-order-key-case` (sorted, encoded query).
    #[test]
    fn aws_suite_query_order() {
        let headers = h(&[
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Date", "20150830T123600Z"),
        ]);
        let s = sign(
            &SigningInput {
                method: "GET",
                path: "/",
                query: "Param2=value2&Param1=value1",
                headers: &headers,
                payload_hash: &sha256_hex(b""),
                amz_date: "20150830T123600Z",
                region: "us-east-1",
                service: "service",
            },
            &suite_creds(),
        );
        assert_eq!(
            s.signature,
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        );
    }

    /// The suite's `post-x-www-form-urlencoded` (a signed content type and a body hash).
    #[test]
    fn aws_suite_post_form() {
        let body = b"Param1=value1";
        let headers = h(&[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Date", "20150830T123600Z"),
        ]);
        let s = sign(
            &SigningInput {
                method: "POST",
                path: "/",
                query: "",
                headers: &headers,
                payload_hash: &sha256_hex(body),
                amz_date: "20150830T123600Z",
                region: "us-east-1",
                service: "service",
            },
            &suite_creds(),
        );
        assert_eq!(
            s.signature,
            "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
        );
    }

    #[test]
    fn model_ids_are_encoded_twice_in_the_canonical_path() {
        assert_eq!(
            canonical_path("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"),
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%253A0/converse-stream"
        );
        assert_eq!(
            uri_escape("arn:aws:bedrock:us-west-2:1:x/y"),
            "arn%3Aaws%3Abedrock%3Aus-west-2%3A1%3Ax%2Fy"
        );
    }

    #[test]
    fn header_values_are_trimmed_and_unsignable_headers_skipped() {
        let headers = h(&[
            ("Host", "h"),
            ("X-Amz-Date", "20150830T123600Z"),
            ("My-Header1", "  a   b   c  "),
            ("User-Agent", "x"),
            ("Authorization", "y"),
        ]);
        let s = sign(
            &SigningInput {
                method: "POST",
                path: "/",
                query: "",
                headers: &headers,
                payload_hash: "p",
                amz_date: "20150830T123600Z",
                region: "r",
                service: "bedrock",
            },
            &suite_creds(),
        );
        assert!(s
            .canonical_request
            .contains("host:h\nmy-header1:a b c\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\np"));
    }

    #[test]
    fn amz_dates() {
        assert_eq!(amz_date(1_440_938_160), "20150830T123600Z");
        assert_eq!(amz_date(0), "19700101T000000Z");
        assert_eq!(amz_date(951_782_400), "20000229T000000Z");
    }
}
