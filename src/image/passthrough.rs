//! `process_image` in a build without the `images` feature: no decoder, so nothing is converted
//! or resized. An image whose MIME type providers take inline and whose base64 fits the byte
//! limit passes unchanged (its pixel size is not checked); any other image is left out with a
//! note that says why, so the model and the user learn that this build cannot process it.

use super::{base64, supported_mime_type, ImageError, ImageOptions, ProcessedImage};

/// Passes an inline-format image that fits, or says why it cannot.
pub fn process_image(
    bytes: &[u8],
    mime: &str,
    opts: &ImageOptions,
) -> Result<ProcessedImage, ImageError> {
    let mime = supported_mime_type(mime).ok_or(ImageError::NoConversionInThisBuild)?;
    let data = base64::encode(bytes);
    if opts.auto_resize && data.len() as f64 >= opts.resize.max_bytes {
        return Err(ImageError::NoResizeInThisBuild);
    }
    Ok(ProcessedImage {
        data,
        mime_type: mime.to_string(),
        hints: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::ResizeOptions;

    #[test]
    fn inline_types_pass_unchanged_and_the_rest_say_why_not() {
        let opts = ImageOptions::default();
        let p = process_image(b"\x89PNG...", "IMAGE/PNG; x=1", &opts).unwrap();
        assert_eq!(p.mime_type, "image/png");
        assert_eq!(p.data, base64::encode(b"\x89PNG..."));
        assert!(p.hints.is_empty());
        assert_eq!(
            process_image(b"BM..", "image/bmp", &opts),
            Err(ImageError::NoConversionInThisBuild)
        );
        let small = ImageOptions {
            auto_resize: true,
            resize: ResizeOptions {
                max_bytes: 8.0,
                ..ResizeOptions::default()
            },
        };
        assert_eq!(
            process_image(b"0123456789", "image/jpeg", &small),
            Err(ImageError::NoResizeInThisBuild)
        );
        let off = ImageOptions {
            auto_resize: false,
            ..small
        };
        assert!(process_image(b"0123456789", "image/jpeg", &off).is_ok());
    }
}
