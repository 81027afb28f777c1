//! Image normalization benchmark: times `pi_rpc::image::process_image` (decode, EXIF, resize,
//! re-encode) on generated pictures and prints the median and what came out.
//!
//!     cargo run --release --example bench_image [-- N] [--write DIR]
//!
//! Inputs: a 4000x3000 photo-like JPEG (smooth shading, sensor noise, hard edges), the same as
//! PNG, a 4000x3000 screenshot-like PNG (flat areas, text-like strokes), and a 1600x1200 JPEG
//! within the limits (kept as it is: decode only). `--write DIR` also saves the inputs there,
//! for feeding the same files to pi.

// Tests and tools: a panic is how they report a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;
use std::time::Instant;

use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use pi_rpc::image::{process_image, ImageOptions};

/// xorshift64: deterministic noise without a crate.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Roughly normal, mean 0, spread about `amp`.
    fn sample(&mut self, amp: f64) -> f64 {
        let v = self.next();
        let sum: u64 = (0..4).map(|k| (v >> (k * 16)) & 0xffff).sum();
        (sum as f64 / 4.0 / 65535.0 - 0.5) * 2.0 * amp * 1.7
    }
}

fn photo(w: u32, h: u32) -> RgbImage {
    let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
    RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (f64::from(x) / f64::from(w), f64::from(y) / f64::from(h));
        let sky = fy < 0.45 + 0.05 * (fx * 9.0).sin();
        let base = if sky {
            [90.0 + 80.0 * fy, 140.0 + 60.0 * fy, 220.0 - 30.0 * fx]
        } else {
            let t = ((fx * 40.0).sin() * (fy * 25.0).cos() + 1.0) * 0.5;
            [60.0 + 70.0 * t, 110.0 + 50.0 * t, 40.0 + 30.0 * t]
        };
        let block = (x / 500 + y / 400) % 3 == 0 && !sky;
        let n = noise.sample(9.0);
        let px = base.map(|c| (c + n + if block { 40.0 } else { 0.0 }).clamp(0.0, 255.0) as u8);
        Rgb(px)
    })
}

fn screenshot(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let panel = (x / 800 + y / 600) % 2 == 0;
        let line = y % 24 < 14 && x % 640 > 40 && x % 640 < 40 + (y * 7 % 500) && (x / 3) % 4 != 0;
        match (panel, line) {
            (_, true) => Rgb([30, 30, 30]),
            (true, false) => Rgb([250, 250, 250]),
            (false, false) => Rgb([236, 240, 244]),
        }
    })
}

fn encode(img: &RgbImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => {
            let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 92);
            DynamicImage::ImageRgb8(img.clone())
                .write_with_encoder(enc)
                .expect("encode jpeg");
        }
        _ => img.write_to(&mut out, format).expect("encode"),
    }
    out.into_inner()
}

fn main() {
    let mut n = 5usize;
    let mut write_dir = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--write" => write_dir = args.next(),
            other => n = other.parse().unwrap_or(n),
        }
    }
    let big_photo = photo(4000, 3000);
    let inputs = [
        (
            "photo-4000x3000.jpg",
            "image/jpeg",
            encode(&big_photo, ImageFormat::Jpeg),
        ),
        (
            "photo-4000x3000.png",
            "image/png",
            encode(&big_photo, ImageFormat::Png),
        ),
        (
            "screenshot-4000x3000.png",
            "image/png",
            encode(&screenshot(4000, 3000), ImageFormat::Png),
        ),
        (
            "photo-1600x1200.jpg",
            "image/jpeg",
            encode(&photo(1600, 1200), ImageFormat::Jpeg),
        ),
    ];
    if let Some(dir) = &write_dir {
        std::fs::create_dir_all(dir).expect("create output dir");
        for (name, _, bytes) in &inputs {
            std::fs::write(std::path::Path::new(dir).join(name), bytes).expect("write input");
        }
    }
    let opts = ImageOptions::default();
    println!(
        "{:<26} {:>9} {:>10} {:>10}  result",
        "input", "in KiB", "median ms", "max ms"
    );
    for (name, mime, bytes) in &inputs {
        let mut times = Vec::with_capacity(n);
        let mut last = None;
        for _ in 0..n {
            let t = Instant::now();
            let out = process_image(bytes, mime, &opts);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            last = Some(out);
        }
        times.sort_by(f64::total_cmp);
        let result = match last {
            Some(Ok(p)) => format!(
                "{} {} KiB base64; {}",
                p.mime_type,
                p.data.len() / 1024,
                p.hints.join(" ")
            ),
            Some(Err(e)) => e.to_string(),
            None => String::new(),
        };
        println!(
            "{:<26} {:>9} {:>10.1} {:>10.1}  {}",
            name,
            bytes.len() / 1024,
            times[times.len() / 2],
            times[times.len() - 1],
            result
        );
    }
}
