//! Where a Bedrock request goes and how it is authenticated (providers-catalog.md §4.1): the
//! region (ARN > `AWS_REGION` > `AWS_DEFAULT_REGION` > the catalog endpoint's region > the
//! profile's region > `us-east-1`), the endpoint, and bearer or SigV4 credentials from the
//! environment or the shared `~/.aws` files, as pi configures the AWS SDK.
//!
//! pi reads its own settings (`AWS_REGION`, `AWS_BEARER_TOKEN_BEDROCK`, the access keys, …)
//! from the stored `auth.json` `env` of `amazon-bedrock` first, then the process environment
//! ([`AwsEnv`]); a stored `AWS_PROFILE` is an explicit profile that wins over access keys in
//! the environment. The SDK's own sources read the process environment only.
//!
//! The SigV4 sources are tried in the order of the SDK's `defaultProvider`
//! (`@aws-sdk/credential-provider-node`): the environment's access keys, the profile
//! (`assume_role::resolve_profile`: static keys, `role_arn`, web identity,
//! `credential_process`, SSO), web identity from the environment, then the remote sources:
//! container credentials when `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` / `…_FULL_URI` is set,
//! else the EC2 instance metadata service unless `AWS_EC2_METADATA_DISABLED` is set (and not
//! `false`). A source that fails softly lets the chain go on (the SDK's `tryNextLink`); its
//! detail follows the SDK's final "Could not load credentials from any providers". Temporary
//! credentials are kept process-wide until shortly before they expire (`cache`).

use super::assume_role;
use super::cache::{self, Lookup, Resolved};
use super::profiles::SharedFiles;
use super::sigv4::AwsCredentials;
use super::sources::{self, SourceError};
use super::sts;
use crate::cancel::CancelToken;
use crate::llm::model::Model;

/// The environment lookup (the process environment in production; a map in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The two environments a Bedrock request reads: the stored `env` of the provider's
/// `auth.json` entry (pi's `options.env`) and the process environment.
pub struct AwsEnv<'a> {
    pub stored: &'a [(String, String)],
    pub process: Env<'a>,
}

impl<'a> AwsEnv<'a> {
    /// The process environment alone.
    #[cfg(test)]
    pub fn process(process: Env<'a>) -> AwsEnv<'a> {
        AwsEnv {
            stored: &[],
            process,
        }
    }

    /// pi's `getProviderEnvValue`: the stored value, else the process environment's.
    pub fn provider(&self, name: &str) -> Option<String> {
        self.stored
            .iter()
            .find(|(n, v)| n == name && !v.is_empty())
            .map(|(_, v)| v.clone())
            .or_else(|| non_empty(self.process, name))
    }

    /// The profile pi's auth flow configured (`options.env.AWS_PROFILE`).
    pub fn explicit_profile(&self) -> Option<String> {
        self.stored
            .iter()
            .find(|(n, v)| n == "AWS_PROFILE" && !v.is_empty())
            .map(|(_, v)| v.clone())
    }
}

/// How the request is authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    Bearer(String),
    SigV4(AwsCredentials),
}

/// Where the request goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The endpoint without a trailing slash (`https://bedrock-runtime.<region>.amazonaws.com`
    /// or a configured baseUrl).
    pub endpoint: String,
    pub region: String,
}

/// The SDK's error when no source gave credentials.
pub const NO_CREDENTIALS: &str = "Could not load credentials from any providers";

fn non_empty(env: Env<'_>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}
/// The region of an inference-profile ARN (`arn:aws…:bedrock:<region>:…`).
fn arn_region(id: &str) -> Option<&str> {
    let rest = id.strip_prefix("arn:aws")?;
    let rest = match rest.strip_prefix('-') {
        Some(r) => r.split_once(':')?.1,
        None => rest.strip_prefix(':')?,
    };
    let rest = rest.strip_prefix("bedrock:")?;
    let (region, _) = rest.split_once(':')?;
    let ok = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    ok.then_some(region)
}

/// The region of a standard `bedrock-runtime[-fips].<region>.amazonaws.com[.cn]` URL.
fn standard_endpoint_region(base_url: &str) -> Option<String> {
    let rest = base_url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?.to_ascii_lowercase();
    let host = host.split(':').next()?;
    let host = host.strip_suffix(".cn").unwrap_or(host);
    let host = host.strip_suffix(".amazonaws.com")?;
    let region = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let ok = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    ok.then(|| region.to_string())
}

/// Resolves the region and endpoint from the process environment (tests).
#[cfg(test)]
pub fn target(model: &Model, env: Env<'_>, home: Option<&str>) -> Result<Target, String> {
    target_in(model, &AwsEnv::process(env), home)
}

/// Resolves the region and endpoint (pi's `stream` in `bedrock-converse-stream.js`).
pub fn target_in(model: &Model, env: &AwsEnv<'_>, home: Option<&str>) -> Result<Target, String> {
    let configured = env
        .provider("AWS_REGION")
        .or_else(|| env.provider("AWS_DEFAULT_REGION"));
    let ambient_profile = non_empty(env.process, "AWS_PROFILE");
    let endpoint_region = standard_endpoint_region(&model.base_url);
    let explicit = endpoint_region.is_none() || (configured.is_none() && ambient_profile.is_none());
    let region = if let Some(r) = arn_region(&model.id) {
        r.to_string()
    } else if let Some(r) = configured {
        r
    } else if let (Some(r), true) = (endpoint_region.clone(), explicit) {
        r
    } else if ambient_profile.is_none() {
        "us-east-1".to_string()
    } else {
        // The client's region provider reads the client's profile (the explicit one first).
        let profile = env
            .explicit_profile()
            .or(ambient_profile)
            .unwrap_or_else(|| "default".into());
        SharedFiles::load(env.process, home)
            .setting(&profile, "region")
            .ok_or("Region is missing")?
    };
    let endpoint = if explicit && !model.base_url.trim().is_empty() {
        model.base_url.trim_end_matches('/').to_string()
    } else {
        let suffix = if region.starts_with("cn-") {
            "amazonaws.com.cn"
        } else {
            "amazonaws.com"
        };
        format!("https://bedrock-runtime.{region}.{suffix}")
    };
    Ok(Target { endpoint, region })
}

/// [`auth_in`] with the process environment alone and the current time (tests).
#[cfg(test)]
pub fn auth(
    api_key: Option<&str>,
    env: Env<'_>,
    home: Option<&str>,
    region: &str,
    cancel: &CancelToken,
) -> Result<Auth, String> {
    let now = crate::util::now_ms() / 1000;
    auth_in(api_key, &AwsEnv::process(env), home, region, now, cancel)
}

/// Bearer token or SigV4 credentials. `api_key` is the stored / models.json key (pi's
/// `options.apiKey`); `region` is the request's (STS's default region); `now_secs` dates the
/// STS signature. `cancel` ends the requests of the remote sources.
pub fn auth_in(
    api_key: Option<&str>,
    env: &AwsEnv<'_>,
    home: Option<&str>,
    region: &str,
    now_secs: u64,
    cancel: &CancelToken,
) -> Result<Auth, String> {
    let skip = env.provider("AWS_BEDROCK_SKIP_AUTH").as_deref() == Some("1");
    let bearer = api_key
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .or_else(|| env.provider("AWS_BEARER_TOKEN_BEDROCK"));
    if skip {
        return Ok(Auth::SigV4(AwsCredentials {
            access_key_id: "dummy-access-key".into(),
            secret_access_key: "dummy-secret-key".into(),
            session_token: None,
        }));
    }
    if let Some(token) = bearer {
        return Ok(Auth::Bearer(token));
    }
    let explicit = env.explicit_profile();
    if let (None, Some(id), Some(secret)) = (
        &explicit,
        env.provider("AWS_ACCESS_KEY_ID"),
        env.provider("AWS_SECRET_ACCESS_KEY"),
    ) {
        return Ok(Auth::SigV4(AwsCredentials {
            access_key_id: id,
            secret_access_key: secret,
            session_token: env.provider("AWS_SESSION_TOKEN"),
        }));
    }
    let process = env.process;
    let profile = explicit
        .or_else(|| non_empty(process, "AWS_PROFILE"))
        .unwrap_or_else(|| "default".into());
    let files = SharedFiles::load(process, home);
    // Settings the SDK's `loadConfig` reads use the ambient profile.
    let settings_profile = non_empty(process, "AWS_PROFILE").unwrap_or_else(|| "default".into());
    let setting = |key: &str| files.setting(&settings_profile, key);
    let sts_region = files
        .profile(&profile)
        .and_then(|p| p.get("region").cloned())
        .unwrap_or_else(|| region.to_string());
    let chain = Chain {
        env: process,
        files: &files,
        home,
        region,
        sts_region: &sts_region,
        profile: &profile,
        setting: &setting,
        now_secs,
        cancel,
    };
    let key = cache_key(&chain);
    let now_ms = crate::util::now_ms();
    let expiring = match cache::lookup(&key, now_ms) {
        Lookup::Fresh(creds) => return Ok(Auth::SigV4(creds)),
        Lookup::Expiring(creds) => Some(creds),
        Lookup::Missing => None,
    };
    match (default_chain(&chain), expiring) {
        (Ok(resolved), _) => {
            cache::store(&key, &resolved);
            Ok(Auth::SigV4(resolved.creds))
        }
        // The SDK keeps the old credentials while they are valid when a refresh fails.
        (Err(e), Some(old)) if e != SourceError::Aborted => Ok(Auth::SigV4(old)),
        (Err(e), _) => Err(e.into_text()),
    }
}

/// What the credential sources of one request read.
pub(crate) struct Chain<'a> {
    /// The process environment (the SDK's `process.env`).
    pub env: Env<'a>,
    pub files: &'a SharedFiles,
    pub home: Option<&'a str>,
    /// The request's region.
    pub region: &'a str,
    /// The region STS is asked in (the profile's `region`, else the request's).
    pub sts_region: &'a str,
    /// The profile the chain starts from.
    pub profile: &'a str,
    /// A setting of the ambient profile (instance metadata endpoint keys).
    pub setting: Env<'a>,
    pub now_secs: u64,
    pub cancel: &'a CancelToken,
}

/// The environment variables the sources read (a change gives fresh credentials).
const KEYED_VARS: &[&str] = &[
    "AWS_PROFILE",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_STS",
    "AWS_ENDPOINT_URL_SSO",
    "AWS_ENDPOINT_URL_SSO_OIDC",
];

fn cache_key(chain: &Chain<'_>) -> String {
    let mut text = format!(
        "{}\0{}\0{}\0{:?}\0{}",
        chain.profile, chain.region, chain.sts_region, chain.home, chain.files.fingerprint
    );
    for name in KEYED_VARS {
        text.push('\0');
        text.push_str(&(chain.env)(name).unwrap_or_default());
    }
    super::sigv4::sha256_hex(text.as_bytes())
}

/// The SDK's `defaultProvider` after the environment's keys: the profile, web identity from
/// the environment, the remote sources.
fn default_chain(chain: &Chain<'_>) -> Result<Resolved, SourceError> {
    let mut detail = String::new();
    let mut note = |e: SourceError| match e {
        SourceError::Failed(d) => {
            if detail.is_empty() {
                detail = d;
            }
            Ok(())
        }
        other => Err(other),
    };
    match assume_role::resolve_profile(chain, chain.profile, &[], false) {
        Ok(r) => return Ok(r),
        Err(e) => note(e)?,
    }
    let env = chain.env;
    if let (Some(file), Some(role)) = (
        non_empty(env, "AWS_WEB_IDENTITY_TOKEN_FILE"),
        non_empty(env, "AWS_ROLE_ARN"),
    ) {
        let session = non_empty(env, "AWS_ROLE_SESSION_NAME")
            .unwrap_or_else(|| format!("aws-sdk-js-session-{}", crate::util::now_ms()));
        let endpoint = sts::endpoint(env, chain.region);
        return sts::assume_role_with_web_identity(&file, &role, &session, &endpoint, chain.cancel);
    }
    match remote(chain) {
        Ok(r) => return Ok(r),
        Err(e) => note(e)?,
    }
    Err(SourceError::Failed(detail))
}

/// The SDK's `remoteProvider`: container credentials when their URI is set, else instance
/// metadata unless disabled.
fn remote(chain: &Chain<'_>) -> Result<Resolved, SourceError> {
    let env = chain.env;
    let container = [
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .any(|name| non_empty(env, name).is_some());
    if container {
        return sources::from_container(env, chain.cancel);
    }
    let disabled = non_empty(env, "AWS_EC2_METADATA_DISABLED").is_some_and(|v| v != "false");
    if disabled {
        return Err(SourceError::Failed(String::new()));
    }
    // Off EC2 this is the common end of the chain: pi's error is the SDK's text alone.
    sources::from_instance_metadata(env, chain.setting, chain.cancel).map_err(|e| match e {
        SourceError::Failed(_) => SourceError::Failed(String::new()),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |n| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        }
    }

    fn model(id: &str, base_url: &str) -> Model {
        Model {
            id: id.into(),
            base_url: base_url.into(),
            ..Model::default()
        }
    }

    const CATALOG: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

    #[test]
    fn regions_and_endpoints() {
        let t = |id: &str, base: &str, vars: &[(&str, &str)]| {
            let e = env(vars);
            let t = target(&model(id, base), &e, None).unwrap();
            (t.region, t.endpoint)
        };
        assert_eq!(
            t("m", CATALOG, &[]),
            ("us-east-1".into(), CATALOG.to_string())
        );
        assert_eq!(
            t("m", CATALOG, &[("AWS_REGION", "eu-west-1")]),
            (
                "eu-west-1".into(),
                "https://bedrock-runtime.eu-west-1.amazonaws.com".into()
            )
        );
        assert_eq!(
            t("m", CATALOG, &[("AWS_DEFAULT_REGION", "cn-north-1")]),
            (
                "cn-north-1".into(),
                "https://bedrock-runtime.cn-north-1.amazonaws.com.cn".into()
            )
        );
        assert_eq!(
            t(
                "arn:aws:bedrock:ap-south-1:123:application-inference-profile/x",
                CATALOG,
                &[("AWS_REGION", "eu-west-1")]
            ),
            (
                "ap-south-1".into(),
                "https://bedrock-runtime.ap-south-1.amazonaws.com".into()
            )
        );
        // A proxy baseUrl is always used; the region still comes from the environment.
        assert_eq!(
            t("m", "http://127.0.0.1:9/", &[("AWS_REGION", "us-west-2")]),
            ("us-west-2".into(), "http://127.0.0.1:9".into())
        );
        assert_eq!(
            t("m", "http://127.0.0.1:9", &[]),
            ("us-east-1".into(), "http://127.0.0.1:9".into())
        );
        assert_eq!(
            arn_region("arn:aws-us-gov:bedrock:us-gov-west-1:1:x"),
            Some("us-gov-west-1")
        );
        assert_eq!(arn_region("us.anthropic.claude"), None);
    }

    #[test]
    fn credential_sources_in_pi_order() {
        let e = env(&[
            ("AWS_BEARER_TOKEN_BEDROCK", "tok"),
            ("AWS_ACCESS_KEY_ID", "a"),
        ]);
        assert_eq!(
            auth(None, &e, None, "us-east-1", &CancelToken::new()),
            Ok(Auth::Bearer("tok".into()))
        );
        assert_eq!(
            auth(Some("stored"), &e, None, "us-east-1", &CancelToken::new()),
            Ok(Auth::Bearer("stored".into()))
        );
        let e = env(&[
            ("AWS_BEARER_TOKEN_BEDROCK", "tok"),
            ("AWS_BEDROCK_SKIP_AUTH", "1"),
        ]);
        assert!(
            matches!(auth(None, &e, None, "us-east-1", &CancelToken::new()), Ok(Auth::SigV4(c)) if c.access_key_id == "dummy-access-key")
        );
        let e = env(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "SECRET"),
            ("AWS_SESSION_TOKEN", "TOKEN"),
            ("AWS_PROFILE", "other"),
        ]);
        assert_eq!(
            auth(None, &e, None, "us-east-1", &CancelToken::new()),
            Ok(Auth::SigV4(AwsCredentials {
                access_key_id: "AKID".into(),
                secret_access_key: "SECRET".into(),
                session_token: Some("TOKEN".into()),
            }))
        );
        assert_eq!(
            auth(
                None,
                &env(&[("AWS_EC2_METADATA_DISABLED", "true")]),
                None,
                "us-east-1",
                &CancelToken::new()
            ),
            Err(NO_CREDENTIALS.into())
        );
    }

    #[test]
    fn profiles_from_the_shared_files() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-aws-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        std::fs::write(
            dir.join(".aws/credentials"),
            "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n[work]\n# c\naws_access_key_id=W\naws_secret_access_key = WS\naws_session_token = WT\n",
        )
        .unwrap();
        std::fs::write(
            dir.join(".aws/config"),
            "[profile work]\nregion = eu-central-1\n[profile sso]\nsso_session = s\n",
        )
        .unwrap();
        let home = dir.to_string_lossy().into_owned();
        let e = env(&[("AWS_PROFILE", "work")]);
        assert_eq!(
            auth(None, &e, Some(&home), "us-east-1", &CancelToken::new()),
            Ok(Auth::SigV4(AwsCredentials {
                access_key_id: "W".into(),
                secret_access_key: "WS".into(),
                session_token: Some("WT".into()),
            }))
        );
        let t = target(&model("m", CATALOG), &e, Some(&home)).unwrap();
        assert_eq!(t.region, "eu-central-1");
        assert_eq!(
            t.endpoint,
            "https://bedrock-runtime.eu-central-1.amazonaws.com"
        );
        let d = auth(
            None,
            &env(&[]),
            Some(&home),
            "us-east-1",
            &CancelToken::new(),
        );
        assert!(matches!(d, Ok(Auth::SigV4(c)) if c.access_key_id == "D"));
        // An SSO profile whose session is not configured ends the chain (no request made).
        let e = env(&[("AWS_PROFILE", "sso")]);
        let err = auth(None, &e, Some(&home), "us-east-1", &CancelToken::new()).unwrap_err();
        assert_eq!(
            err,
            "Sso session 's' could not be found in shared credentials file."
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
