//! Temporary AWS credentials kept for the whole process, so a run does not ask STS, SSO, the
//! container endpoint or the instance metadata service (or run a `credential_process`) before
//! every request.
//!
//! The SDK's `defaultProvider` (`@aws-sdk/credential-provider-node`, `memoizeChain` with
//! `credentialsTreatedAsExpired`) keeps credentials until 5 minutes (300,000 ms) before their
//! expiration; inside that window it fetches new ones and keeps using the old ones when that
//! fails (they are not expired yet). pi builds a client per request, so it gets that only
//! within one request; here the entry lives as long as the process.
//!
//! Entries are keyed by everything the chain read (the explicit profile, the environment
//! variables the sources read, the shared files' digest, the region), so a change of profile,
//! environment or files gives fresh credentials. The lock is held only to copy an entry in or
//! out, never across the fetch: two requests that miss at the same time both fetch, and the
//! later answer replaces the earlier.

use parking_lot::Mutex;

use super::sigv4::AwsCredentials;

/// Credentials and, for temporary ones, their expiration (Unix milliseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub creds: AwsCredentials,
    pub expires_ms: Option<u64>,
}

impl Resolved {
    /// Long-term credentials (no expiration).
    pub fn fixed(creds: AwsCredentials) -> Resolved {
        Resolved {
            creds,
            expires_ms: None,
        }
    }
}

/// How long before their expiration credentials are fetched again (the SDK's 300,000 ms).
pub const REFRESH_WINDOW_MS: u64 = 300_000;

/// Entries kept at most (one per profile / source combination; the oldest goes first).
const MAX_ENTRIES: usize = 32;

struct Entry {
    key: String,
    creds: AwsCredentials,
    expires_ms: u64,
}

static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// What the cache has for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Valid for more than the refresh window: use them.
    Fresh(AwsCredentials),
    /// Inside the refresh window but not expired: fetch again, fall back to these.
    Expiring(AwsCredentials),
    /// Nothing usable.
    Missing,
}

/// The entry for `key` at `now_ms`.
pub fn lookup(key: &str, now_ms: u64) -> Lookup {
    let cache = CACHE.lock();
    let Some(e) = cache.iter().find(|e| e.key == key) else {
        return Lookup::Missing;
    };
    if e.expires_ms <= now_ms {
        Lookup::Missing
    } else if e.expires_ms - now_ms < REFRESH_WINDOW_MS {
        Lookup::Expiring(e.creds.clone())
    } else {
        Lookup::Fresh(e.creds.clone())
    }
}

/// Keeps temporary credentials under `key` (long-term ones are not kept: reading them again is
/// cheap and sees changes).
pub fn store(key: &str, resolved: &Resolved) {
    let Some(expires_ms) = resolved.expires_ms else {
        return;
    };
    let mut cache = CACHE.lock();
    cache.retain(|e| e.key != key);
    if cache.len() >= MAX_ENTRIES {
        cache.remove(0);
    }
    cache.push(Entry {
        key: key.to_string(),
        creds: resolved.creds.clone(),
        expires_ms,
    });
}

/// An expiration as the sources give it: an RFC 3339 time (`2030-01-01T00:00:00Z`, fractions
/// and a numeric offset allowed) in Unix milliseconds.
pub fn parse_expiration(text: &str) -> Option<u64> {
    let text = text.trim();
    let (main, offset_ms) = match text.len().checked_sub(6).and_then(|i| text.get(i..)) {
        Some(tail)
            if (tail.starts_with('+') || tail.starts_with('-')) && tail.as_bytes()[3] == b':' =>
        {
            let sign: i64 = if tail.starts_with('-') { -1 } else { 1 };
            let h: i64 = tail.get(1..3)?.parse().ok()?;
            let m: i64 = tail.get(4..6)?.parse().ok()?;
            (&text[..text.len() - 6], sign * (h * 60 + m) * 60_000)
        }
        _ => (text.strip_suffix('Z').or(text.strip_suffix('z'))?, 0),
    };
    let utc = crate::util::ms_from_iso(&format!("{main}Z"))? as i64;
    u64::try_from(utc - offset_ms).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(id: &str) -> AwsCredentials {
        AwsCredentials {
            access_key_id: id.into(),
            secret_access_key: "s".into(),
            session_token: None,
        }
    }

    #[test]
    fn entries_live_until_five_minutes_before_expiry() {
        let key = "test-entries-live";
        assert_eq!(lookup(key, 0), Lookup::Missing);
        store(
            key,
            &Resolved {
                creds: creds("A"),
                expires_ms: Some(1_000_000),
            },
        );
        assert_eq!(lookup(key, 0), Lookup::Fresh(creds("A")));
        assert_eq!(lookup(key, 699_999), Lookup::Fresh(creds("A")));
        assert_eq!(lookup(key, 700_001), Lookup::Expiring(creds("A")));
        assert_eq!(lookup(key, 1_000_000), Lookup::Missing);
        assert_eq!(lookup("test-other-key", 0), Lookup::Missing);
        // Long-term credentials are not kept.
        store("test-fixed", &Resolved::fixed(creds("B")));
        assert_eq!(lookup("test-fixed", 0), Lookup::Missing);
    }

    #[test]
    fn expirations() {
        assert_eq!(parse_expiration("1970-01-01T00:00:10Z"), Some(10_000));
        assert_eq!(parse_expiration("1970-01-01T00:00:10.250Z"), Some(10_250));
        assert_eq!(parse_expiration("1970-01-01T01:00:10+01:00"), Some(10_000));
        assert_eq!(
            parse_expiration("2030-01-01T00:00:00Z"),
            Some(1_893_456_000_000)
        );
        assert_eq!(parse_expiration("soon"), None);
    }
}
