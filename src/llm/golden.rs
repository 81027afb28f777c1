//! pi 1.6.0's recorded requests, for the request builders' unit tests: the fixtures in
//! `tests/fixtures/golden/` (made by `tests/fixtures/golden/regenerate.py` from the conformance
//! transcripts). They live in the repository, so these tests run on a bare clone.

use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");

fn read(file: &str) -> String {
    let path = format!("{DIR}/{file}");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("golden fixture {path} is part of the repository: {e}"))
}

/// The request bodies pi sent in scenario `name`, in order.
pub(crate) fn requests(name: &str) -> Vec<Value> {
    read(&format!("{name}.requests.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{name}.requests.jsonl: {e}")))
        .collect()
}

/// The system message (prompt sections) of scenario `name`.
pub(crate) fn system_message(name: &str) -> Value {
    serde_json::from_str(&read(&format!("{name}.system.json")))
        .unwrap_or_else(|e| panic!("{name}.system.json: {e}"))
}
