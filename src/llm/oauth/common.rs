//! What every refresh and login step shares: the request context and the entry builder.

use std::time::Instant;

use serde_json::{Map, Value};

use super::client::{self, Body, Env, NetError, Response};

/// What a refresh needs besides the entry.
pub struct Ctx<'a> {
    pub env: Env<'a>,
    /// The refresh's budget (15 s from its start).
    pub deadline: Instant,
    /// Epoch ms now (injectable for tests).
    pub now_ms: u64,
}

/// A JSON number as JavaScript would hold it (integral values print without `.0` anyway; this
/// keeps them integers in memory too).
pub(crate) fn num(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

pub(crate) fn oauth_entry(fields: &[(&str, Value)]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("oauth"));
    for (k, v) in fields {
        m.insert((*k).to_string(), v.clone());
    }
    m
}

/// One request to an OAuth endpoint (through the test override, within the context's
/// deadline).
pub(crate) fn call(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Body,
    ctx: &Ctx,
) -> Result<Response, NetError> {
    client::send(
        method,
        &client::endpoint(url, ctx.env),
        headers,
        body,
        ctx.deadline,
    )
}
