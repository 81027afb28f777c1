//! GitHub Copilot's rate-limited requests and the login's model enabling (providers-catalog.md
//! §5.5), as pi's `github-copilot.js` does them:
//!
//! - [`send_with_rate_limit_retry`]: pi's `fetchWithRateLimitRetry`. Every attempt has 5 s; a
//!   `429` is retried up to `max_retries` times after `retry-after` (seconds or an HTTP date)
//!   or 500 ms · 2^n, all within a `max_elapsed` budget; a wait that would not fit the budget
//!   (or an unreadable `retry-after`) returns the `429` as is. The login lists models with two
//!   retries in 5 s, a refresh without retries;
//! - [`enable_models`]: pi's `enableGitHubCopilotModels`. At login, each model whose policy is
//!   `unconfigured` (and that pi ships) is enabled one after the other with `POST
//!   <base>/models/<id>/policy` `{"state":"enabled"}`; best effort: a failed request or a
//!   non-2xx answer skips that model, a `429` left after the retries stops the batch. The ids
//!   that succeeded join `availableModelIds`.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::client::{self, Body, Env, NetError, Response};
use super::copilot::{base_url, HEADERS};

/// How a Copilot request retries a `429`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub max_elapsed: Duration,
}

/// The login's model list and policy updates: two retries within 5 s.
pub(crate) const LOGIN_RETRY: RetryPolicy = RetryPolicy {
    max_retries: 2,
    max_elapsed: Duration::from_secs(5),
};

/// A refresh's model list: one attempt.
pub(crate) const NO_RETRY: RetryPolicy = RetryPolicy {
    max_retries: 0,
    max_elapsed: Duration::ZERO,
};

/// The time one attempt may take (pi: `AbortSignal.timeout(5000)`).
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// pi's `fetchWithRateLimitRetry` (see the module docs); `json` is the body of a POST
/// (`None`: a GET). `deadline` bounds everything besides the policy's budget.
pub(crate) fn send_with_rate_limit_retry(
    url: &str,
    headers: &[(&str, &str)],
    json: Option<&str>,
    policy: RetryPolicy,
    deadline: Instant,
) -> Result<Response, NetError> {
    let budget = (policy.max_retries > 0 && !policy.max_elapsed.is_zero())
        .then(|| Instant::now() + policy.max_elapsed);
    let outer = budget.map_or(deadline, |b| b.min(deadline));
    let mut retry = 0;
    loop {
        let attempt = outer.min(Instant::now() + ATTEMPT_TIMEOUT);
        let resp = match json {
            Some(text) => client::send("POST", url, headers, Body::Json(text.into()), attempt),
            None => client::send("GET", url, headers, Body::None, attempt),
        }?;
        if resp.status != 429 || retry == policy.max_retries {
            return Ok(resp);
        }
        let Some(delay) = retry_delay(resp.retry_after.as_deref(), retry) else {
            return Ok(resp);
        };
        if let Some(b) = budget {
            if delay >= b.saturating_duration_since(Instant::now()) {
                return Ok(resp);
            }
        }
        if !client::sleep_within(delay, outer) {
            return Err(NetError::Timeout);
        }
        retry += 1;
    }
}

/// The wait before retry number `retry` (from 0): the `retry-after` header's seconds or HTTP
/// date, else 500 ms doubled per retry. `None` when there is no usable wait (not a number, or
/// too long to represent: `retry-after: 1e20`), which ends the retries.
fn retry_delay(retry_after: Option<&str>, retry: u32) -> Option<Duration> {
    let delay_ms = match retry_after {
        None => 500.0 * 2f64.powi(retry as i32),
        Some(v) => match js_parse_float(v) {
            Some(seconds) => seconds * 1000.0,
            None => http_date_ms(v).map_or(f64::NAN, |at| at - now_ms()),
        },
    };
    if !delay_ms.is_finite() {
        return None;
    }
    Duration::try_from_secs_f64(delay_ms.max(0.0) / 1000.0).ok()
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// JavaScript's `parseFloat`: the longest numeric prefix after leading white space (`None` for
/// `NaN`).
fn js_parse_float(s: &str) -> Option<f64> {
    let t = s.trim_start();
    let signless = t.strip_prefix(['+', '-']).unwrap_or(t);
    if signless.starts_with("Infinity") {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    let b = t.as_bytes();
    let mut end = usize::from(t.len() != signless.len());
    let digits = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let int_end = digits(end);
    let mut mantissa = int_end > end;
    end = int_end;
    if b.get(end) == Some(&b'.') {
        let frac_end = digits(end + 1);
        mantissa |= frac_end > end + 1;
        end = frac_end;
    }
    if !mantissa {
        return None;
    }
    if matches!(b.get(end), Some(b'e' | b'E')) {
        let mut i = end + 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp_end = digits(i);
        if exp_end > i {
            end = exp_end;
        }
    }
    t[..end].parse().ok()
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`, the `retry-after` date form) as epoch ms.
fn http_date_ms(s: &str) -> Option<f64> {
    let rest = s.trim().split_once(", ").map_or(s.trim(), |(_, r)| r);
    let parts: Vec<&str> = rest.split_whitespace().collect();
    let [day, month, year, time, zone] = parts[..] else {
        return None;
    };
    if zone != "GMT" && zone != "UTC" {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let day: i64 = day.parse().ok()?;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, sec] = hms[..] else {
        return None;
    };
    // Out of range (an absurd year) would overflow the arithmetic below.
    if !(0..=9999).contains(&year)
        || !(1..=31).contains(&day)
        || !(0..=24).contains(&h)
        || !(0..=59).contains(&m)
        || !(0..=60).contains(&sec)
    {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + m * 60 + sec) * 1000) as f64)
}

/// Why enabling one model gave up.
enum EnableError {
    /// Still rate-limited after the retries: the batch stops.
    RateLimited,
}

/// pi's `enableGitHubCopilotModel`: `Ok(true)` when the policy update succeeded.
fn enable_model(
    token: &str,
    model_id: &str,
    domain: Option<&str>,
    env: Env,
) -> Result<bool, EnableError> {
    let base = base_url(token, domain);
    let url = client::endpoint(&format!("{base}/models/{model_id}/policy"), env);
    let bearer = format!("Bearer {token}");
    let mut headers = vec![("Authorization", bearer.as_str())];
    headers.extend(HEADERS);
    headers.push(("openai-intent", "chat-policy"));
    headers.push(("x-interaction-type", "chat-policy"));
    let resp = match send_with_rate_limit_retry(
        &url,
        &headers,
        Some(r#"{"state":"enabled"}"#),
        LOGIN_RETRY,
        // The retry budget bounds the request; pi sets no other limit.
        Instant::now() + LOGIN_RETRY.max_elapsed,
    ) {
        Ok(r) => r,
        // A request that failed or timed out only skips this model.
        Err(_) => return Ok(false),
    };
    if resp.status == 429 {
        return Err(EnableError::RateLimited);
    }
    Ok(resp.ok())
}

/// pi's `enableGitHubCopilotModels`: the ids whose policy update succeeded, in order.
pub(crate) fn enable_models(
    token: &str,
    model_ids: &[String],
    domain: Option<&str>,
    env: Env,
) -> Vec<String> {
    let mut enabled = Vec::new();
    for id in model_ids {
        match enable_model(token, id, domain, env) {
            Ok(true) => enabled.push(id.clone()),
            Ok(false) => {}
            Err(EnableError::RateLimited) => break,
        }
    }
    enabled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_values() {
        assert_eq!(js_parse_float("2"), Some(2.0));
        assert_eq!(js_parse_float(" 1.5s"), Some(1.5));
        assert_eq!(js_parse_float("1e3"), Some(1000.0));
        assert_eq!(js_parse_float(".5"), Some(0.5));
        assert_eq!(js_parse_float("-1"), Some(-1.0));
        assert_eq!(js_parse_float("Infinity"), Some(f64::INFINITY));
        assert_eq!(js_parse_float("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(js_parse_float("."), None);
        assert_eq!(
            http_date_ms("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(1_445_412_480_000.0)
        );
        assert_eq!(http_date_ms("Thu, 01 Jan 1970 00:00:01 GMT"), Some(1000.0));
        assert_eq!(http_date_ms("soon"), None);
        // An absurd year overflowed the day arithmetic.
        assert_eq!(
            http_date_ms("Thu, 01 Jan 9223372036854775807 00:00:00 GMT"),
            None
        );
    }

    /// `retry-after: 1e20` panicked in `Duration::from_secs_f64`.
    #[test]
    fn a_huge_retry_after_ends_the_retries() {
        assert_eq!(retry_delay(Some("1e20"), 0), None);
        assert_eq!(retry_delay(Some("Infinity"), 0), None);
        assert_eq!(retry_delay(Some("2"), 0), Some(Duration::from_secs(2)));
        assert_eq!(retry_delay(Some("-3"), 0), Some(Duration::ZERO));
        assert_eq!(retry_delay(None, 2), Some(Duration::from_millis(2000)));
    }
}
