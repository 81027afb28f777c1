//! Fitting an image inside the inline limits (pi's `utils/image-resize-core.js`
//! `resizeImageInProcess`, with this crate's `image` in place of Photon, which wraps the same
//! library): keep the input byte-identical when it is within every limit; otherwise resize to the
//! maximum dimensions (Lanczos3), take the smaller of PNG and JPEG at the configured quality,
//! then lower JPEG qualities, then shrink by 0.75 until 1x1.

use std::io::Cursor;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::imageops::FilterType;
use image::metadata::Orientation;
use image::{DynamicImage, ImageReader};

use super::base64;
use super::ResizeOptions;

/// An image that fits the limits, and the dimensions before and after.
#[derive(Clone, Debug, PartialEq)]
pub struct Resized {
    /// Base64 of the bytes to attach.
    pub data: String,
    pub mime_type: String,
    pub original_width: u32,
    pub original_height: u32,
    pub width: u32,
    pub height: u32,
    /// False when the input was kept as it is.
    pub was_resized: bool,
}

/// Decodes any supported format (guessed from the bytes, as Photon does) and applies the EXIF
/// orientation pi reads. `None` when the bytes are not a decodable image.
pub fn decode_oriented(bytes: &[u8]) -> Option<DynamicImage> {
    let mut image = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .decode()
        .ok()?;
    if let Some(o) = Orientation::from_exif(super::exif::orientation(bytes)) {
        image.apply_orientation(o);
    }
    Some(image)
}

/// 8 bits per channel (Photon works on RGBA8; resizing fewer channels is faster and gives the
/// same pixels).
pub fn to_8bit(image: DynamicImage) -> DynamicImage {
    match image {
        DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_) => image,
        other if other.color().has_alpha() => DynamicImage::ImageRgba8(other.to_rgba8()),
        other => DynamicImage::ImageRgb8(other.to_rgb8()),
    }
}

/// PNG bytes as Photon's `get_bytes` writes them: RGBA8, fast (fdeflate) compression, adaptive
/// filters. Its size decides PNG against JPEG, so it must be Photon's size, not the smallest
/// PNG possible: an opaque screenshot that zlib's default level would shrink below its JPEG
/// still goes out as JPEG in pi.
pub fn encode_png(image: &DynamicImage) -> Option<Vec<u8>> {
    let rgba = match image {
        DynamicImage::ImageRgba8(_) => std::borrow::Cow::Borrowed(image),
        other => std::borrow::Cow::Owned(DynamicImage::ImageRgba8(other.to_rgba8())),
    };
    let mut out = Vec::new();
    let encoder =
        PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilter::Adaptive);
    rgba.write_with_encoder(encoder).ok()?;
    Some(out)
}

/// JPEG bytes as Photon's `get_bytes_jpeg` writes them: the RGB channels (alpha dropped, gray
/// as RGB) at `quality`.
fn encode_jpeg(image: &DynamicImage, quality: u8) -> Option<Vec<u8>> {
    let rgb = match image {
        DynamicImage::ImageRgb8(_) => std::borrow::Cow::Borrowed(image),
        other => std::borrow::Cow::Owned(DynamicImage::ImageRgb8(other.to_rgb8())),
    };
    let mut out = Vec::new();
    rgb.write_with_encoder(JpegEncoder::new_with_quality(&mut out, quality))
        .ok()?;
    Some(out)
}

/// JavaScript's `Math.round` (ties towards +∞).
fn js_round(x: f64) -> f64 {
    (x + 0.5).floor()
}

/// A JavaScript number handed to a Wasm `u32` parameter (truncated).
fn to_u32(x: f64) -> u32 {
    x as u32
}

/// `[q, 85, 70, 55, 40]` without repeats, as JPEG qualities.
fn quality_steps(first: f64) -> Vec<u8> {
    let mut steps: Vec<f64> = Vec::new();
    for q in [first, 85.0, 70.0, 55.0, 40.0] {
        if !steps.contains(&q) {
            steps.push(q);
        }
    }
    // Photon takes a u8 and the encoder clamps to 1..=100.
    steps
        .into_iter()
        .map(|q| q.clamp(1.0, 100.0) as u8)
        .collect()
}

/// An encoded candidate and its base64 size.
struct Candidate {
    bytes: Vec<u8>,
    mime: &'static str,
}

impl Candidate {
    fn encoded_size(&self) -> usize {
        base64::encoded_len(self.bytes.len())
    }
}

/// pi's `resizeImageInProcess`: `None` when the bytes cannot be decoded or nothing fits under
/// `max_bytes`, even at 1x1.
pub fn resize_image(input: &[u8], mime_type: &str, opts: &ResizeOptions) -> Option<Resized> {
    let input_base64_size = base64::encoded_len(input.len()) as f64;
    let image = decode_oriented(input)?;
    let (original_width, original_height) = (image.width(), image.height());
    if f64::from(original_width) <= opts.max_width
        && f64::from(original_height) <= opts.max_height
        && input_base64_size < opts.max_bytes
    {
        return Some(Resized {
            data: base64::encode(input),
            mime_type: mime_type.to_string(),
            original_width,
            original_height,
            width: original_width,
            height: original_height,
            was_resized: false,
        });
    }
    let image = to_8bit(image);

    let mut target_width = f64::from(original_width);
    let mut target_height = f64::from(original_height);
    if target_width > opts.max_width {
        target_height = js_round(target_height * opts.max_width / target_width);
        target_width = opts.max_width;
    }
    if target_height > opts.max_height {
        target_width = js_round(target_width * opts.max_height / target_height);
        target_height = opts.max_height;
    }
    let qualities = quality_steps(opts.jpeg_quality);
    let fits = |c: &Candidate| (c.encoded_size() as f64) < opts.max_bytes;

    let (mut width, mut height) = (to_u32(target_width), to_u32(target_height));
    loop {
        let resized = image.resize_exact(width, height, FilterType::Lanczos3);
        let found = |c: Candidate| Resized {
            data: base64::encode(&c.bytes),
            mime_type: c.mime.to_string(),
            original_width,
            original_height,
            width,
            height,
            was_resized: true,
        };
        let png = Candidate {
            bytes: encode_png(&resized)?,
            mime: "image/png",
        };
        let jpeg = Candidate {
            bytes: encode_jpeg(&resized, qualities[0])?,
            mime: "image/jpeg",
        };
        // The smaller of PNG and JPEG at the configured quality first; lower JPEG qualities
        // only when neither fits (pi encodes them all up front, the choice is the same).
        let (first, second) = if jpeg.encoded_size() < png.encoded_size() {
            (jpeg, png)
        } else {
            (png, jpeg)
        };
        if fits(&first) {
            return Some(found(first));
        }
        if fits(&second) {
            return Some(found(second));
        }
        for &q in &qualities[1..] {
            let c = Candidate {
                bytes: encode_jpeg(&resized, q)?,
                mime: "image/jpeg",
            };
            if fits(&c) {
                return Some(found(c));
            }
        }
        if width == 1 && height == 1 {
            return None;
        }
        let shrink = |d: u32| {
            if d == 1 {
                1
            } else {
                (f64::from(d) * 0.75).floor().max(1.0) as u32
            }
        };
        let (next_width, next_height) = (shrink(width), shrink(height));
        if next_width == width && next_height == height {
            return None;
        }
        width = next_width;
        height = next_height;
    }
}

/// JavaScript's `x.toFixed(2)` for a non-negative `x`: nearest, exact ties upwards (Rust's
/// formatting breaks exact ties to even).
fn to_fixed_2(x: f64) -> String {
    let thousandths = x * 1000.0;
    let exact_tie = (x * 8.0).fract() == 0.0
        && thousandths.fract() == 0.0
        && thousandths % 10.0 == 5.0
        && thousandths < 9.0e15;
    if exact_tie {
        let hundredths = (thousandths as u64 + 5) / 10;
        format!("{}.{:02}", hundredths / 100, hundredths % 100)
    } else {
        format!("{x:.2}")
    }
}

/// pi's `formatDimensionNote`: how displayed coordinates map back, for a resized image.
pub fn dimension_note(r: &Resized) -> Option<String> {
    if !r.was_resized {
        return None;
    }
    let scale = f64::from(r.original_width) / f64::from(r.width);
    Some(format!(
        "[Image: original {}x{}, displayed at {}x{}. Multiply coordinates by {} to map to original image.]",
        r.original_width,
        r.original_height,
        r.width,
        r.height,
        to_fixed_2(scale)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_rounding_and_to_fixed() {
        assert_eq!(js_round(2.5), 3.0);
        assert_eq!(js_round(1499.4), 1499.0);
        assert_eq!(to_fixed_2(2.0), "2.00");
        assert_eq!(to_fixed_2(1.125), "1.13");
        assert_eq!(to_fixed_2(2.625), "2.63");
        assert_eq!(
            to_fixed_2(1.005),
            "1.00",
            "1.005 is below the tie in binary"
        );
        assert_eq!(to_fixed_2(4000.0 / 3000.0), "1.33");
        assert_eq!(to_fixed_2(2.0 / 3.0), "0.67");
    }

    #[test]
    fn quality_steps_drop_repeats_and_clamp() {
        assert_eq!(quality_steps(80.0), vec![80, 85, 70, 55, 40]);
        assert_eq!(quality_steps(70.0), vec![70, 85, 55, 40]);
        assert_eq!(quality_steps(250.0), vec![100, 85, 70, 55, 40]);
    }

    #[test]
    fn dimension_note_text() {
        let r = Resized {
            data: String::new(),
            mime_type: "image/png".into(),
            original_width: 4000,
            original_height: 3000,
            width: 2000,
            height: 1500,
            was_resized: true,
        };
        assert_eq!(
            dimension_note(&r).as_deref(),
            Some("[Image: original 4000x3000, displayed at 2000x1500. Multiply coordinates by 2.00 to map to original image.]")
        );
        assert_eq!(
            dimension_note(&Resized {
                was_resized: false,
                ..r
            }),
            None
        );
    }
}
