#!/usr/bin/env bash
# bench/host_ab.sh — an interleaved A/B of first-time deliveries between two clawguard binaries.
#
#   bench/host_ab.sh A_BIN B_BIN [ROUNDS=6] [DURATION_S=8] [--build DIR]
#
# Both hosts run side by side (same machine, same signed acme-orders plugin, one nginx as their
# ERP, each its own SQLite store), but only one is loaded at a time: each round loads A then B,
# or B then A (ABBA order), for DURATION_S seconds with fresh pre-signed first-time deliveries
# (wrk -t2 -c32, bench/webhook_requests.lua "once"). One line per run: req/s, p50, p99. On a VM
# whose speed drifts within minutes, only such interleaved pairs compare; a simultaneous A/B (both
# loaded at once) rewards the binary that waits least and is not a substitute (bench/README.md).
# A_EXECUTION / B_EXECUTION (threads or fibers) set one host's listen.execution (BENCH_EXECUTION
# both): e.g. B_EXECUTION=fibers bench/host_ab.sh OLD NEW compares the old default with fibers.
# A_WORKERS / B_WORKERS set one host's listen.workers (default 4); A_CARRIERS / B_CARRIERS its
# listen.carriers (fibers only); A_ISOLATION / B_ISOLATION its plugins.isolation (sandbox or none;
# unset for a build that predates the setting), e.g. A_ISOLATION=none B_ISOLATION=sandbox
# bench/host_ab.sh BIN BIN measures what the worker process costs. A binary's clawguard-worker
# must sit beside it.
# Build the two binaries first (e.g. `cmake --build build/bench --target clawguard` before and
# after a change, copying build/bench/cli/clawguard aside). Needs what host_bench.sh needs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
[ $# -ge 2 ] || { echo "usage: bench/host_ab.sh A_BIN B_BIN [ROUNDS] [DURATION_S] [--build DIR]" >&2; exit 2; }
cg="$(realpath "$1")"; CGB="$(realpath "$2")"; shift 2
rounds=6 duration=8 build="${CLAWGUARD_BENCH_BUILD:-$repo/build/bench}"
[ $# -gt 0 ] && [ "$1" != --build ] && { rounds="$1"; shift; }
[ $# -gt 0 ] && [ "$1" != --build ] && { duration="$1"; shift; }
[ $# -gt 0 ] && [ "$1" = --build ] && { build="$2"; shift 2; }
[ $# -eq 0 ] || { echo "bench/host_ab.sh: unexpected argument '$1'" >&2; exit 2; }
for f in "$cg" "$CGB"; do [ -x "$f" ] || { echo "bench/host_ab.sh: $f is not an executable" >&2; exit 2; }; done
hook="$build/tools/clawguard-webhook"; stage="$build/examples/acme-orders/stage"
[ -x "$hook" ] && [ -f "$stage/manifest.yaml" ] || {
  echo "bench/host_ab.sh: build clawguard-webhook and acme_orders_stage in $build first" >&2; exit 2; }
module="${CLAWGUARD_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
threads=2; connections=32; workers=4
work="$(mktemp -d "${TMPDIR:-/tmp}/cg-host-ab.XXXXXX")"; pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
cd "$work"
. "$here/lib.sh"
bench_sign_plugin
bench_start_nginx auto
bench_host_secrets
workers=${A_WORKERS:-4} BENCH_CARRIERS="${A_CARRIERS:-${BENCH_CARRIERS:-}}" BENCH_EXECUTION="${A_EXECUTION:-${BENCH_EXECUTION:-}}" BENCH_ISOLATION="${A_ISOLATION:-${BENCH_ISOLATION:-}}" bench_host_yaml A sqlite:state/state.db
bench_start_host A "$cg"; mainA=$main
workers=${B_WORKERS:-4} BENCH_CARRIERS="${B_CARRIERS:-${BENCH_CARRIERS:-}}" BENCH_EXECUTION="${B_EXECUTION:-${BENCH_EXECUTION:-}}" BENCH_ISOLATION="${B_ISOLATION:-${BENCH_ISOLATION:-}}" bench_host_yaml B sqlite:state/state.db
bench_start_host B "$CGB"; mainB=$main
path=/webhooks/acme-orders/order.created
lua="$here/webhook_requests.lua"
run_wrk() { wrk -t "$threads" -c "$connections" -d "${1}s" -s "$lua" "$2" -- "$3" "$threads" "$4" "${5:-0}" | grep '^{'; }
gen 4000 w_ warm.tsv
run_wrk 3 "http://$mainA$path" warm.tsv once >/dev/null; run_wrk 3 "http://$mainB$path" warm.tsv once >/dev/null
for r in $(seq $rounds); do
  gen $((8000*duration)) r${r}_ f.tsv
  if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for h in $order; do
    m=mainA; [ $h = B ] && m=mainB
    out=$(run_wrk "$duration" "http://${!m}$path" f.tsv once)
    line="round $r $h $(echo "$out" | json '"%.0f req/s p50 %.1f ms p99 %.1f ms%s" % (d["rps"], d["p50_ms"], d["p99_ms"], "" if not d["exhausted"] and not d["non2xx"] and not d["socket_errors"] else " INVALID (exhausted, non-2xx or socket errors)")')"
    echo "$line"; echo "$line" >>runs.txt
  done
done
python3 - runs.txt <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault(int(f[1]), {})[f[2]] = float(f[3])
a = [r["A"] for r in runs.values()]; b = [r["B"] for r in runs.values()]
wins = sum(1 for r in runs.values() if r["B"] > r["A"])
print(f"A mean {statistics.mean(a):.0f}/s, B mean {statistics.mean(b):.0f}/s: B/A {statistics.mean(b) / statistics.mean(a):.3f} "
      f"(B ahead in {wins} of {len(runs)} rounds)")
PY
