//! The seeded generator of the property tests (`properties.rs`, `properties_more.rs`; the unit
//! tests' twin is `src/test_rng.rs`).

#![allow(dead_code)]

/// xorshift64*: small, fast, and the same sequence everywhere (the property tests share it).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64, salt: u64) -> Rng {
        Rng((seed ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03)).max(1))
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// `PI_RPC_PROPERTY_SEED`, else a fixed seed.
pub fn seed() -> u64 {
    std::env::var("PI_RPC_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15u64)
}

/// `PI_RPC_PROPERTY_CASES`, else `default` (bounded for CI; longer runs set the variable).
pub fn cases(default: usize) -> usize {
    std::env::var("PI_RPC_PROPERTY_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
