//! `sinf` for the image crate's Lanczos3 kernel (`f32::sin` compiles to a call to the C
//! library's `sinf`).
//!
//! It is the only symbol the binary would take from `libm.so`, and a shared library the
//! executable needs is mapped and relocated at every start, resize or not: about 0.3 MiB of peak
//! RSS for one function (`examples/bench_startup.rs`). Defining `sinf` here, from rust-lang's
//! pure-Rust `libm` (a port of musl's), resolves the call inside the binary, so the linker
//! (`--as-needed`) drops `libm.so`; it also makes resized pixels the same on every C library.
//! Nothing else changes: the symbol is not exported from the executable.

/// C's `float sinf(float)`. `no_mangle` counts as unsafe code: it is the point of this shim.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn sinf(x: f32) -> f32 {
    libm::sinf(x)
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_the_standard_sine() {
        for i in -2000..=2000 {
            let x = i as f32 * 0.0123;
            assert!(
                (super::sinf(x) - (x as f64).sin() as f32).abs() <= 1e-6,
                "{x}"
            );
        }
        assert_eq!(super::sinf(0.0), 0.0);
        assert!(super::sinf(f32::NAN).is_nan());
    }
}
