// Preloaded into the reference pi when recording goldens (run.sh): pi compresses openai-codex
// request bodies with zstd when Node has it, and the conformance kit's mock cannot read them.
// Without zstdCompressSync pi sends plain JSON, as it does on runtimes without zstd.
const zlib = require("node:zlib");
zlib.zstdCompressSync = undefined;
