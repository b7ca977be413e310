#!/usr/bin/env bash
# bench/machine_costs.sh — what a context switch and a system call cost on this machine, the two
# costs a first-time delivery pays most often (docs/decisions/0032: ~12 sleeps and ~60 system
# calls per delivery). Prints a markdown table; record it beside a host benchmark so first-time
# figures from different machines (or hypervisors) can be compared.
#
#   bench/machine_costs.sh [LOOPS=200000]
#
# Uses `perf bench` (Debian: linux-perf; not installed by ci/setup-deps):
#   sched pipe           two processes ping-pong one byte over two pipes: one round trip = two
#                        sleeps and wake-ups, four system calls; across CPUs as the scheduler likes
#   sched pipe, 1 CPU    the same pinned to one CPU (taskset): switches without cross-CPU wake-ups
#   sched pipe -T        two threads of one process instead of processes (the host's case)
#   syscall basic        a null system call (getppid)
set -euo pipefail
loops="${1:-200000}"
command -v perf >/dev/null 2>&1 || { echo "bench/machine_costs.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
usecs() { sed -n 's/^ *\([0-9.]*\) usecs\/op.*/\1/p' | head -1 | xargs -r printf '%.1f'; }
pipe_x="$(perf bench sched pipe -l "$loops" 2>/dev/null | usecs)"
pipe_1="$(taskset -c 0 perf bench sched pipe -l "$loops" 2>/dev/null | usecs)"
pipe_t="$(perf bench sched pipe -T -l "$loops" 2>/dev/null | usecs)"
null_sc="$(perf bench syscall basic -l 1000000 2>/dev/null | usecs)"
[ -n "$pipe_x" ] && [ -n "$pipe_1" ] && [ -n "$pipe_t" ] && [ -n "$null_sc" ] || {
  echo "bench/machine_costs.sh: perf bench gave no figure (perf_event_paranoid? run as root)" >&2; exit 1; }
echo "### Machine costs ($(nproc) CPUs; $(uname -r); $(date -u +%Y-%m-%d); load average $(cut -d' ' -f1-3 /proc/loadavg | sed 's/ /, /g'))"
echo
echo "| what | µs |"
echo "| --- | ---: |"
echo "| pipe ping-pong round trip, processes, any CPU (2 sleeps + 2 wake-ups + 4 syscalls) | $pipe_x |"
echo "| the same, both on CPU 0 | $pipe_1 |"
echo "| the same, two threads of one process | $pipe_t |"
echo "| null system call | $null_sc |"
