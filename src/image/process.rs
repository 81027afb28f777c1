//! pi's `utils/image-process.js` `processImage`: normalize the MIME type (converting types no
//! provider takes inline to PNG), then fit the image inside the limits when auto-resize is on.

use super::resize::{decode_oriented, dimension_note, encode_png, resize_image};
use super::{
    base64, base_mime_type, supported_mime_type, ImageError, ImageOptions, ProcessedImage,
};

/// Bytes under a supported MIME type, and the base type they were converted from.
struct Normalized<'a> {
    bytes: std::borrow::Cow<'a, [u8]>,
    mime: &'static str,
    converted_from: Option<String>,
}

/// pi's `normalizeImage` / `convertImageBytesToPng` (decode, EXIF orientation, PNG).
fn normalize<'a>(bytes: &'a [u8], mime: &str) -> Option<Normalized<'a>> {
    if let Some(m) = supported_mime_type(mime) {
        return Some(Normalized {
            bytes: bytes.into(),
            mime: m,
            converted_from: None,
        });
    }
    let png = encode_png(&decode_oriented(bytes)?)?;
    Some(Normalized {
        bytes: png.into(),
        mime: "image/png",
        converted_from: Some(base_mime_type(mime)),
    })
}

/// `[Image converted from X to Y.]` when the type changed (an empty source type says nothing).
fn conversion_hint(from: Option<&str>, to: &str) -> Option<String> {
    match from {
        Some(f) if !f.is_empty() && f != to => Some(format!("[Image converted from {f} to {to}.]")),
        _ => None,
    }
}

/// Normalizes one image: its base64 data and MIME type to attach, with hint lines for the
/// model, or why it is left out.
pub fn process_image(
    bytes: &[u8],
    mime: &str,
    opts: &ImageOptions,
) -> Result<ProcessedImage, ImageError> {
    let normalized = normalize(bytes, mime).ok_or(ImageError::NotConvertible)?;
    let from = normalized.converted_from.as_deref();
    if opts.auto_resize {
        let resized = resize_image(&normalized.bytes, normalized.mime, &opts.resize)
            .ok_or(ImageError::TooLarge)?;
        let hints = conversion_hint(from, &resized.mime_type)
            .into_iter()
            .chain(dimension_note(&resized))
            .collect();
        return Ok(ProcessedImage {
            data: resized.data,
            mime_type: resized.mime_type,
            hints,
        });
    }
    Ok(ProcessedImage {
        data: base64::encode(&normalized.bytes),
        mime_type: normalized.mime.to_string(),
        hints: conversion_hint(from, normalized.mime).into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::exif::tests::{jpeg_with_exif, tiff_with_orientation};
    use crate::image::ResizeOptions;
    use image::{DynamicImage, GenericImageView, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
    use std::io::Cursor;

    fn encode(img: &DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    /// A smooth gradient: compresses well as PNG.
    fn gradient(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
            Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
        }))
    }

    /// Flat 100-pixel tiles, like a UI: Photon's fast PNG beats JPEG on it.
    fn tiles(w: u32, h: u32) -> DynamicImage {
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| {
            let k = (x / 100 * 7 + y / 100 * 13) % 5;
            Rgb([40 * k as u8, 200 - 30 * k as u8, 90])
        }))
    }

    /// Pseudo-random noise: PNG cannot compress it, JPEG can a little.
    fn noise(w: u32, h: u32) -> DynamicImage {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |_, _| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let b = state.to_le_bytes();
            Rgb([b[0], b[1], b[2]])
        }))
    }

    fn decoded(p: &ProcessedImage) -> DynamicImage {
        image::load_from_memory(&base64::decode(&p.data)).unwrap()
    }

    fn defaults() -> ImageOptions {
        ImageOptions::default()
    }

    #[test]
    fn small_png_is_kept_byte_identical() {
        let png = encode(&gradient(40, 30), ImageFormat::Png);
        let p = process_image(&png, "image/png", &defaults()).unwrap();
        assert_eq!(
            p,
            ProcessedImage {
                data: base64::encode(&png),
                mime_type: "image/png".into(),
                hints: vec![],
            }
        );
        // MIME parameters and case are normalized away; image/jpg is image/jpeg.
        let p = process_image(&png, "Image/PNG; charset=x", &defaults()).unwrap();
        assert_eq!(p.mime_type, "image/png");
        let jpeg = encode(&gradient(40, 30), ImageFormat::Jpeg);
        let p = process_image(&jpeg, "image/jpg", &defaults()).unwrap();
        assert_eq!(
            (p.mime_type.as_str(), p.data),
            ("image/jpeg", base64::encode(&jpeg))
        );
    }

    #[test]
    fn big_png_is_resized_to_the_maximum_dimensions() {
        let png = encode(&tiles(3000, 1000), ImageFormat::Png);
        let p = process_image(&png, "image/png", &defaults()).unwrap();
        let img = decoded(&p);
        assert_eq!(img.dimensions(), (2000, 667));
        assert_eq!(
            p.hints,
            vec!["[Image: original 3000x1000, displayed at 2000x667. Multiply coordinates by 1.50 to map to original image.]"]
        );
        // Flat tiles are smaller as PNG than as JPEG at quality 80; a busy gradient is not.
        assert_eq!(p.mime_type, "image/png");
        let busy = encode(&gradient(3000, 1000), ImageFormat::Png);
        let p = process_image(&busy, "image/png", &defaults()).unwrap();
        assert_eq!(p.mime_type, "image/jpeg");
        assert_eq!(decoded(&p).dimensions(), (2000, 667));

        // Tall images fit the height; a model's limits replace the defaults.
        let tall = encode(&gradient(300, 900), ImageFormat::Png);
        let opts = ImageOptions {
            auto_resize: true,
            resize: ResizeOptions::from_input_limits(Some(
                &serde_json::json!({"images": {"resize": {"maxWidth": 100, "maxHeight": 200}}}),
            )),
        };
        let p = process_image(&tall, "image/png", &opts).unwrap();
        assert_eq!(decoded(&p).dimensions(), (67, 200));
        assert_eq!(
            p.hints,
            vec!["[Image: original 300x900, displayed at 67x200. Multiply coordinates by 4.48 to map to original image.]"]
        );
    }

    #[test]
    fn auto_resize_off_keeps_big_images() {
        let png = encode(&gradient(2100, 10), ImageFormat::Png);
        let opts = ImageOptions {
            auto_resize: false,
            ..ImageOptions::default()
        };
        let p = process_image(&png, "image/png", &opts).unwrap();
        assert_eq!(p.data, base64::encode(&png));
        assert!(p.hints.is_empty());
    }

    #[test]
    fn unsupported_types_are_converted_to_png() {
        let bmp = encode(&gradient(3, 2), ImageFormat::Bmp);
        let p = process_image(&bmp, "image/bmp", &defaults()).unwrap();
        assert_eq!(p.mime_type, "image/png");
        assert_eq!(
            p.hints,
            vec!["[Image converted from image/bmp to image/png.]"]
        );
        let img = decoded(&p);
        assert_eq!(img.to_rgb8(), gradient(3, 2).to_rgb8());
        // Without auto-resize the conversion still happens.
        let opts = ImageOptions {
            auto_resize: false,
            ..ImageOptions::default()
        };
        let q = process_image(&bmp, "IMAGE/BMP", &opts).unwrap();
        assert_eq!(
            q.hints,
            vec!["[Image converted from image/bmp to image/png.]"]
        );
        // The declared type does not matter for decoding, only for the hint; no type, no hint.
        let r = process_image(&bmp, "", &defaults()).unwrap();
        assert_eq!((r.mime_type.as_str(), r.hints.len()), ("image/png", 0));
    }

    #[test]
    fn garbage_is_omitted_with_pis_messages() {
        let garbage = b"not an image";
        // A supported type that does not decode fails in the resize step.
        assert_eq!(
            process_image(garbage, "image/png", &defaults()),
            Err(ImageError::TooLarge)
        );
        assert_eq!(
            ImageError::TooLarge.to_string(),
            "[Image omitted: could not be resized below the inline image size limit.]"
        );
        // An unsupported type that does not decode cannot be converted.
        assert_eq!(
            process_image(garbage, "image/bmp", &defaults()),
            Err(ImageError::NotConvertible)
        );
        assert_eq!(
            ImageError::NotConvertible.to_string(),
            "[Image omitted: could not be converted to a supported inline image format.]"
        );
        // Without auto-resize a supported type passes through undecoded, as in pi.
        let opts = ImageOptions {
            auto_resize: false,
            ..ImageOptions::default()
        };
        assert!(process_image(garbage, "image/png", &opts).is_ok());
    }

    #[test]
    fn exif_orientation_is_applied() {
        // 40x20: left half red, right half blue; orientation 6 (rotate 90° clockwise).
        let img = DynamicImage::ImageRgb8(RgbImage::from_fn(40, 20, |x, _| {
            if x < 20 {
                Rgb([255, 0, 0])
            } else {
                Rgb([0, 0, 255])
            }
        }));
        let jpeg = encode(&img, ImageFormat::Jpeg);
        let rotated = jpeg_with_exif(&jpeg, &tiff_with_orientation(false, 6));
        // Within limits the bytes are kept (the EXIF tag travels with them).
        let p = process_image(&rotated, "image/jpeg", &defaults()).unwrap();
        assert_eq!(p.data, base64::encode(&rotated));
        // Converted (declared as an unsupported type) or resized, the pixels are turned upright.
        let p = process_image(&rotated, "image/x-photo", &defaults()).unwrap();
        let out = decoded(&p).to_rgb8();
        assert_eq!(out.dimensions(), (20, 40));
        assert!(out.get_pixel(10, 5).0[0] > 200, "red on top");
        assert!(out.get_pixel(10, 35).0[2] > 200, "blue below");
        let opts = ImageOptions {
            auto_resize: true,
            resize: ResizeOptions {
                max_width: 10.0,
                max_height: 10.0,
                ..ResizeOptions::default()
            },
        };
        let p = process_image(&rotated, "image/jpeg", &opts).unwrap();
        assert_eq!(decoded(&p).dimensions(), (5, 10));
        assert_eq!(
            p.hints,
            vec!["[Image: original 20x40, displayed at 5x10. Multiply coordinates by 4.00 to map to original image.]"]
        );
    }

    #[test]
    fn noisy_image_over_the_byte_limit_falls_back_to_jpeg_then_shrinks() {
        // 600x600 of noise: ~1.4 MB as PNG, far over a 200 KB limit; JPEG at 80 still over.
        let img = noise(600, 600);
        let png = encode(&img, ImageFormat::Png);
        let opts = ImageOptions {
            auto_resize: true,
            resize: ResizeOptions {
                max_bytes: 200_000.0,
                ..ResizeOptions::default()
            },
        };
        let p = process_image(&png, "image/png", &opts).unwrap();
        assert_eq!(p.mime_type, "image/jpeg");
        assert!(p.data.len() < 200_000);
        let (w, h) = decoded(&p).dimensions();
        assert!(w < 600 && w == h, "shrunk by 0.75 steps: {w}x{h}");
        assert!([450, 337, 252, 189].contains(&w));
        assert_eq!(
            p.hints,
            vec![format!(
                "[Image: original 600x600, displayed at {w}x{w}. Multiply coordinates by {} to map to original image.]",
                to_fixed(600.0 / f64::from(w))
            )]
        );
        // Nothing fits in 10 bytes of base64, not even 1x1.
        let opts = ImageOptions {
            auto_resize: true,
            resize: ResizeOptions {
                max_bytes: 10.0,
                ..ResizeOptions::default()
            },
        };
        assert_eq!(
            process_image(&png, "image/png", &opts),
            Err(ImageError::TooLarge)
        );
    }

    fn to_fixed(x: f64) -> String {
        format!("{x:.2}")
    }

    #[test]
    fn pngs_are_written_like_photons() {
        // Transparency survives a resize as PNG; like Photon's, every PNG written is RGBA.
        let img = DynamicImage::ImageRgba8(RgbaImage::from_fn(2400, 10, |x, _| {
            Rgba([0, 0, 0, if x < 1200 { 0 } else { 255 }])
        }));
        let png = encode(&img, ImageFormat::Png);
        let p = process_image(&png, "image/png", &defaults()).unwrap();
        assert_eq!(p.mime_type, "image/png");
        assert_eq!(decoded(&p).color(), image::ColorType::Rgba8);
        let bmp = encode(&gradient(5, 5), ImageFormat::Bmp);
        let p = process_image(&bmp, "image/bmp", &defaults()).unwrap();
        assert_eq!(decoded(&p).color(), image::ColorType::Rgba8);
        // A flat screenshot-like picture: zlib's default level would make its PNG smaller
        // than the JPEG, Photon's fast PNG does not, so pi sends a JPEG, and so do we.
        let shot = DynamicImage::ImageRgb8(RgbImage::from_fn(2400, 1600, |x, y| {
            let stroke =
                y % 24 < 14 && x % 640 > 40 && x % 640 < 40 + (y * 7 % 500) && (x / 3) % 4 != 0;
            if stroke {
                Rgb([30, 30, 30])
            } else {
                Rgb([250, 250, 250])
            }
        }));
        let p = process_image(&encode(&shot, ImageFormat::Png), "image/png", &defaults()).unwrap();
        assert_eq!(p.mime_type, "image/jpeg");
        assert_eq!(decoded(&p).dimensions(), (2000, 1333));
    }

    #[test]
    fn gif_and_webp_are_supported_inline() {
        let gif = encode(&gradient(8, 8), ImageFormat::Gif);
        let p = process_image(&gif, "image/gif", &defaults()).unwrap();
        assert_eq!(
            (p.mime_type.as_str(), p.data),
            ("image/gif", base64::encode(&gif))
        );
        let webp = encode(&gradient(2200, 4), ImageFormat::WebP);
        let p = process_image(&webp, "image/webp", &defaults()).unwrap();
        assert_eq!(decoded(&p).dimensions(), (2000, 4));
    }
}
