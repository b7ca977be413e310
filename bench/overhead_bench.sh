#!/usr/bin/env bash
# bench/overhead_bench.sh — the replay path with the failure-handling guards (rate limit, per-key
# breaker, DLQ, metrics, retention advisor) against the same path without them, in one process
# and one run (bench/replay_overhead_bench.cpp). Target: overhead ≤ 5 %.
# Usage: bench/overhead_bench.sh [--build DIR] [--keys N] [--rounds R]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${CLAWGUARD_BENCH_BUILD:-build/bench}
keys=2000
rounds=15
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "overhead_bench: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bin="$build/bench/replay_overhead_bench"
[ -x "$bin" ] || { echo "overhead_bench: build the replay_overhead_bench target in $build first" >&2; exit 2; }
work=$(mktemp -d /tmp/clawguard-overhead-XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" --dir "$work" --keys "$keys" --rounds "$rounds"
