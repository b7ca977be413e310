#!/usr/bin/env bash
# smoke_test.sh HOSTILE_ERP_BIN — CTest smoke test of clawguard-hostile-erp as a process: an unknown
# mode is a usage error (exit 2); in interim mode a keyed POST gets its 1xx answers and then its
# own answer (naming its key), a repeat gets the same stored answer, /_stats counts one effect and
# no overlap; SIGTERM prints the final counters on stderr and exits 0. Over https (a throwaway CA)
# a keyed POST gets its own answer (the second copy goes unread) and /_stats counts it.
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

# https: a certificate from a throwaway CA; --tls-key without --tls-cert is a usage error.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/ca.key" -out "$work/ca.pem" \
  -subj "/CN=smoke CA" -days 2 -addext basicConstraints=critical,CA:TRUE 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/erp.key" -out "$work/erp.csr" \
  -subj "/CN=erp" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/erp.ext"
openssl x509 -req -in "$work/erp.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial -out "$work/erp.pem" \
  -days 2 -extfile "$work/erp.ext" 2>/dev/null
set +e
"$bin" --tls-key "$work/erp.key" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || fail "a key without a certificate: exit $rc"
"$bin" --mode double-answer-two-writes --tls-cert "$work/erp.pem" --tls-key "$work/erp.key" \
  >"$work/tls.out" 2>/dev/null &
pid=$!
for _ in $(seq 200); do [ -s "$work/tls.out" ] && break; sleep 0.05; done
tls_base=$(json 'd["base_url"]' <"$work/tls.out") || fail "no listening line over https"
case "$tls_base" in https://127.0.0.1:*) ;; *) fail "base_url over TLS: $tls_base" ;; esac
tls_first=$(curl -sS --cacert "$work/ca.pem" -X POST -H 'Idempotency-Key: t1' -d '{}' "$tls_base/orders/2/fulfil")
[ "$(echo "$tls_first" | json 'd["key"]')" = t1 ] || fail "https answer does not name its key: $tls_first"
tls_stats=$(curl -sS --cacert "$work/ca.pem" "$tls_base/_stats")
[ "$(echo "$tls_stats" | json 'd["connections"]')" = 2 ] || fail "connections: $tls_stats"
kill "$pid"; wait "$pid"; pid=""
echo "hostile_erp_smoke: 1 passed, 0 failed"
