#!/usr/bin/env bash
# smoke_test.sh HOSTILE_ERP_BIN — CTest smoke test of clawguard-hostile-erp as a process: an unknown
# mode is a usage error (exit 2); in interim mode a keyed POST gets its 1xx answers and then its
# own answer (naming its key), a repeat gets the same stored answer, /_stats counts one effect and
# no overlap; SIGTERM prints the final counters on stderr and exits 0.
set -euo pipefail
bin=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/cg-hostile-smoke.XXXXXX")
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "hostile_erp_smoke: FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

set +e
"$bin" --mode nonsense >/dev/null 2>"$work/usage.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown mode: exit $rc"
grep -q 'never-answer' "$work/usage.err" || fail "the usage error does not list the modes"

"$bin" --mode interim --delay-ms 30 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 200); do [ -s "$work/out" ] && break; sleep 0.05; done
base=$(json 'd["base_url"]' <"$work/out") || fail "no listening line"
[ "$(json 'd["mode"]' <"$work/out")" = interim ] || fail "mode not echoed"

first=$(curl -sS -X POST -H 'Idempotency-Key: k1' -H 'Content-Type: application/json' -d '{}' "$base/orders/1/fulfil")
[ "$(echo "$first" | json 'd["key"]')" = k1 ] || fail "answer does not name its key: $first"
again=$(curl -sS -X POST -H 'Idempotency-Key: k1' -d '{}' "$base/orders/1/fulfil")
[ "$again" = "$first" ] || fail "the repeat was not the stored answer: $again"

stats=$(curl -sS "$base/_stats")
[ "$(echo "$stats" | json 'd["effects"]')" = 1 ] || fail "effects: $stats"
[ "$(echo "$stats" | json 'd["requests"]')" = 2 ] || fail "requests: $stats"
[ "$(echo "$stats" | json 'd["overlapping"]')" = 0 ] || fail "overlapping: $stats"
[ "$(echo "$stats" | json 'd["keys"]["k1"]["effects"]')" = 1 ] || fail "per key: $stats"

kill "$pid"; wait "$pid"; pid=""
grep -q '"effects":1' "$work/err" || fail "final stats on stderr"
echo "hostile_erp_smoke: 1 passed, 0 failed"
