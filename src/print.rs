//! Print modes (`settings.md` §5): `--mode json` and `--mode text` / `-p`. The prompts come from
//! the command line (and piped stdin, and `@file` arguments); each runs to `agent_settled`, one
//! after another, then the process exits.
//!
//! * json: the session header line, then the same event records RPC mode writes (through the
//!   same [`Output`] writer, so nothing else reaches stdout). Exit 0 once the last run settled,
//!   whatever the runs ended with; 1 when a prompt is rejected before it starts.
//! * text: nothing but the text blocks of the final assistant message (each plus a newline).
//!   An error/aborted final message prints its error on stderr and exits 1; a `length` stop
//!   prints the text, then a notice on stderr, and exits 1.
//!
//! Like pi, the first prompt is `<piped stdin, trimmed><@file contents><first message>` joined
//! without separators; every later positional message is a prompt of its own.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::agent::runtime::Runtime;
use crate::agent::state::PromptStart;
use crate::agent::AgentSession;
use crate::cli::Mode;
use crate::protocol::ImageContent;
use crate::rpc::writer;

/// One prompt of a print-mode invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintPrompt {
    pub text: String,
    pub images: Vec<ImageContent>,
}

/// Positional arguments split as pi's parser does: `@path` arguments are files to attach,
/// everything else is a message.
pub fn split_file_args(positional: &[String]) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    let mut messages = Vec::new();
    for a in positional {
        match a.strip_prefix('@') {
            Some(f) => files.push(f.to_string()),
            None => messages.push(a.clone()),
        }
    }
    (files, messages)
}

/// Reads piped stdin whole (`None` for a terminal or when it is empty after trimming).
pub fn read_piped_stdin() -> Option<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut buf = Vec::new();
    if let Err(e) = stdin.lock().read_to_end(&mut buf) {
        eprintln!("pi-rpc: cannot read stdin: {e}");
        return None;
    }
    let text = String::from_utf8_lossy(&buf);
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// `@file` arguments → text (`<file name="/abs">\ncontent\n</file>\n` per text file,
/// `<file name="/abs">hints</file>\n` per image, or the reason it was left out) and image
/// attachments. Empty files are skipped.
pub fn process_file_args(
    files: &[String],
    cwd: &Path,
) -> Result<(String, Vec<ImageContent>), String> {
    let mut text = String::new();
    let mut images = Vec::new();
    for arg in files {
        let path = crate::tools::path::resolve_read_path(arg, cwd);
        let abs = path.display().to_string();
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(_) => return Err(format!("Error: File not found: {abs}")),
        };
        if meta.is_file() && meta.len() == 0 {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| {
            let msg = crate::js::fs_error::node_error(&e, "read", None);
            format!("Error: Could not read file {abs}: {msg}")
        })?;
        if let Some(mime) = crate::tools::read::detect_image_mime(&bytes) {
            // Only the type is normalized here (BMP becomes PNG); the prompt's own
            // normalization resizes with the model's limits when the run starts.
            let opts = crate::image::ImageOptions {
                auto_resize: false,
                ..Default::default()
            };
            match crate::image::process_image(&bytes, mime, &opts) {
                Ok(image) => {
                    images.push(ImageContent {
                        kind: "image".into(),
                        data: image.data,
                        mime_type: image.mime_type,
                    });
                    let hints = image.hints.join("\n");
                    text.push_str(&format!("<file name=\"{abs}\">{hints}</file>\n"));
                }
                Err(omitted) => text.push_str(&format!("<file name=\"{abs}\">{omitted}</file>\n")),
            }
        } else {
            let content = String::from_utf8_lossy(&bytes);
            let content = content.strip_prefix('\u{feff}').unwrap_or(&content);
            text.push_str(&format!("<file name=\"{abs}\">\n{content}\n</file>\n"));
        }
    }
    Ok((text, images))
}

/// The prompts to run: the initial one (stdin + files + first message) if any part is present,
/// then each remaining message.
pub fn build_prompts(
    stdin: Option<String>,
    file_text: String,
    file_images: Vec<ImageContent>,
    messages: &[String],
) -> Vec<PrintPrompt> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(s) = stdin {
        parts.push(s);
    }
    if !file_text.is_empty() {
        parts.push(file_text);
    }
    let mut rest = messages.iter();
    if let Some(first) = rest.next() {
        parts.push(first.clone());
    }
    let mut prompts = Vec::new();
    if !parts.is_empty() {
        prompts.push(PrintPrompt {
            text: parts.concat(),
            images: file_images,
        });
    }
    prompts.extend(rest.map(|m| PrintPrompt {
        text: m.clone(),
        images: Vec::new(),
    }));
    prompts
}

/// `input` handlers (`extensions.md` §A4) on a print-mode prompt: `None` when one handled
/// it, else the prompt as they left it.
fn input_handlers(rt: &Runtime, prompt: &PrintPrompt) -> Option<PrintPrompt> {
    if !rt.ext.wants("input") {
        return Some(prompt.clone());
    }
    let images = crate::extensions::dispatch::input_images(&prompt.images);
    match rt.ext.input(&prompt.text, &images, "interactive", None) {
        crate::extensions::dispatch::InputOutcome::Handled => None,
        crate::extensions::dispatch::InputOutcome::Continue { text, images: new } => {
            Some(PrintPrompt {
                text,
                images: crate::extensions::dispatch::images_after_input(
                    prompt.images.clone(),
                    &images,
                    new,
                ),
            })
        }
    }
}

/// Prompt preflight: the same checks as RPC `prompt` ([`AgentSession::begin_prompt`]). On
/// success the run is marked active and the user message returned.
fn preflight(state: &Mutex<AgentSession>, prompt: &PrintPrompt) -> Result<Value, String> {
    match state
        .lock()
        .begin_prompt(&prompt.text, prompt.images.clone(), None)
    {
        PromptStart::Run(user_message) => Ok(user_message),
        PromptStart::Rejected(error) => Err(error),
        // Print mode runs its prompts one after another: none is active at a preflight.
        PromptStart::Queued(_) => Err("Agent is already processing.".into()),
    }
}

/// What text mode reports for the final message of the context.
#[derive(Debug, PartialEq, Eq)]
pub enum TextOutcome {
    /// Print these lines on stdout; then, if `notice` is set, it on stderr and exit 1.
    Text {
        blocks: Vec<String>,
        notice: Option<String>,
    },
    /// Print this on stderr, exit 1.
    Failed(String),
    /// The context does not end with an assistant message: print nothing, exit 0.
    Nothing,
}

/// pi's text-mode epilogue over the context's last message.
pub fn text_outcome(messages: &[Value]) -> TextOutcome {
    let Some(last) = messages.last() else {
        return TextOutcome::Nothing;
    };
    if crate::llm::Role::of(last) != Some(crate::llm::Role::Assistant) {
        return TextOutcome::Nothing;
    }
    let stop = last
        .get("stopReason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if stop == "error" || stop == "aborted" {
        let msg = last
            .get("errorMessage")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| format!("Request {stop}"));
        return TextOutcome::Failed(msg);
    }
    let blocks = last
        .get("content")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let notice = (stop == "length")
        .then(|| "Response was truncated: the model reached its output token limit.".to_string());
    TextOutcome::Text { blocks, notice }
}

/// Runs a print mode over the positional arguments; returns the exit code.
pub fn run_print(
    session: AgentSession,
    mode: Mode,
    positional: &[String],
    extensions: crate::extensions::ExtensionPlan,
) -> i32 {
    let (files, messages) = split_file_args(positional);
    let stdin = read_piped_stdin();
    let (file_text, file_images) = match process_file_args(&files, &session.cwd) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let prompts = build_prompts(stdin, file_text, file_images, &messages);

    let json = mode == Mode::Json;
    // json: events go through the writer thread, the only code touching stdout. text: events
    // are discarded; the final text is written here once everything has stopped.
    let (out, writer_handle) = if json {
        writer::spawn(std::io::stdout(), Box::new(|| crate::exit::shutdown(1)))
    } else {
        writer::spawn(std::io::sink(), Box::new(|| {}))
    };
    if let Err(e) = crate::exec::signals::spawn(|code| crate::exit::shutdown(code)) {
        eprintln!("pi-rpc: cannot install signal handlers: {e}");
    }
    // Extensions run without a client (pi's print modes: `hasUI` false, no UI written,
    // dialogs resolve to their defaults, extension errors on stderr).
    let (ext, flag_values) = match extensions.start(out.clone(), Arc::clone(&session.registry)) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    ext.connect_mcp();
    let mut session = session;
    crate::extensions::install_tools(&mut session.resources.tools, ext.tools());
    if json {
        out.record(&session.session.header().to_value());
    }
    let rt = Runtime {
        state: Arc::new(Mutex::new(session)),
        out: out.clone(),
        ext,
    };
    rt.ext
        .set_actions(Arc::new(crate::rpc::ext_actions::RpcActions {
            session: Arc::clone(&rt.state),
            out: out.clone(),
            to_processor: None,
            ext: Arc::downgrade(&rt.ext),
        }));
    rt.ext.send_flags(&flag_values);
    rt.ext.session_start("startup", None);

    let mut code = 0;
    for prompt in &prompts {
        // An extension command runs instead of a prompt (pi's `session.prompt`).
        if let Some((cmd, args)) = rt.ext.find_command(&prompt.text) {
            rt.ext.run_command_blocking(cmd, args);
            continue;
        }
        let prompt = match input_handlers(&rt, prompt) {
            Some(p) => p,
            None => continue,
        };
        let prompt = &prompt;
        match preflight(&rt.state, prompt) {
            // This thread is the agent thread: the run returns once it has settled.
            Ok(user) => crate::agent::run::run_session(&rt, None, user),
            Err(e) => {
                out.flush();
                eprintln!("{e}");
                code = 1;
                break;
            }
        }
    }
    rt.ext.shutdown();
    out.flush();
    drop(out);
    drop(rt.out);
    drop(rt.ext);
    drop(writer_handle);

    if !json && code == 0 {
        let last = rt.state.lock().messages.last().map(|m| m.into_owned());
        let outcome = text_outcome(last.as_slice());
        match outcome {
            TextOutcome::Nothing => {}
            TextOutcome::Failed(msg) => {
                eprintln!("{msg}");
                code = 1;
            }
            TextOutcome::Text { blocks, notice } => {
                let mut stdout = std::io::stdout().lock();
                for b in blocks {
                    if writeln!(stdout, "{b}").is_err() {
                        break;
                    }
                }
                let _ = stdout.flush();
                if let Some(n) = notice {
                    eprintln!("{n}");
                    code = 1;
                }
            }
        }
    }
    crate::exec::groups::kill_all();
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn file_args_are_split_from_messages() {
        let (f, m) = split_file_args(&s(&["@a.txt", "hi", "@b.png", "two"]));
        assert_eq!(f, s(&["a.txt", "b.png"]));
        assert_eq!(m, s(&["hi", "two"]));
    }

    #[test]
    fn initial_prompt_joins_stdin_files_and_first_message() {
        let p = build_prompts(
            Some("from stdin".into()),
            "<file name=\"/x\">\nA\n</file>\n".into(),
            Vec::new(),
            &s(&["hi", "two"]),
        );
        assert_eq!(
            p,
            vec![
                PrintPrompt {
                    text: "from stdin<file name=\"/x\">\nA\n</file>\nhi".into(),
                    images: vec![]
                },
                PrintPrompt {
                    text: "two".into(),
                    images: vec![]
                },
            ]
        );
        assert!(build_prompts(None, String::new(), Vec::new(), &[]).is_empty());
        assert_eq!(
            build_prompts(Some("only".into()), String::new(), Vec::new(), &[])[0].text,
            "only"
        );
    }

    #[test]
    fn file_args_are_read_like_pi() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-print-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "\u{feff}line1\nline2\n").unwrap();
        std::fs::write(dir.join("empty.txt"), "").unwrap();
        let png = [
            0x89u8, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R',
            0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0,
        ];
        std::fs::write(dir.join("i.png"), png).unwrap();
        let (text, images) = process_file_args(&s(&["a.txt", "empty.txt", "i.png"]), &dir).unwrap();
        let d = dir.display();
        assert_eq!(
            text,
            format!("<file name=\"{d}/a.txt\">\nline1\nline2\n\n</file>\n<file name=\"{d}/i.png\"></file>\n")
        );
        assert_eq!(images.len(), 1);
        assert_eq!(images[0].mime_type, "image/png");
        assert_eq!(
            images[0].data,
            crate::image::base64::encode(&png),
            "kept byte-identical"
        );
        let err = process_file_args(&s(&["nope.txt"]), &dir).unwrap_err();
        assert_eq!(err, format!("Error: File not found: {d}/nope.txt"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(feature = "images")]
    #[test]
    fn file_arg_images_are_converted_but_not_resized() {
        let dir = std::env::temp_dir().join(format!("pi-rpc-print-img-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let img = image::RgbImage::from_pixel(2100, 2, image::Rgb([1, 2, 3]));
        let encode = |format| {
            let mut out = std::io::Cursor::new(Vec::new());
            img.write_to(&mut out, format).unwrap();
            out.into_inner()
        };
        let png = encode(image::ImageFormat::Png);
        std::fs::write(dir.join("wide.png"), &png).unwrap();
        std::fs::write(dir.join("p.bmp"), encode(image::ImageFormat::Bmp)).unwrap();
        // A BMP header with no pixels: detected as an image, but it does not decode.
        let mut broken = encode(image::ImageFormat::Bmp);
        broken.truncate(60);
        std::fs::write(dir.join("broken.bmp"), &broken).unwrap();
        let (text, images) =
            process_file_args(&s(&["wide.png", "p.bmp", "broken.bmp"]), &dir).unwrap();
        let d = dir.display();
        assert_eq!(
            text,
            format!(
                "<file name=\"{d}/wide.png\"></file>\n\
                 <file name=\"{d}/p.bmp\">[Image converted from image/bmp to image/png.]</file>\n\
                 <file name=\"{d}/broken.bmp\">[Image omitted: could not be converted to a supported inline image format.]</file>\n"
            )
        );
        assert_eq!(images.len(), 2);
        assert_eq!(
            images[0].data,
            crate::image::base64::encode(&png),
            "not resized"
        );
        assert_eq!(images[1].mime_type, "image/png");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn text_outcome_follows_pi() {
        let a = |stop: &str, extra: Value| {
            let mut m = json!({"role":"assistant","content":[{"type":"text","text":"A"},{"type":"thinking","thinking":"t"},{"type":"text","text":"B"}],"stopReason":stop});
            for (k, v) in extra.as_object().unwrap() {
                m[k] = v.clone();
            }
            m
        };
        assert_eq!(
            text_outcome(&[a("stop", json!({}))]),
            TextOutcome::Text {
                blocks: s(&["A", "B"]),
                notice: None
            }
        );
        assert_eq!(
            text_outcome(&[a("length", json!({}))]),
            TextOutcome::Text {
                blocks: s(&["A", "B"]),
                notice: Some(
                    "Response was truncated: the model reached its output token limit.".into()
                )
            }
        );
        assert_eq!(
            text_outcome(&[a("error", json!({"errorMessage": "400 bad"}))]),
            TextOutcome::Failed("400 bad".into())
        );
        assert_eq!(
            text_outcome(&[a("aborted", json!({}))]),
            TextOutcome::Failed("Request aborted".into())
        );
        assert_eq!(
            text_outcome(&[json!({"role":"user","content":[]})]),
            TextOutcome::Nothing
        );
        assert_eq!(text_outcome(&[]), TextOutcome::Nothing);
    }
}
