#!/usr/bin/env bash
# bench/worker_bench.sh — the plugin worker benchmark (called by ci/bench). Prints a markdown
# table.
#
#   bench/worker_bench.sh [--build DIR] [--calls 1000] [--rounds 10] [--starts 40]
#                         [--memory-cgroup auto|none]
#
# bench/worker_bench (see its header) in one run, interleaved round by round:
#   * an erp_call's round trip over the worker channel alone (PluginWorker, the real
#     clawguard-worker and a plugin making N calls per delivery, each answered at once) beside the
#     same frames ping-ponged between two processes on a blocking socketpair;
#   * PluginWorker::Start to a worker ready to serve beside posix_spawn + waitpid of /bin/true.
# Targets: round trip p99 ≤ 20 µs; worker start reported (no target).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${CLAWGUARD_BENCH_BUILD:-${CLAWGUARD_BUILD_DIR:-$repo/build/bench}}" calls=1000 rounds=10 starts=40
cgroup=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --calls) calls="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --starts) starts="$2"; shift 2 ;;
    --memory-cgroup) cgroup="$2"; shift 2 ;;
    *) echo "bench/worker_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
out=$("$build/bench/worker_bench" --worker "$build/cli/clawguard-worker" \
  --plugin "$build/bench/libclawguard_bench_erp_loop.so" \
  --calls "$calls" --rounds "$rounds" --starts "$starts" --memory-cgroup "$cgroup")
f() { jq -r "$1" <<<"$out"; }
r() { printf '%.1f' "$(f "$1")"; }
echo "| what | p50 | p99 | p99.9 | floor p50 | floor p99 | ratio p50 | ratio p99 |"
echo "|---|---|---|---|---|---|---|---|"
echo "| erp_call round trip, worker channel (µs, $(f .erp_round_trip_us.n) calls) | $(r .erp_round_trip_us.p50) | $(r .erp_round_trip_us.p99) | $(r .erp_round_trip_us.p999) | $(r .socketpair_round_trip_us.p50) | $(r .socketpair_round_trip_us.p99) | $(printf '%.2f' "$(f .round_trip_ratio_p50)") | $(printf '%.2f' "$(f .round_trip_ratio_p99)") |"
echo "| worker start to ready (ms, $(f .worker_start_ms.n) starts) | $(r .worker_start_ms.p50) | $(r .worker_start_ms.p99) | – | $(r .spawn_true_ms.p50) | $(r .spawn_true_ms.p99) | $(printf '%.1f' "$(f .start_ratio_p50)") | – |"
echo
echo "Floors: the same frames between two processes on a blocking socketpair; posix_spawn of /bin/true."
echo "Workers' memory cgroup: $(f .memory_cgroup)."
