//! The seeded generator of the property tests (`src/llm/prop_tests.rs`,
//! `src/tools/edit_prop_tests.rs`; `tests/support/rng.rs` is its twin for the integration tests).

/// xorshift64*: small, fast, and the same sequence everywhere (the property tests share it).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64, salt: u64) -> Rng {
        Rng((seed ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03)).max(1))
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// `PI_RPC_PROPERTY_SEED`, else a fixed seed.
pub(crate) fn seed() -> u64 {
    std::env::var("PI_RPC_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15u64)
}

/// `PI_RPC_PROPERTY_CASES`, else `default` (bounded for CI; longer runs set the variable).
pub(crate) fn cases(default: usize) -> usize {
    std::env::var("PI_RPC_PROPERTY_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
