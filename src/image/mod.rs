//! Inline images, normalized as pi 1.6.0 does before they reach a provider: MIME types
//! canonicalized, types no provider takes inline converted to PNG, EXIF orientation applied,
//! and images over the model's limits resized (`process`, `resize`, `exif`). Prompt, steering
//! and follow-up images go through [`normalize_message_images`]; the `read` tool's through
//! [`process_image`]. With `images.blockImages`, [`block_images`] replaces every image the
//! model would see by a note.
//!
//! Pure functions over bytes and values; decoding and encoding a large picture takes a
//! hundred milliseconds or more, so callers run them off the processor thread.
//!
//! Decoding and resizing need the `images` cargo feature (on by default). A build without it
//! uses `passthrough.rs`: images already in an inline format that fit the byte limit pass
//! unchanged, the others are left out with a note that names the missing support.

pub mod base64;
#[cfg(feature = "images")]
mod exif;
#[cfg(feature = "images")]
mod process;
#[cfg(not(feature = "images"))]
#[path = "passthrough.rs"]
mod process;
#[cfg(feature = "images")]
mod resize;
#[cfg(feature = "images")]
mod sinf;

use std::fmt;

use serde_json::Value;

use crate::llm::types::{ContentBlock, LlmMessage};

pub use process::process_image;

/// The part before `;`, trimmed and lower-cased.
pub(crate) fn base_mime_type(mime: &str) -> String {
    mime.split(';')
        .next()
        .unwrap_or(mime)
        .trim()
        .to_ascii_lowercase()
}

/// The inline types providers accept, under their canonical names.
pub(crate) fn supported_mime_type(mime: &str) -> Option<&'static str> {
    match base_mime_type(mime).as_str() {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        "image/gif" => Some("image/gif"),
        "image/webp" => Some("image/webp"),
        _ => None,
    }
}

/// Default `maxBytes`: 4.5 MiB of base64, below Anthropic's 5 MB limit.
pub const DEFAULT_MAX_BYTES: f64 = 4.5 * 1024.0 * 1024.0;

/// Resize limits: a model's `inputLimits.images.resize`, key by key over pi's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResizeOptions {
    pub max_width: f64,
    pub max_height: f64,
    /// Largest base64 size (exclusive).
    pub max_bytes: f64,
    pub jpeg_quality: f64,
}

impl Default for ResizeOptions {
    fn default() -> Self {
        ResizeOptions {
            max_width: 2000.0,
            max_height: 2000.0,
            max_bytes: DEFAULT_MAX_BYTES,
            jpeg_quality: 80.0,
        }
    }
}

impl ResizeOptions {
    /// The limits of a model from its `inputLimits` (`{images: {resize: {maxWidth, maxHeight,
    /// maxBytes, jpegQuality}}}`); missing or non-numeric keys keep their defaults.
    pub fn from_input_limits(input_limits: Option<&Value>) -> Self {
        let mut o = ResizeOptions::default();
        let Some(resize) = input_limits
            .and_then(|l| l.get("images"))
            .and_then(|i| i.get("resize"))
        else {
            return o;
        };
        let num = |key: &str, slot: &mut f64| {
            if let Some(v) = resize.get(key).and_then(Value::as_f64) {
                *slot = v;
            }
        };
        num("maxWidth", &mut o.max_width);
        num("maxHeight", &mut o.max_height);
        num("maxBytes", &mut o.max_bytes);
        num("jpegQuality", &mut o.jpeg_quality);
        o
    }
}

/// How images are normalized: settings `images.autoResize` and the current model's limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageOptions {
    /// When false only the MIME type is normalized (and unsupported types converted).
    pub auto_resize: bool,
    pub resize: ResizeOptions,
}

impl Default for ImageOptions {
    fn default() -> Self {
        ImageOptions {
            auto_resize: true,
            resize: ResizeOptions::default(),
        }
    }
}

/// An image ready to attach, and the hint lines that go with it (conversion, dimensions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessedImage {
    /// Base64 data.
    pub data: String,
    pub mime_type: String,
    pub hints: Vec<String>,
}

/// Why an image is left out; `Display` is the note the model gets in its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// An unsupported type that could not be decoded to convert it.
    NotConvertible,
    /// Undecodable, or nothing fits under the byte limit even at 1x1.
    TooLarge,
    /// A build without the `images` feature: a type that would need converting.
    NoConversionInThisBuild,
    /// A build without the `images` feature: an image over the byte limit.
    NoResizeInThisBuild,
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageError::NotConvertible => {
                "[Image omitted: could not be converted to a supported inline image format.]"
            }
            ImageError::TooLarge => {
                "[Image omitted: could not be resized below the inline image size limit.]"
            }
            ImageError::NoConversionInThisBuild => {
                "[Image omitted: this pi-rpc build has no image processing (built without the \
                 `images` feature), so it cannot convert this image to a supported inline image \
                 format (PNG, JPEG, GIF, WebP).]"
            }
            ImageError::NoResizeInThisBuild => {
                "[Image omitted: this pi-rpc build has no image processing (built without the \
                 `images` feature), so it cannot resize this image below the inline image size \
                 limit.]"
            }
        })
    }
}

impl std::error::Error for ImageError {}

/// pi's `_normalizePromptImages` applied to a user message the way
/// `_normalizeQueuedMessageImages` does: when the content is an array starting with a text
/// block, its image blocks are replaced by normalized ones (after the other blocks), and the
/// hints (and the notes of omitted images) are appended to the text after a blank line.
/// Messages without images are left as they are.
pub fn normalize_message_images(message: &mut Value, opts: &ImageOptions) {
    let Some(content) = message.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    let is_image = |b: &Value| b.get("type").and_then(Value::as_str) == Some("image");
    if content
        .first()
        .and_then(|b| b.get("type"))
        .and_then(Value::as_str)
        != Some("text")
        || !content.iter().any(is_image)
    {
        return;
    }
    let blocks = std::mem::take(content);
    let mut rest = blocks.into_iter();
    let mut first = rest.next().unwrap_or_default();
    let mut others = Vec::new();
    let mut images = Vec::new();
    let mut hints: Vec<String> = Vec::new();
    for block in rest {
        if !is_image(&block) {
            others.push(block);
            continue;
        }
        let data = block
            .get("data")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mime = block
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match process_image(&base64::decode(data), mime, opts) {
            Ok(p) => {
                images.push(
                    serde_json::json!({"type": "image", "data": p.data, "mimeType": p.mime_type}),
                );
                hints.extend(p.hints);
            }
            Err(e) => hints.push(e.to_string()),
        }
    }
    if !hints.is_empty() {
        let text = first
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let text = format!("{text}\n\n{}", hints.join("\n"));
        first["text"] = Value::String(text);
    }
    content.push(first);
    content.extend(others);
    content.extend(images);
}

/// The note that replaces an image when `images.blockImages` is on.
pub const IMAGE_BLOCKED_TEXT: &str = "Image reading is disabled.";

/// `images.blockImages` (pi's `convertToLlm` wrapper in `sdk.js`): in user and tool-result
/// messages every image becomes the note, and consecutive notes collapse into one.
pub fn block_images(messages: &mut [LlmMessage]) {
    for m in messages {
        let content = match m {
            LlmMessage::User { content, .. } | LlmMessage::ToolResult { content, .. } => content,
            LlmMessage::Assistant(_) | LlmMessage::System(_) => continue,
        };
        if !content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image { .. }))
        {
            continue;
        }
        let is_note = |b: &ContentBlock| matches!(b, ContentBlock::Text { text, .. } if text == IMAGE_BLOCKED_TEXT);
        let mut out: Vec<ContentBlock> = Vec::with_capacity(content.len());
        for b in std::mem::take(content) {
            let b = match b {
                ContentBlock::Image { .. } => ContentBlock::Text {
                    text: IMAGE_BLOCKED_TEXT.into(),
                    text_signature: None,
                },
                other => other,
            };
            if is_note(&b) && out.last().is_some_and(is_note) {
                continue;
            }
            out.push(b);
        }
        *content = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resize_options_from_model_limits() {
        assert_eq!(
            ResizeOptions::from_input_limits(None),
            ResizeOptions::default()
        );
        let limits = json!({"maxRequestBytes": 1, "images": {"resize": {"maxWidth": 1000, "jpegQuality": 60, "maxHeight": "x"}}});
        assert_eq!(
            ResizeOptions::from_input_limits(Some(&limits)),
            ResizeOptions {
                max_width: 1000.0,
                jpeg_quality: 60.0,
                ..ResizeOptions::default()
            }
        );
        assert_eq!(DEFAULT_MAX_BYTES, 4_718_592.0);
    }

    /// A 1x1 PNG (from pi's conformance scenario).
    #[cfg(feature = "images")]
    const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";

    #[cfg(feature = "images")]
    #[test]
    fn message_images_are_normalized_with_hints_in_the_text() {
        let mut m = json!({"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": TINY_PNG, "mimeType": "image/png"},
            {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"},
            {"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/tiff"},
        ], "timestamp": 5});
        normalize_message_images(&mut m, &ImageOptions::default());
        assert_eq!(
            m,
            json!({"role": "user", "content": [
                {"type": "text", "text": "look\n\n[Image omitted: could not be resized below the inline image size limit.]\n[Image omitted: could not be converted to a supported inline image format.]"},
                {"type": "image", "data": TINY_PNG, "mimeType": "image/png"},
            ], "timestamp": 5})
        );
    }

    #[test]
    fn messages_without_images_or_leading_text_are_untouched() {
        for m in [
            json!({"role": "user", "content": "text"}),
            json!({"role": "user", "content": [{"type": "text", "text": "only"}]}),
            json!({"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "text", "text": "t"}]}),
        ] {
            let mut n = m.clone();
            normalize_message_images(&mut n, &ImageOptions::default());
            assert_eq!(n, m);
        }
    }

    #[test]
    fn blocked_images_become_one_note_per_run() {
        let img = || ContentBlock::Image {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
        };
        let text = |t: &str| ContentBlock::Text {
            text: t.into(),
            text_signature: None,
        };
        let mut msgs = vec![
            LlmMessage::User {
                content: vec![text("a"), img(), img(), text("b"), img()],
                timestamp: 1,
                as_string: false,
            },
            LlmMessage::ToolResult {
                tool_call_id: "c".into(),
                tool_name: "read".into(),
                content: vec![text("Read image file [image/png]"), img()],
                is_error: false,
            },
        ];
        block_images(&mut msgs);
        let note = text(IMAGE_BLOCKED_TEXT);
        assert_eq!(
            msgs,
            vec![
                LlmMessage::User {
                    content: vec![text("a"), note.clone(), text("b"), note.clone()],
                    timestamp: 1,
                    as_string: false,
                },
                LlmMessage::ToolResult {
                    tool_call_id: "c".into(),
                    tool_name: "read".into(),
                    content: vec![text("Read image file [image/png]"), note],
                    is_error: false,
                },
            ]
        );
    }
}
