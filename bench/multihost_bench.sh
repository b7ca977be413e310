#!/usr/bin/env bash
# bench/multihost_bench.sh — scale-out benchmark (called by ci/bench). Prints a markdown table.
#
#   bench/multihost_bench.sh [--build DIR] [--duration 10] [--connections 32] [--workers 4]
#                            [--first-max 6000] [--pg-clients 8]
#
# First-time deliveries per second (each: claim, plugin, three ERP calls through the outbox, stored
# durably before the answer; ERP = nginx answering 200 '{}'; requests pre-signed with
# `clawguard-webhook gen`, sent once each by wrk and bench/webhook_requests.lua):
#   (a) one host on SQLite (the embedded default; WAL, synchronous=FULL), wrk -t2 -cC;
#   (b) two hosts on one PostgreSQL database (fsync=on, synchronous_commit=on), one wrk per host
#       (-t1 -cC/2, disjoint requests), their rates added.
# Then the database side on the same server: claims per second of the host's claim statement
# (PgIdempotencyStore::Claim's INSERT … ON CONFLICT … RETURNING, run by pgbench) vs the plain
# equivalent bench/pgbench_claim.sql → the ratio is what the host's statement shape costs.
# Needs nginx, wrk, PostgreSQL 15 server binaries (pgbench, initdb, pg_ctl), SoftHSM2, openssl,
# python3 (ci/setup-deps --with-bench). Everything shares this machine's cores: compare ratios.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${CLAWGUARD_BENCH_BUILD:-$repo/build/bench}" duration=10 connections=32 workers=4 first_max=6000 pg_clients=8
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --connections) connections="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --first-max) first_max="$2"; shift 2 ;;
    --pg-clients) pg_clients="$2"; shift 2 ;;
    *) echo "bench/multihost_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
cg="${CLAWGUARD_BIN:-$build/cli/clawguard}"
hook="$build/tools/clawguard-webhook"
stage="$build/examples/acme-orders/stage"
module="${CLAWGUARD_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
pg_bin="${PG_BIN:-/usr/lib/postgresql/15/bin}"
for f in "$cg" "$hook" "$pg_bin/pgbench" "$pg_bin/pg_ctl"; do
  [ -x "$f" ] || { echo "bench/multihost_bench.sh: missing $f" >&2; exit 2; }
done
[ -f "$stage/manifest.yaml" ] || { echo "bench/multihost_bench.sh: missing $stage (build acme_orders_stage)" >&2; exit 2; }
for t in nginx wrk python3 openssl softhsm2-util curl; do
  command -v "$t" >/dev/null || { echo "bench/multihost_bench.sh: needs $t (ci/setup-deps --with-bench)" >&2; exit 2; }
done
as_pg=()
[ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)

work="$(mktemp -d "${TMPDIR:-/tmp}/cg-multihost-bench.XXXXXX")"
pids=()
pgdata=""
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "$pgdata" ] && "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
cd "$work"
. "$here/lib.sh"  # json, free_port, gen, bench_sign_plugin, bench_start_nginx, bench_host_yaml

# --- a throwaway token, key, PKI; pack and sign the example plugin (bench/lib.sh) -------------
bench_sign_plugin

# --- nginx: the ERP for the host, and the reference (c) ---------------------------------------
bench_start_nginx 1

# --- PostgreSQL, durable: fsync=on, synchronous_commit=on ------------------------------------
pg_port=$(free_port)
mkdir -p pg && chown postgres pg 2>/dev/null || true
pgdata="$work/pg/data"
"${as_pg[@]}" "$pg_bin/initdb" -D "$pgdata" --auth=trust -U postgres >pg/initdb.log 2>&1
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pgdata" -l "$work/pg/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $work/pg -c fsync=on -c synchronous_commit=on -c max_connections=100" \
  start >/dev/null
"$pg_bin/psql" -q -h 127.0.0.1 -p "$pg_port" -U postgres -d postgres -c "CREATE DATABASE cgbench" >/dev/null
pg_url="postgresql://postgres@127.0.0.1:$pg_port/cgbench"

# --- hosts -------------------------------------------------------------------------------------
bench_host_secrets
# write_host DIR STORE: DIR/host.yaml (its own audit log) on the shared plugin, trust and allowlist.
write_host() { bench_host_yaml "$1" "$2"; }
# start_host DIR: starts the host of DIR; sets host_pid and main (host:port).
start_host() {
  "$cg" host --config "$1/host.yaml" >"$1/host.out" 2>"$1/host.err" &
  host_pid=$!
  pids+=("$host_pid")
  for _ in $(seq 300); do [ -s "$1/host.out" ] && break; kill -0 "$host_pid" 2>/dev/null || break; sleep 0.1; done
  [ -s "$1/host.out" ] || { echo "bench/multihost_bench.sh: the host of $1 did not start:" >&2; cat "$1/host.err" >&2; exit 2; }
  main=$(head -1 "$1/host.out" | json 'd["main"]')
}
stop_host() { kill "$1"; wait "$1" 2>/dev/null || true; }

path=/webhooks/acme-orders/order.created
lua="$here/webhook_requests.lua"
# run_wrk THREADS CONNS DURATION URL FILE: one wrk run of first-time deliveries; its JSON line.
run_wrk() { wrk -t "$1" -c "$2" -d "${3}s" -s "$lua" "$4" -- "$5" "$1" once | grep '^{'; }
gen 2000 msg_warm_s_ warm_s.tsv
gen 2000 msg_warm_a_ warm_a.tsv
gen 2000 msg_warm_b_ warm_b.tsv
gen $((first_max * duration)) msg_first_s_ first_s.tsv
gen $((first_max * duration / 2)) msg_first_a_ first_a.tsv
gen $((first_max * duration / 2)) msg_first_b_ first_b.tsv

# (a) one host, SQLite.
write_host "$work/sqlite-host" "sqlite:$work/sqlite-host/state.db"
start_host "$work/sqlite-host"
sqlite_pid=$host_pid
run_wrk 2 "$connections" 3 "http://$main$path" warm_s.tsv >/dev/null
sqlite_run=$(run_wrk 2 "$connections" "$duration" "http://$main$path" first_s.tsv)
stop_host "$sqlite_pid"

# (b) two hosts, one PostgreSQL database; one wrk per host, run together.
write_host "$work/pg-host-a" "$pg_url"
write_host "$work/pg-host-b" "$pg_url"
start_host "$work/pg-host-a"; pid_a=$host_pid main_a=$main
start_host "$work/pg-host-b"; pid_b=$host_pid main_b=$main
half=$((connections / 2))
run_wrk 1 "$half" 3 "http://$main_a$path" warm_a.tsv >/dev/null &
wrk_a=$!
run_wrk 1 "$half" 3 "http://$main_b$path" warm_b.tsv >/dev/null
wait "$wrk_a"
run_wrk 1 "$half" "$duration" "http://$main_a$path" first_a.tsv >pg_a.json &
wrk_a=$!
run_wrk 1 "$half" "$duration" "http://$main_b$path" first_b.tsv >pg_b.json
wait "$wrk_a"
stop_host "$pid_a"
stop_host "$pid_b"
completed=$("$pg_bin/psql" -At -h 127.0.0.1 -p "$pg_port" -U postgres -d cgbench \
            -c "SELECT count(*) FROM idem_records WHERE state = 'completed'")

# (c) claims/s on the same server: the host's claim statement vs the plain equivalent.
# host_claim.sql is the text of PgIdempotencyStore::Claim's INSERT (store/postgresql/
# pg_idempotency_store.cpp) with pgbench variables for its parameters (the database clock).
cat >host_claim.sql <<'SQL'
\set k random(1, 4000000000000000000)
WITH now AS (SELECT COALESCE(NULL::bigint, cg_now_ms()) AS ms)
INSERT INTO idem_records (key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token,
                          created_ms, updated_ms, webhook_id, x_idempotency_key)
SELECT md5(:k::text) || md5((:k::bigint + 1)::text), 'acme-orders', 'order.created', 2, md5((:k::bigint + 2)::text),
       'in_progress', now.ms + 30000, 1, now.ms, now.ms, convert_to('msg_' || :k, 'UTF8'), ''::bytea FROM now
ON CONFLICT (key) DO NOTHING
RETURNING key, plugin, route, level, fingerprint, state, lease_until_ms, fencing_token, status, content_type, body,
          created_ms, updated_ms, webhook_id, x_idempotency_key;
SQL
# pgbench_tps SCRIPT: transactions (= claims) per second; pgbench's output on stderr if it failed.
pgbench_tps() {
  "$pg_bin/pgbench" -n -M extended -c "$pg_clients" -j 2 -T "$duration" -h 127.0.0.1 -p "$pg_port" -U postgres \
    -f "$1" cgbench >pgbench.out 2>&1 || true
  sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' pgbench.out
  grep -q '^tps = ' pgbench.out || cat pgbench.out >&2
}
host_claims=$(pgbench_tps host_claim.sql)
plain_claims=$(pgbench_tps "$here/pgbench_claim.sql")

disk_rate=$(python3 - "$work" <<'PY'
import os, sys, time
path = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
n, start = 0, time.monotonic()
while time.monotonic() - start < 2.0:
    os.write(fd, b"x" * 4096)
    os.fdatasync(fd)
    n += 1
print(f"{n / (time.monotonic() - start):.0f}")
os.close(fd)
os.unlink(path)
PY
)

# --- the table ---------------------------------------------------------------------------------
python3 - "$sqlite_run" "$(cat pg_a.json)" "$(cat pg_b.json)" "$host_claims" "$plain_claims" "$completed" \
  "$connections" "$duration" "$workers" "$pg_clients" "$disk_rate" <<'PY'
import json, os, sys, datetime
sqlite, pga, pgb = (json.loads(a) for a in sys.argv[1:4])
host_claims, plain_claims = float(sys.argv[4] or 0), float(sys.argv[5] or 0)
completed, conns, duration, workers, pg_clients, disk_rate = sys.argv[6:12]
load = open("/proc/loadavg").read().split()[:3]
pg_rps = pga["rps"] + pgb["rps"]
pg_p50 = max(pga["p50_ms"], pgb["p50_ms"])
pg_p99 = max(pga["p99_ms"], pgb["p99_ms"])
print(f"### Scale-out (acme-orders, ERP = nginx; {conns} connections, {duration} s runs; host workers {workers}; "
      f"PostgreSQL 15 with fsync=on, synchronous_commit=on; {os.cpu_count()} cores shared by wrk, hosts, nginx and "
      f"PostgreSQL; {datetime.date.today().isoformat()}; load average {', '.join(load)})")
print()
print("| first-time deliveries | req/s | p50 | p99 | vs one host on SQLite |")
print("| --- | ---: | ---: | ---: | ---: |")
print(f"| (a) one host, SQLite (wrk -t2 -c{conns}) | {sqlite['rps']:.0f} | {sqlite['p50_ms']:.2f} ms | "
      f"{sqlite['p99_ms']:.2f} ms | 1.00× |")
print(f"| (b) two hosts, one PostgreSQL database (2 × wrk -t1 -c{int(conns) // 2}; rates added, worst p50/p99) | "
      f"{pg_rps:.0f} | {pg_p50:.2f} ms | {pg_p99:.2f} ms | {pg_rps / max(sqlite['rps'], 1):.2f}× |")
print()
print(f"| claims on the same PostgreSQL server (pgbench -M extended -c {pg_clients} -j 2) | claims/s | ratio |")
print("| --- | ---: | ---: |")
print(f"| the host's claim statement (PgIdempotencyStore::Claim's INSERT … ON CONFLICT … RETURNING) | "
      f"{host_claims:.0f} | {host_claims / max(plain_claims, 1):.2f}× |")
print(f"| plain INSERT … ON CONFLICT DO NOTHING (bench/pgbench_claim.sql) | {plain_claims:.0f} | 1.00× |")
print()
bad = []
for name, r in (("SQLite", sqlite), ("PostgreSQL host A", pga), ("PostgreSQL host B", pgb)):
    if r["non2xx"] or r["socket_errors"]:
        bad.append(f"{name}: {r['non2xx']} non-2xx, {r['socket_errors']} socket errors")
    if r["exhausted"]:
        bad.append(f"{name}: the generated requests ran out (raise --first-max)")
if not host_claims or not plain_claims:
    bad.append("pgbench printed no tps")
print("Validity: " + ("every answer 2xx, no socket errors, no run ran out of requests." if not bad
                      else "INVALID — " + "; ".join(bad)))
print(f"PostgreSQL held {completed} completed records after (b) (warm-up runs included). Each first-time "
      f"delivery is one claim, so the two hosts drove {pg_rps:.0f} claims/s: "
      f"{pg_rps / max(host_claims, 1):.2f}× of what the claim statement alone reaches on this server.")
print(f"The disk's floor in the same run: {disk_rate} fdatasync'd 4 KiB appends/s from one thread.")
PY
