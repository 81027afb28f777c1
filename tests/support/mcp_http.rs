//! Streamable-HTTP MCP servers for tests through the binary: `tests/support/mcp_http_server.py`
//! (Python stdlib only, the scripted server of the transport's unit tests), started on a free
//! port with a JSON config, and the requests it recorded.
//!
//! Python is an outside program: callers get the interpreter from `ext::python`, which skips the
//! test without `python3`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::run::LONG;

/// The scripted server's script.
pub fn http_server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_http_server.py")
}

/// A running `mcp_http_server.py`; killed on drop.
pub struct HttpMcpServer {
    child: Child,
    pub port: u16,
}

impl HttpMcpServer {
    /// Starts the server with `config` (the format of the script's docstring).
    pub fn start(py: &Path, config: &Value) -> HttpMcpServer {
        let mut child = Command::new(py)
            .arg(http_server_script())
            .arg(config.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start mcp_http_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("mcp_http_server.py printed {line:?}"));
        HttpMcpServer { child, port }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Every request recorded so far: `{"method","path","headers":[[name,value],…],"body"}`.
    pub fn requests(&self) -> Vec<Value> {
        let url = format!("http://127.0.0.1:{}/_control/requests", self.port);
        let text = ureq::get(&url)
            .call()
            .expect("GET /_control/requests")
            .body_mut()
            .read_to_string()
            .expect("read the requests");
        serde_json::from_str(&text).expect("requests are JSON")
    }

    /// The recorded POSTs whose JSON-RPC `method` is `method`.
    pub fn posts(&self, method: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["method"] == "POST" && r["body"]["method"] == method)
            .collect()
    }

    /// The recorded requests once `cond` holds for them (or panics after [`LONG`]).
    pub fn wait_until(&self, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + LONG;
        loop {
            let r = self.requests();
            if cond(&r) {
                return r;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; requests: {r:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HttpMcpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of header `name` (any case) of a recorded request.
pub fn header(request: &Value, name: &str) -> Option<String> {
    request["headers"].as_array()?.iter().find_map(|h| {
        let pair = h.as_array()?;
        (pair.first()?.as_str()?.eq_ignore_ascii_case(name))
            .then(|| pair.get(1)?.as_str().map(str::to_string))
            .flatten()
    })
}

/// A server config answering `initialize` (tools capability, session `session`), listing one
/// tool `ping` (`{n?: number}`) and answering every `tools/call` with the text `pong`.
pub fn ping_server_config(session: &str) -> Value {
    json!({
        "session": session,
        "methods": {
            "initialize": {"result": initialize_result()},
            "tools/list": {"result": {"tools": [ping_tool()]}},
            "tools/call": {"result": {"content": [{"type": "text", "text": "pong"}]}},
        }
    })
}

/// A valid `initialize` result with the tools capability.
pub fn initialize_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
           "serverInfo": {"name": "http-fake", "version": "1.0.0"}})
}

/// The one tool of [`ping_server_config`].
pub fn ping_tool() -> Value {
    json!({"name": "ping", "description": "Answer pong.",
           "inputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}})
}
