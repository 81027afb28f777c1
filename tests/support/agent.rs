//! Spawns the real `pi-rpc` binary in a temp cwd with a temp agent dir, writes command lines to
//! its stdin, and waits for stdout records that match a pattern (subset match) with a timeout.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use serde_json::{json, Value};

use super::tempdir::TempDir;

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// A models.json with one provider `mock` (anthropic-messages) and two models, like the
/// conformance scenarios use. `base_url` is where the scripted server listens.
pub fn mock_models_json(base_url: &str) -> Value {
    json!({"providers": {"mock": {
    "baseUrl": base_url, "api": "anthropic-messages", "apiKey": "test-key",
    "models": [
        {"id": "mock-sonnet", "name": "Mock Sonnet", "reasoning": true, "input": ["text", "image"],
         "contextWindow": 200000, "maxTokens": 8192,
         "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}},
        {"id": "mock-haiku", "name": "Mock Haiku", "reasoning": false, "input": ["text"],
         "contextWindow": 100000, "maxTokens": 4096,
         "cost": {"input": 1, "output": 5, "cacheRead": 0.1, "cacheWrite": 1.25}}
    ]}}})
}

pub struct AgentBuilder {
    args: Vec<String>,
    env: Vec<(String, String)>,
    models: Option<Value>,
    settings: Option<Value>,
    agent_files: Vec<(String, String)>,
    cwd_files: Vec<(String, String)>,
    default_args: bool,
    cwd: Option<PathBuf>,
    file_size_limit: Option<u64>,
}

impl Default for AgentBuilder {
    fn default() -> Self {
        AgentBuilder {
            args: Vec::new(),
            env: Vec::new(),
            models: Some(mock_models_json("http://127.0.0.1:9")),
            settings: None,
            agent_files: Vec::new(),
            cwd_files: Vec::new(),
            default_args: true,
            cwd: None,
            file_size_limit: None,
        }
    }
}

impl AgentBuilder {
    /// Extra command-line arguments (after `--mode rpc`).
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
    /// Without `--provider mock --model mock-sonnet --no-session`.
    pub fn no_default_args(mut self) -> Self {
        self.default_args = false;
        self
    }
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
    /// `None` writes no models.json at all.
    pub fn models(mut self, models: Option<Value>) -> Self {
        self.models = models;
        self
    }
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = Some(settings);
        self
    }
    pub fn agent_file(mut self, rel: &str, content: &str) -> Self {
        self.agent_files.push((rel.into(), content.into()));
        self
    }
    pub fn cwd_file(mut self, rel: &str, content: &str) -> Self {
        self.cwd_files.push((rel.into(), content.into()));
        self
    }

    /// Runs in this existing directory instead of a fresh `cwd/` (e.g. another agent's cwd, to
    /// find its sessions again). The directory is not removed afterwards.
    pub fn in_cwd(mut self, cwd: &std::path::Path) -> Self {
        self.cwd = Some(cwd.to_path_buf());
        self
    }

    /// Runs the binary with `RLIMIT_FSIZE` set to `blocks` × 512 bytes and `SIGXFSZ` ignored
    /// (through `sh`'s `ulimit -f` and `trap`): a write past the limit then fails with `EFBIG`
    /// after writing what fits, as a full disk fails one with `ENOSPC`.
    pub fn file_size_limit(mut self, blocks: u64) -> Self {
        self.file_size_limit = Some(blocks);
        self
    }

    pub fn spawn(self) -> Agent {
        let root = TempDir::new("agent");
        let cwd = self.cwd.clone().unwrap_or_else(|| root.path().join("cwd"));
        let agent_dir = root.path().join("agent");
        let home = root.path().join("home");
        let tmp = root.path().join("tmp");
        for d in [&cwd, &agent_dir, &home, &tmp] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        if let Some(m) = &self.models {
            std::fs::write(agent_dir.join("models.json"), m.to_string()).expect("models.json");
        }
        if let Some(s) = &self.settings {
            std::fs::write(agent_dir.join("settings.json"), s.to_string()).expect("settings");
        }
        // `{{AGENT_DIR}}` and `{{CWD}}` in file contents name the directories of this run (as in
        // the conformance scenarios), e.g. for extension manifests that need absolute paths.
        let expand = |content: &str| {
            content
                .replace("{{AGENT_DIR}}", &agent_dir.to_string_lossy())
                .replace("{{CWD}}", &cwd.to_string_lossy())
        };
        for (rel, content) in &self.agent_files {
            root.write(&format!("agent/{rel}"), &expand(content));
        }
        for (rel, content) in &self.cwd_files {
            let p = cwd.join(rel);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("create parent");
            }
            std::fs::write(&p, expand(content)).expect("write cwd file");
        }
        let mut cmd = match self.file_size_limit {
            None => Command::new(crate::support::outside::pi_rpc_bin()),
            Some(blocks) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!(
                        "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
                    ))
                    .arg(crate::support::outside::pi_rpc_bin());
                sh
            }
        };
        cmd.arg("--mode").arg("rpc");
        if self.default_args {
            cmd.args([
                "--provider",
                "mock",
                "--model",
                "mock-sonnet",
                "--no-session",
            ]);
        }
        cmd.args(&self.args)
            .current_dir(&cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("TMPDIR", &tmp)
            .env("PI_CODING_AGENT_DIR", &agent_dir)
            .env("PI_OFFLINE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn pi-rpc");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = unbounded();
        std::thread::spawn(move || {
            let reader = BufReader::new(stdout);
            for line in reader.split(b'\n') {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let err_buf = Arc::new(Mutex::new(String::new()));
        let err_clone = Arc::clone(&err_buf);
        std::thread::spawn(move || {
            let mut s = String::new();
            let mut r = BufReader::new(stderr);
            let _ = r.read_to_string(&mut s);
            err_clone.lock().unwrap().push_str(&s);
        });
        Agent {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            records: Vec::new(),
            raw_lines: Vec::new(),
            cursor: 0,
            stderr: err_buf,
            cwd,
            agent_dir,
            root,
        }
    }
}

pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    /// Every record seen so far, in order.
    pub records: Vec<Value>,
    /// The raw stdout lines (for byte-level checks).
    pub raw_lines: Vec<Vec<u8>>,
    cursor: usize,
    stderr: Arc<Mutex<String>>,
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub root: TempDir,
}

/// True when every key of `pattern` is in `value` with a matching value (recursively).
pub fn subset_match(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::Object(p), Value::Object(v)) => p
            .iter()
            .all(|(k, pv)| v.get(k).is_some_and(|vv| subset_match(pv, vv))),
        _ => pattern == value,
    }
}

impl Agent {
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// Started with the defaults (mock provider, mock-sonnet, --no-session).
    pub fn spawn() -> Agent {
        AgentBuilder::default().spawn()
    }

    pub fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    /// Writes `text` plus a newline.
    pub fn send_raw(&mut self, text: &str) {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(b'\n');
        self.send_bytes(&bytes);
    }

    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    fn pump(&mut self, deadline: Instant) -> bool {
        let now = Instant::now();
        if now >= deadline {
            return false;
        }
        match self.lines.recv_timeout(deadline - now) {
            Ok(line) => {
                let v: Value = serde_json::from_slice(&line).unwrap_or_else(|e| {
                    panic!(
                        "stdout line is not JSON ({e}): {:?}\nstderr: {}",
                        String::from_utf8_lossy(&line),
                        self.stderr()
                    )
                });
                self.raw_lines.push(line);
                self.records.push(v);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(5));
                false
            }
        }
    }

    /// Waits for the next record (after the cursor) matching `pattern`; advances the cursor.
    pub fn wait_for(&mut self, pattern: Value) -> Value {
        self.wait_for_timeout(pattern, DEFAULT_TIMEOUT)
    }

    pub fn wait_for_timeout(&mut self, pattern: Value, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            while self.cursor < self.records.len() {
                let i = self.cursor;
                self.cursor += 1;
                if subset_match(&pattern, &self.records[i]) {
                    return self.records[i].clone();
                }
            }
            if !self.pump(deadline) && Instant::now() >= deadline {
                panic!(
                    "timed out waiting for {pattern}\nrecords: {:#?}\nstderr: {}",
                    self.records,
                    self.stderr()
                );
            }
        }
    }

    /// Waits for the response with `id` and moves the cursor past it (never back): a
    /// `wait_for` then sees only what came after that response.
    pub fn seek_past_response(&mut self, id: &str) {
        self.response(id);
        let pattern = json!({"type": "response", "id": id});
        if let Some(i) = self.records.iter().position(|r| subset_match(&pattern, r)) {
            self.cursor = self.cursor.max(i + 1);
        }
    }

    /// Sends `cmd` with `id` and waits for the response carrying that id.
    pub fn request(&mut self, id: &str, mut cmd: Value) -> Value {
        cmd["id"] = json!(id);
        self.send(cmd);
        self.response(id)
    }

    /// Waits for the response with `id` (searched from the start; the cursor is left alone).
    pub fn response(&mut self, id: &str) -> Value {
        let pattern = json!({"type": "response", "id": id});
        let deadline = Instant::now() + DEFAULT_TIMEOUT;
        let mut i = 0;
        loop {
            while i < self.records.len() {
                if subset_match(&pattern, &self.records[i]) {
                    return self.records[i].clone();
                }
                i += 1;
            }
            if !self.pump(deadline) && Instant::now() >= deadline {
                panic!(
                    "timed out waiting for response {id}\nrecords: {:#?}\nstderr: {}",
                    self.records,
                    self.stderr()
                );
            }
        }
    }

    /// Collects records until none arrives for `quiet`.
    pub fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let start = self.records.len();
        while self.pump(Instant::now() + quiet) {}
        self.records[start..].to_vec()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits for the process to exit, collecting the rest of stdout.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                while self.pump(Instant::now() + Duration::from_millis(50)) {}
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!("pi-rpc did not exit in time; stderr: {}", self.stderr());
            }
            self.pump(Instant::now() + Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
