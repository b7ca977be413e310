#!/usr/bin/env bash
# tools_smoke_test.sh ERP_BIN WEBHOOK_BIN — CTest smoke test of clawguard-test-erp and
# clawguard-webhook together (no host): the ERP stores one answer per Idempotency-Key and counts
# the second request as a duplicate; /_stats reports it; `send` posts a signed delivery (the ERP
# counts it as a key-less effect); `gen` writes distinct pre-signed lines; a missing secret
# variable is a usage error that does not echo anything secret.
set -euo pipefail
erp_bin=$1 hook_bin=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/cg-tools-smoke.XXXXXX")
erp_pid=""
cleanup() { [ -n "$erp_pid" ] && kill "$erp_pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "tools_smoke: FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

"$erp_bin" >"$work/erp.out" 2>"$work/erp.err" &
erp_pid=$!
for _ in $(seq 200); do [ -s "$work/erp.out" ] && break; sleep 0.05; done
base=$(json 'd["base_url"]' <"$work/erp.out") || fail "no listening line from the ERP"

post() { curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Idempotency-Key: $1" -d '{}' "$base$2"; }
[ "$(post k1 /orders/1/fulfil)" = 200 ] || fail "first POST"
[ "$(post k1 /orders/1/fulfil)" = 200 ] || fail "duplicate POST"
[ "$(post k2 /inventory/adjust)" = 200 ] || fail "second key"

export SMOKE_SECRET="whsec_$(head -c 24 /dev/urandom | base64)"
printf '{"order_id":"ord_1"}' >"$work/body.json"
out=$("$hook_bin" send --url "$base/webhooks/x/y" --secret-env SMOKE_SECRET --id msg_1 --body "$work/body.json" --expect 200)
[ "$(echo "$out" | json 'd["status"]')" = 200 ] || fail "send: $out"

stats=$(curl -sS "$base/_stats")
[ "$(echo "$stats" | json 'd["effects"]["/orders/1/fulfil"]')" = 1 ] || fail "fulfil effects: $stats"
[ "$(echo "$stats" | json 'd["effects_total"]')" = 3 ] || fail "effects_total: $stats"
[ "$(echo "$stats" | json 'd["duplicates"]')" = 1 ] || fail "duplicates: $stats"
[ "$(echo "$stats" | json 'd["duplicate_keys"]')" = "['k1']" ] || fail "duplicate_keys: $stats"
[ "$(echo "$stats" | json 'd["keyless_effects"]')" = 1 ] || fail "keyless_effects: $stats"

printf '{"order_id":"ord_{{seq}}","lines":[]}\n' >"$work/tpl.json"
"$hook_bin" gen 5 --secret-env SMOKE_SECRET --template "$work/tpl.json" --out "$work/reqs.tsv" >/dev/null
[ "$(wc -l <"$work/reqs.tsv")" = 5 ] || fail "gen line count"
[ "$(cut -f1 "$work/reqs.tsv" | sort -u | wc -l)" = 5 ] || fail "gen ids not distinct"
[ "$(sed -n 3p "$work/reqs.tsv" | cut -f4)" = '{"order_id":"ord_2","lines":[]}' ] || fail "gen body"
# Each line verifies with the secret (HMAC-SHA256 over id.timestamp.body, base64).
python3 - "$work/reqs.tsv" <<'PY' || fail "gen signatures do not verify"
import base64, hashlib, hmac, os, sys
key = base64.b64decode(os.environ["SMOKE_SECRET"][len("whsec_"):])
for line in open(sys.argv[1]):
    i, ts, sig, body = line.rstrip("\n").split("\t")
    mac = base64.b64encode(hmac.new(key, f"{i}.{ts}.{body}".encode(), hashlib.sha256).digest()).decode()
    assert sig == "v1," + mac, i
PY

printf 'no seq' >"$work/bad.json"
if "$hook_bin" gen 2 --secret-env SMOKE_SECRET --template "$work/bad.json" --out "$work/x" 2>/dev/null; then fail "gen accepted a template without {{seq}}"; fi
set +e
err=$(env -u SMOKE_SECRET "$hook_bin" send --url "$base/w/x" --secret-env SMOKE_SECRET --id m --body "$work/body.json" 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] || fail "missing secret variable: exit $rc"
case "$err" in *SMOKE_SECRET*"not set"*) ;; *) fail "missing secret message: $err" ;; esac

kill "$erp_pid"; wait "$erp_pid"; erp_pid=""
grep -q '"effects_total":3' "$work/erp.err" || fail "final stats on stderr"
echo "tools_smoke: 1 passed, 0 failed"
