#!/usr/bin/env bash
# run.sh: the side-by-side of Sandbank's engines against isolated-vm and
# quickjs-emscripten, in one command, on this machine.
#
#   bench/peers/run.sh [--runs N]
#
# It installs the pinned peers (npm ci; isolated-vm is a native addon built
# by node-gyp against the local Node headers), runs peers.js, runs
# "sandbank bench --json" once per engine, each in a process of its own,
# and prints one table with ratios against Sandbank's quickjs engine. One
# process per engine because an engine with a soft wall clock leaves a
# stopped script running in the background (goja's runaway_native runs to
# its end), which takes a core from every engine measured after it in the
# same process: with goja in it, quickjs's reshape took 202 ms wall and
# 406 ms CPU, alone 49 ms and 49 ms. The raw JSON is kept in
# bench/peers/out/. Needs node 20, npm, a C++ toolchain (g++, make,
# python3) and Go.
set -euo pipefail

runs=20
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 64 ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="$here/out"
mkdir -p "$out"

# node-gyp must not download Node's headers: use the installed ones when
# they are there (Debian/NodeSource nodejs ships /usr/include/node).
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi

echo "run.sh: npm ci (isolated-vm builds from source: a minute or two)" >&2
(cd "$here" && npm ci --no-audit --no-fund >&2)

echo "run.sh: peers" >&2
peers_rc=0
(cd "$here" && node --no-node-snapshot peers.js --runs "$runs") > "$out/peers.json" || peers_rc=$?

echo "run.sh: sandbank bench, one process per engine" >&2
bench_rc=0
(cd "$repo" && go build -o "$out/sandbank" ./cmd/sandbank)
engines="$("$out/sandbank" engines --json | node -e 'for (const e of JSON.parse(require("fs").readFileSync(0, "utf8"))) console.log(e.engine)')"
rm -f "$out"/sandbank-*.json
files=()
for engine in $engines; do
  (cd "$repo" && "$out/sandbank" bench --json --runs "$runs" --engine "$engine") > "$out/sandbank-$engine.json" || bench_rc=$?
  files+=("$out/sandbank-$engine.json")
done

echo >&2
node "$here/combine.js" "$out/peers.json" "${files[@]}"

if [ "$peers_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then
  echo "run.sh: peers exited $peers_rc, sandbank bench exited $bench_rc (see the errors above)" >&2
  exit 1
fi
