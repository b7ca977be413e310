#!/usr/bin/env bash
# bench/host_profile.sh — where a first-time delivery's host time goes, for one clawguard binary.
#
#   bench/host_profile.sh [BIN] [MODE=none] [DURATION_S=8] [--build DIR]
#
# Starts the host as bench/host_bench.sh does (SQLite store, the signed acme-orders plugin, nginx as
# the ERP), warms it up, then loads it with fresh pre-signed first-time deliveries (wrk -t2 -c32,
# bench/webhook_requests.lua "once") and prints, per delivery: the host's CPU by thread role
# (cg-http-io, cg-delivery, cg-watchdog, cg-checkpoint, … from /proc/PID/task/*/stat), its
# voluntary and involuntary context switches, and how busy the machine was (/proc/stat).
# MODE adds one recording of the running host (perf must be installed; its data stays in the
# work directory printed at the start, for `perf report -i DIR/perf.data`):
#   cpu    perf record -F 2000 -g (frame pointers: cheap, but library frames only)
#   dwarf  perf record --call-graph dwarf for 3 s (full stacks; `--children --sort sym`)
#   sched  sched:sched_switch with DWARF stacks for 2 s: where the host sleeps
#   sys    perf stat of the main system calls: calls per delivery
#   calls  the main system calls with DWARF stacks for 2 s: who makes them
#          (`perf report -i DIR/perf.data --no-children --sort sym,event`)
# A recording slows the host; compare builds with bench/host_ab.sh, not with this script.
# BENCH_EXECUTION, BENCH_CARRIERS and BENCH_WORKERS (default 4) set the host's listen.execution,
# listen.carriers and listen.workers. BIN defaults to build/bench/cli/clawguard. Needs what
# host_bench.sh needs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${CLAWGUARD_BENCH_BUILD:-$repo/build/bench}"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
cg="$(realpath "${args[0]:-$build/cli/clawguard}")"; mode="${args[1]:-none}"; duration="${args[2]:-8}"
case "$mode" in none|cpu|dwarf|sched|sys|calls) ;; *) echo "bench/host_profile.sh: MODE is none, cpu, dwarf, sched, sys or calls" >&2; exit 2 ;; esac
[ -x "$cg" ] || { echo "bench/host_profile.sh: $cg is not an executable" >&2; exit 2; }
[ "$mode" = none ] || command -v perf >/dev/null || { echo "bench/host_profile.sh: MODE $mode needs perf" >&2; exit 2; }
hook="$build/tools/clawguard-webhook"; stage="$build/examples/acme-orders/stage"
[ -x "$hook" ] && [ -f "$stage/manifest.yaml" ] || {
  echo "bench/host_profile.sh: build clawguard-webhook and acme_orders_stage in $build first" >&2; exit 2; }
module="${CLAWGUARD_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
threads=2; connections=32; workers=${BENCH_WORKERS:-4}
work="$(mktemp -d "${TMPDIR:-/tmp}/cg-host-profile.XXXXXX")"; pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
echo "work directory (kept): $work"
cd "$work"
. "$here/lib.sh"
bench_sign_plugin
bench_start_nginx auto
bench_host_secrets
bench_host_yaml host sqlite:state/state.db
bench_start_host "$work/host" "$cg"; hpid=$host_pid
path=/webhooks/acme-orders/order.created
run_wrk() { wrk -t "$threads" -c "$connections" -d "${1}s" -s "$here/webhook_requests.lua" "$2" -- "$3" "$threads" "$4" 0 | grep '^{'; }
gen 4000 w_ warm.tsv
run_wrk 3 "http://$main$path" warm.tsv once >/dev/null
gen $((8000 * duration)) r_ first.tsv

# Counters: machine busy/idle ticks, the host's context switches, CPU ticks per thread name.
machine() { awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat; }
switches() { { cat /proc/$hpid/task/*/status 2>/dev/null || true; } | awk '/^voluntary_ctxt/{v+=$2}/^nonvoluntary_ctxt/{n+=$2}END{print v, n}'; }
cpu_by_role() { for t in /proc/$hpid/task/*; do awk '{print $2, $14+$15}' $t/stat 2>/dev/null || true; done | awk '{a[$1]+=$2}END{for(k in a) print k, a[k]}' | sort; }
m0=$(machine); s0=$(switches); cpu_by_role >cpu0
recorder=""
case "$mode" in
  cpu) perf record -F 2000 -g -p $hpid -o perf.data -- sleep $((duration - 1)) >/dev/null 2>&1 & recorder=$! ;;
  dwarf) perf record -F 1000 --call-graph dwarf,32768 -p $hpid -o perf.data -- sleep 3 >/dev/null 2>&1 & recorder=$! ;;
  sched) perf record -e sched:sched_switch -c 1 --call-graph dwarf,16384 -p $hpid -o perf.data -- sleep 2 >/dev/null 2>&1 & recorder=$! ;;
  sys)
    ev=$(for c in futex epoll_wait poll recvmsg sendmsg pread64 pwrite64 fcntl timerfd_settime epoll_ctl write fdatasync; do
      printf 'syscalls:sys_enter_%s,' $c; done)
    perf stat -e "${ev%,}" -p $hpid -o perf-stat.txt -- sleep "$duration" >/dev/null 2>&1 & recorder=$! ;;
  calls)
    ev=$(for c in epoll_ctl epoll_wait pread64 pwrite64 fcntl timerfd_settime futex write recvmsg sendmsg; do
      printf 'syscalls:sys_enter_%s,' $c; done)
    perf record -e "${ev%,}" -c 1 --call-graph dwarf,16384 -p $hpid -o perf.data -- sleep 2 >/dev/null 2>&1 & recorder=$! ;;
esac
out=$(run_wrk "$duration" "http://$main$path" first.tsv once)
[ -n "$recorder" ] && wait "$recorder" || true
m1=$(machine); s1=$(switches); cpu_by_role >cpu1
echo "$out" | json '"first-time deliveries: %.0f/s, p50 %.1f ms, p99 %.1f ms%s" % (d["rps"], d["p50_ms"], d["p99_ms"], "" if not d["exhausted"] and not d["non2xx"] and not d["socket_errors"] else " — INVALID (exhausted, non-2xx or socket errors)")'
n=$(echo "$out" | json 'd["requests"]')
hz=$(getconf CLK_TCK)
python3 - "$m0" "$m1" "$s0" "$s1" "$n" "$hz" cpu0 cpu1 <<'PY'
import sys
m0, m1, s0, s1, n, hz = sys.argv[1:7]
b0, i0 = map(int, m0.split()); b1, i1 = map(int, m1.split())
print(f"machine busy: {100 * (b1 - b0) / max(1, (b1 - b0) + (i1 - i0)):.0f} %")
n = max(1, int(n)); hz = int(hz)
v0, x0 = map(int, s0.split()); v1, x1 = map(int, s1.split())
print(f"host context switches per delivery: {(v1 - v0) / n:.1f} voluntary, {(x1 - x0) / n:.1f} involuntary")
def load(f):
    return {l.split()[0]: int(l.split()[1]) for l in open(f) if l.strip()}
c0, c1 = load(sys.argv[7]), load(sys.argv[8])
total = 0.0
for name in sorted(c1):
    ms = (c1[name] - c0.get(name, 0)) * 1000 / hz / n
    total += ms
    if ms >= 0.0005: print(f"  {name:<18} {ms:.3f} ms CPU per delivery")
print(f"  {'host':<18} {total:.3f} ms CPU per delivery")
PY
if [ "$mode" = sys ]; then
  echo "system calls per delivery:"
  awk -v n="$n" '/syscalls:sys_enter_/{gsub(",", "", $1); sub("syscalls:sys_enter_", "", $2); printf "  %-16s %6.2f\n", $2, $1 / n}' perf-stat.txt | sort -k2 -rn
fi
[ -f perf.data ] && echo "recording: perf report -i $work/perf.data"
exit 0
