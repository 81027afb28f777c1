//! The MCP servers of one session (`mcp.md` §3): their connections and states, the tools they
//! offer and how those reach the model, the waits prompts and calls make, and the start-up
//! report.
//!
//! At session start every enabled server connects on a thread of its own (`mcp-connect`), all
//! at once; nothing blocks start-up. State changes wake waiters through one condition variable.
//! A server that drops keeps its tools; the next call reconnects on the calling thread. Session
//! replacement ends every connection and starts again with the configuration re-read.
//!
//! The lock guards in-memory state only: connecting, listing and calling happen without it.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::config::{McpConfig, ServerConfig, TransportConfig};
use super::conn::{Client, ConnectError, Listener, Notice, RequestError};
use super::naming::Names;
use super::state::{ConnState, Server, St, ToolFilter};
use crate::cancel::CancelToken;

/// How long the first prompt waits for servers with direct tools (§3.2).
const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// Where `/mcp` output and the start-up report go: `(message, notifyType)`. Print modes drop it.
pub(crate) type Notify = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// A provider's API key or token (`auth.provider` of HTTP servers), from the model registry.
pub(crate) type ProviderToken = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What the service needs from the session.
#[derive(Clone)]
pub(crate) struct McpOptions {
    pub agent_dir: PathBuf,
    pub cwd: PathBuf,
    pub project_trusted: bool,
    pub home: Option<PathBuf>,
    pub filter: ToolFilter,
    /// Set when the mode starts the extensions (the registry exists then).
    pub provider_token: Option<ProviderToken>,
}

impl std::fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOptions")
            .field("agent_dir", &self.agent_dir)
            .field("cwd", &self.cwd)
            .field("project_trusted", &self.project_trusted)
            .field("filter", &self.filter)
            .finish_non_exhaustive()
    }
}

/// Connections held back: the session's generation and `(server, attempt)`s.
type Held = (u64, Vec<(String, u64)>);

/// The MCP servers of the current session.
pub(crate) struct Mcp {
    pub(crate) opts: McpOptions,
    pub(crate) notify: Notify,
    pub(crate) st: Mutex<St>,
    pub(crate) changed: Condvar,
    pub(crate) me: Weak<Mcp>,
    /// Start-up connections not started yet: the session's generation and `(server,
    /// attempt)`s. The mode starts them once its own threads run ([`Mcp::connect_held`]), so
    /// forking servers does not delay the first answers.
    held: Mutex<Option<Held>>,
}

impl Mcp {
    /// Reads the configuration; the connections start with [`Mcp::connect_held`] (or the
    /// first wait for a server).
    pub(crate) fn start(opts: McpOptions, notify: Notify) -> Arc<Mcp> {
        let cwd = opts.cwd.clone();
        let mcp = Arc::new_cyclic(|me| Mcp {
            opts,
            notify,
            st: Mutex::new(St {
                generation: 0,
                config: McpConfig::default(),
                servers: Vec::new(),
                names: Names::default(),
                registered: Vec::new(),
                order: Vec::new(),
                loaded: Vec::new(),
                startup_pending: 0,
                startup_done: false,
                waited_direct: false,
                cwd: cwd.clone(),
            }),
            changed: Condvar::new(),
            me: me.clone(),
            held: Mutex::new(None),
        });
        mcp.open_session(cwd, true);
        mcp
    }

    /// A new session (after a replacement): the configuration is read again and every enabled
    /// server connects.
    pub(crate) fn begin_session(&self, cwd: PathBuf) {
        self.open_session(cwd, false);
    }

    /// Starts the connections [`Mcp::start`] held back. Idempotent.
    pub(crate) fn connect_held(&self) {
        let held = self.held.lock().take();
        if let Some((generation, starts)) = held {
            self.spawn_connects(generation, starts);
        }
    }

    fn open_session(&self, cwd: PathBuf, hold: bool) {
        let config = super::config::load(
            &self.opts.agent_dir,
            &cwd,
            self.opts.project_trusted,
            self.opts.home.as_deref(),
        );
        let mut starts = Vec::new();
        let report_now;
        {
            let mut st = self.st.lock();
            st.generation += 1;
            st.cwd = cwd;
            st.names = Names::default();
            st.registered.clear();
            st.order.clear();
            st.loaded.clear();
            st.waited_direct = false;
            st.servers = config
                .servers
                .iter()
                .map(|cfg| Server {
                    cfg: cfg.clone(),
                    state: if cfg.enabled {
                        ConnState::Connecting
                    } else {
                        ConnState::Disabled
                    },
                    error: None,
                    client: None,
                    tools: Vec::new(),
                    has_resources: false,
                    instructions: None,
                    attempt: 1,
                    busy: cfg.enabled,
                })
                .collect();
            st.config = config;
            for s in st.servers.iter().filter(|s| s.cfg.enabled) {
                starts.push((s.cfg.name.clone(), s.attempt));
            }
            st.startup_pending = starts.len();
            st.startup_done = false;
            report_now = starts.is_empty();
        }
        // Tools that neither `tool_search` nor a codemode sandbox can reach (§6.1): said
        // once per session, at its start.
        if self.with_state(super::registry::unreachable_tools) {
            (self.notify)(
                "MCP tools are only reachable from the codemode or tool_search tool, but neither is active (autoEnableCodemode is false); they cannot be called.",
                "warning",
            );
        }
        if report_now {
            self.report_problems();
            self.st.lock().startup_done = true;
        }
        let generation = self.st.lock().generation;
        if hold {
            *self.held.lock() = Some((generation, starts));
        } else {
            self.spawn_connects(generation, starts);
        }
    }

    fn spawn_connects(&self, generation: u64, starts: Vec<(String, u64)>) {
        for (name, attempt) in starts {
            let me = self.me.clone();
            let spawned = std::thread::Builder::new()
                .name("mcp-connect".into())
                .spawn(move || {
                    if let Some(mcp) = me.upgrade() {
                        let _ = mcp.connect(&name, generation, attempt, true);
                    }
                });
            if let Err(e) = spawned {
                self.settle_failed(
                    &self
                        .st
                        .lock()
                        .servers
                        .iter()
                        .map(|s| s.cfg.name.clone())
                        .collect::<Vec<_>>(),
                    generation,
                    &format!("cannot start a thread: {e}"),
                );
            }
        }
    }

    fn settle_failed(&self, names: &[String], generation: u64, error: &str) {
        let mut st = self.st.lock();
        if st.generation != generation {
            return;
        }
        for s in st
            .servers
            .iter_mut()
            .filter(|s| names.contains(&s.cfg.name))
        {
            s.state = ConnState::Failed;
            s.error = Some(error.to_string());
            s.busy = false;
        }
        st.startup_pending = 0;
        st.startup_done = true;
        self.changed.notify_all();
    }

    /// Ends every connection (session shutdown or replacement).
    pub(crate) fn end_session(&self) {
        self.held.lock().take();
        let clients: Vec<Arc<Client>> = {
            let mut st = self.st.lock();
            st.generation += 1;
            // Nobody waits for a start-up that will not finish.
            st.startup_done = true;
            let clients = st.servers.iter_mut().filter_map(|s| {
                s.state = ConnState::Closed;
                s.busy = false;
                s.client.take()
            });
            let clients = clients.collect();
            st.servers.clear();
            clients
        };
        self.changed.notify_all();
        for c in clients {
            c.close();
        }
    }

    /// One connect attempt for `name` (§3.1, §3.4): on success its tools are registered.
    /// `startup` marks the attempts whose end the start-up report waits for.
    pub(crate) fn connect(
        &self,
        name: &str,
        generation: u64,
        attempt: u64,
        startup: bool,
    ) -> Result<Arc<Client>, String> {
        let (cfg, cwd) = {
            let st = self.st.lock();
            match st.servers.iter().find(|s| s.cfg.name == name) {
                Some(s) if st.generation == generation => (s.cfg.clone(), st.cwd.clone()),
                _ => return Err(format!("MCP server \"{name}\" is shut down")),
            }
        };
        let outcome = self.open(&cfg, &cwd, generation, attempt);
        let mut report = false;
        let result = {
            let mut st = self.st.lock();
            let current = st.generation == generation;
            let result = match st.servers.iter_mut().find(|s| s.cfg.name == name) {
                Some(s) if current && s.attempt == attempt => {
                    s.busy = false;
                    match outcome {
                        Ok((client, tools)) => {
                            let client = Arc::new(client);
                            s.has_resources = client.info.capabilities.get("resources").is_some();
                            s.instructions = client.info.instructions.clone();
                            s.tools = tools;
                            s.state = ConnState::Connected;
                            s.error = None;
                            s.client = Some(Arc::clone(&client));
                            Ok(client)
                        }
                        Err(e) if super::state::needs_sign_in(&s.cfg, &e.message) => {
                            s.state = ConnState::NeedsAuth;
                            s.error = None;
                            Err(super::state::sign_in_required(&s.cfg))
                        }
                        Err(e) => {
                            s.state = ConnState::Failed;
                            let error = match e.stderr {
                                Some(tail) => format!("{}\n{tail}", e.message),
                                None => e.message,
                            };
                            s.error = Some(error.clone());
                            Err(format!("MCP server \"{name}\" failed to connect: {error}"))
                        }
                    }
                }
                _ => {
                    if let Ok((client, _)) = outcome {
                        client.close();
                    }
                    Err(format!("MCP server \"{name}\" is shut down"))
                }
            };
            if result.is_ok() {
                super::registry::register_server_tools(&mut st, name, &self.opts.filter);
            }
            if startup && current {
                st.startup_pending = st.startup_pending.saturating_sub(1);
                report = st.startup_pending == 0;
            }
            result
        };
        if report {
            // Written before anyone waiting for the start-up hears of it (`/mcp` output comes
            // after the report, as in pi).
            self.report_problems();
            self.st.lock().startup_done = true;
        }
        self.changed.notify_all();
        result
    }

    /// Opens the transport, runs the handshake and lists the tools.
    fn open(
        &self,
        cfg: &ServerConfig,
        cwd: &std::path::Path,
        generation: u64,
        attempt_no: u64,
    ) -> Result<(Client, Vec<Value>), ConnectError> {
        let fail = |message: String| ConnectError {
            message,
            stderr: None,
        };
        let listener = self.listener(&cfg.name, generation, attempt_no);
        match &cfg.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd: dir,
            } => {
                let env = super::expand::resolve_values(&cfg.name, "env", env).map_err(fail)?;
                let (command, args, dir) = (command.clone(), args.clone(), dir.clone());
                let client = Client::connect(
                    move |sink| {
                        super::stdio::StdioTransport::spawn(&command, &args, &env, &dir, sink)
                            .map(|t| Arc::new(t) as Arc<dyn super::transport::Transport>)
                    },
                    cfg.timeout,
                    cwd,
                    listener,
                )?;
                list_tools(client)
            }
            TransportConfig::Http {
                url,
                headers,
                auth_provider,
                ..
            } => {
                let headers =
                    super::expand::resolve_values(&cfg.name, "header", headers).map_err(fail)?;
                // `auth.provider`: that provider's key or token as the bearer, read at every
                // connect so refreshed credentials apply.
                let bearer = auth_provider
                    .as_deref()
                    .and_then(|p| self.opts.provider_token.as_ref().and_then(|f| f(p)));
                // A connect (handshake and listing) that fails transiently (network, 408, 429,
                // 5xx but 501) is tried again after 250 ms and 1 s (§3.4).
                let mut delays = [250u64, 1000].into_iter();
                loop {
                    let (url, headers, bearer) = (url.clone(), headers.clone(), bearer.clone());
                    let attempt = Client::connect(
                        move |sink| {
                            Ok(Arc::new(super::http::HttpTransport::open(
                                &url, headers, bearer, sink,
                            ))
                                as Arc<dyn super::transport::Transport>)
                        },
                        cfg.timeout,
                        cwd,
                        Arc::clone(&listener),
                    )
                    .and_then(list_tools);
                    match attempt {
                        Err(e) if super::http::is_transient_failure(&e.message) => {
                            match delays.next() {
                                Some(ms) if self.is_current(generation, &cfg.name, attempt_no) => {
                                    std::thread::sleep(Duration::from_millis(ms));
                                }
                                _ => return Err(e),
                            }
                        }
                        other => return other,
                    }
                }
            }
        }
    }

    /// Whether `attempt` is still the current connect attempt of server `name`.
    fn is_current(&self, generation: u64, name: &str, attempt: u64) -> bool {
        let st = self.st.lock();
        st.generation == generation
            && st
                .servers
                .iter()
                .any(|s| s.cfg.name == name && s.attempt == attempt)
    }

    /// What a connection reports, for the server `name` of this attempt.
    fn listener(&self, name: &str, generation: u64, attempt: u64) -> Listener {
        let me = self.me.clone();
        let name = name.to_string();
        Arc::new(move |notice| {
            let Some(mcp) = me.upgrade() else { return };
            match notice {
                Notice::Closed => mcp.dropped(&name, generation, attempt),
                Notice::ToolsChanged => {
                    // Refreshing needs a request whose answer this very thread reads.
                    let me = mcp.me.clone();
                    let name = name.clone();
                    let _ = std::thread::Builder::new()
                        .name("mcp-refresh".into())
                        .spawn(move || {
                            if let Some(mcp) = me.upgrade() {
                                mcp.refresh_tools(&name, generation, attempt);
                            }
                        });
                }
                Notice::Log(params) => {
                    super::log::write(&mcp.opts.agent_dir, &name, &params);
                }
            }
        })
    }

    /// The transport dropped after connecting (§3.4).
    fn dropped(&self, name: &str, generation: u64, attempt: u64) {
        let mut st = self.st.lock();
        if st.generation != generation {
            return;
        }
        if let Some(s) = st.servers.iter_mut().find(|s| s.cfg.name == name) {
            if s.attempt != attempt || s.state != ConnState::Connected {
                return;
            }
            let tail = s.client.take().and_then(|c| c.stderr_tail());
            s.state = ConnState::Disconnected;
            s.error = Some(match tail {
                Some(t) => format!("Connection closed\n{t}"),
                None => "Connection closed".into(),
            });
        }
        drop(st);
        self.changed.notify_all();
    }

    fn refresh_tools(&self, name: &str, generation: u64, attempt: u64) {
        let client = {
            let st = self.st.lock();
            st.servers
                .iter()
                .find(|s| s.cfg.name == name && s.attempt == attempt && st.generation == generation)
                .and_then(|s| s.client.clone())
        };
        let Some(client) = client else { return };
        let listed = client.list_all("tools/list", "tools", valid_tool, None);
        let mut st = self.st.lock();
        if st.generation != generation {
            return;
        }
        let Some(s) = st
            .servers
            .iter_mut()
            .find(|s| s.cfg.name == name && s.attempt == attempt)
        else {
            return;
        };
        match listed {
            Ok(tools) => {
                s.tools = tools;
                super::registry::register_server_tools(&mut st, name, &self.opts.filter);
            }
            Err(e) => s.error = Some(format!("Failed to refresh tools: {e}")),
        }
        drop(st);
        self.changed.notify_all();
    }

    /// The start-up report (§3.3): one warning, when there is something to report.
    fn report_problems(&self) {
        let lines: Vec<String> = {
            let st = self.st.lock();
            let mut lines: Vec<String> = st
                .config
                .errors
                .iter()
                .map(|e| format!("config: {e}"))
                .collect();
            for s in &st.servers {
                if s.state == ConnState::NeedsAuth {
                    lines.push(format!("{}: needs sign-in", s.cfg.name));
                }
                if s.state == ConnState::Failed {
                    let first = s
                        .error
                        .as_deref()
                        .unwrap_or("unknown error")
                        .split('\n')
                        .next()
                        .unwrap_or("");
                    lines.push(format!("{}: failed: {first}", s.cfg.name));
                }
            }
            lines
        };
        if lines.is_empty() {
            return;
        }
        let body: Vec<String> = lines.iter().map(|l| format!("  {l}")).collect();
        (self.notify)(
            &format!(
                "MCP servers need attention:\n{}\nRun /mcp to fix.",
                body.join("\n")
            ),
            "warning",
        );
    }

    /// Waits until no server among `pick` has a connect attempt running, the deadline passed
    /// or `cancel` fired. True when they all settled.
    pub(crate) fn wait_ready(
        &self,
        pick: impl Fn(&Server) -> bool,
        deadline: Option<Instant>,
        cancel: Option<&CancelToken>,
    ) -> bool {
        // A wait before the mode started the held connections starts them.
        self.connect_held();
        let _hook = cancel.map(|c| {
            let me = self.me.clone();
            c.on_cancel(move || {
                if let Some(m) = me.upgrade() {
                    let _g = m.st.lock();
                    m.changed.notify_all();
                }
            })
        });
        let mut st = self.st.lock();
        loop {
            if !st.servers.iter().any(|s| s.busy && pick(s)) {
                return true;
            }
            if cancel.is_some_and(CancelToken::is_cancelled) {
                return false;
            }
            match deadline {
                Some(d) => {
                    if self.changed.wait_until(&mut st, d).timed_out()
                        && st.servers.iter().any(|s| s.busy && pick(s))
                    {
                        return false;
                    }
                }
                None => self.changed.wait(&mut st),
            }
        }
    }

    /// Waits until every start-up connection attempt settled and the start-up report is out
    /// (`/mcp`'s barrier, §3.2).
    pub(crate) fn wait_startup(&self) {
        self.connect_held();
        let mut st = self.st.lock();
        while !st.startup_done {
            self.changed.wait(&mut st);
        }
    }

    /// Before a prompt (§3.2, §6.5): the session's first prompt waits up to 10 s for the servers
    /// with direct tools.
    pub(crate) fn before_prompt(&self, cancel: &CancelToken) {
        let first = {
            let mut st = self.st.lock();
            !std::mem::replace(&mut st.waited_direct, true)
        };
        if first {
            let settled = self.wait_ready(
                |s| s.cfg.enabled && s.cfg.has_direct(),
                Some(Instant::now() + STARTUP_WAIT),
                Some(cancel),
            );
            if !settled && !cancel.is_cancelled() {
                (self.notify)(
                    "MCP servers are still connecting; their tools become available once connected.",
                    "info",
                );
            }
        }
    }

    /// The connection of `server` for a call, reconnecting a dropped one (on this thread).
    pub(crate) fn client_for(
        &self,
        server: &str,
        cancel: Option<&CancelToken>,
    ) -> Result<Arc<Client>, String> {
        self.wait_ready(|s| s.cfg.name == server, None, cancel);
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err("MCP request aborted".into());
        }
        let (generation, attempt) = {
            let mut st = self.st.lock();
            let generation = st.generation;
            let Some(s) = st.servers.iter_mut().find(|s| s.cfg.name == server) else {
                return Err(format!("MCP server \"{server}\" is shut down"));
            };
            if !s.cfg.enabled {
                return Err(format!("MCP server \"{server}\" is disabled."));
            }
            if let Some(c) = s.client.as_ref().filter(|c| c.is_open()) {
                return Ok(Arc::clone(c));
            }
            s.attempt += 1;
            s.busy = true;
            s.state = ConnState::Connecting;
            (generation, s.attempt)
        };
        self.changed.notify_all();
        self.connect(server, generation, attempt, false)
    }

    /// Runs `run` on the connection of `server` (§3.4): a request the server answered with
    /// "session expired" (HTTP 404 for a known session; it did not run) is tried once more on a
    /// new session; a `read_only` one also once after a transient HTTP failure. Tool calls are
    /// otherwise never retried, since they may have run.
    pub(crate) fn with_client<T>(
        &self,
        server: &str,
        cancel: Option<&CancelToken>,
        read_only: bool,
        mut run: impl FnMut(&Client) -> Result<T, RequestError>,
    ) -> Result<T, String> {
        let mut first = true;
        loop {
            let client = self.client_for(server, cancel)?;
            match run(&client) {
                Err(RequestError::Transport(m)) if first && m == super::http::SESSION_EXPIRED => {
                    self.detach(server, &client);
                }
                Err(RequestError::Transport(m)) if self.auth_failed(server, &client, &m) => {
                    return Err(self.with_state(|st| {
                        st.servers
                            .iter()
                            .find(|s| s.cfg.name == server)
                            .map(|s| super::state::sign_in_required(&s.cfg))
                            .unwrap_or(m)
                    }));
                }
                Err(RequestError::Transport(m))
                    if first
                        && read_only
                        && super::http::failure_status(&m).is_some()
                        && super::http::is_transient_failure(&m) =>
                {
                    std::thread::sleep(Duration::from_millis(250));
                }
                other => return other.map_err(|e| e.to_string()),
            }
            first = false;
        }
    }

    /// A call met an authentication failure that asks for a sign-in: the connection is
    /// dropped and the server needs a sign-in.
    fn auth_failed(&self, server: &str, client: &Arc<Client>, message: &str) -> bool {
        let mut st = self.st.lock();
        let Some(s) = st.servers.iter_mut().find(|s| s.cfg.name == server) else {
            return false;
        };
        if !super::state::needs_sign_in(&s.cfg, message) {
            return false;
        }
        if s.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            s.client = None;
        }
        s.state = ConnState::NeedsAuth;
        s.error = None;
        drop(st);
        client.close();
        true
    }

    /// Forgets `client` as the connection of `server` without closing it (its other calls get
    /// the same answer and retry the same way); the next call connects again.
    fn detach(&self, server: &str, client: &Arc<Client>) {
        let mut st = self.st.lock();
        if let Some(s) = st.servers.iter_mut().find(|s| s.cfg.name == server) {
            if s.client.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
                s.client = None;
            }
        }
    }

    /// `/mcp reconnect`: closes the connection and opens a new one.
    pub(crate) fn reconnect(&self, server: &str) -> Result<(), String> {
        self.wait_ready(|s| s.cfg.name == server, None, None);
        let (generation, attempt, old) = {
            let mut st = self.st.lock();
            let generation = st.generation;
            let Some(s) = st.servers.iter_mut().find(|s| s.cfg.name == server) else {
                return Err(format!("MCP server \"{server}\" is shut down"));
            };
            if !s.cfg.enabled {
                return Err(format!("MCP server \"{server}\" is disabled."));
            }
            s.attempt += 1;
            s.busy = true;
            s.state = ConnState::Connecting;
            (generation, s.attempt, s.client.take())
        };
        if let Some(c) = old {
            c.close();
        }
        self.changed.notify_all();
        self.connect(server, generation, attempt, false).map(|_| ())
    }

    /// A snapshot of per-server facts for `/mcp` and the section.
    pub(crate) fn with_state<T>(&self, f: impl FnOnce(&St) -> T) -> T {
        f(&self.st.lock())
    }

    /// Marks tools as loaded by `tool_search`.
    pub(crate) fn load_tools(&self, names: &[String]) {
        let mut st = self.st.lock();
        for n in names {
            if !st.loaded.contains(n) {
                st.loaded.push(n.clone());
            }
            if !st.order.contains(n) {
                st.order.push(n.clone());
            }
        }
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let clients: Vec<Arc<Client>> = self
            .st
            .get_mut()
            .servers
            .iter_mut()
            .filter_map(|s| s.client.take())
            .collect();
        for c in clients {
            c.close();
        }
    }
}

/// The server's tools, when it has the `tools` capability (§4.3); a failure closes the client.
fn list_tools(client: Client) -> Result<(Client, Vec<Value>), ConnectError> {
    if client.info.capabilities.get("tools").is_none() {
        return Ok((client, Vec::new()));
    }
    match client.list_all("tools/list", "tools", valid_tool, None) {
        Ok(tools) => Ok((client, tools)),
        Err(e) => {
            client.close();
            Err(ConnectError {
                message: e.to_string(),
                stderr: client.stderr_tail(),
            })
        }
    }
}

/// A `tools/list` entry needs a string `name` and an object `inputSchema`.
fn valid_tool(t: &Value) -> bool {
    t.get("name").is_some_and(Value::is_string)
        && t.get("inputSchema").is_some_and(Value::is_object)
}
