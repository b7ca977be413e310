# bench/lib.sh — what the bench scripts share (sourced, not run). The caller sets $work (and cd's
# into it), $repo, $here, $cg and $module; bench_sign_plugin also needs $stage, gen $hook,
# bench_start_nginx an array pids (processes to stop at exit). Runs under `set -euo pipefail`.

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# bench_token_and_leaf SUBJECT LEAF: a throwaway SoftHSM2 token with a P-256 key, and the test PKI
# (ci/make-test-pki) with a LEAF certificate for that key (pki/LEAF-chain.pem); sets $uri and $pin
# (a throwaway PIN). ClawGuard gets the PIN through the environment (BENCH_PIN), never in argv.
bench_token_and_leaf() {
  pin="bench-pin-$$"
  mkdir -p tokens
  printf 'directories.tokendir = %s/tokens\nobjectstore.backend = file\nlog.level = ERROR\n' "$work" >softhsm2.conf
  export SOFTHSM2_CONF="$work/softhsm2.conf"
  softhsm2-util --init-token --free --label bench --pin "$pin" --so-pin "so-$pin" >/dev/null
  export BENCH_PIN="$pin"
  uri="$("$cg" keys generate --module "$module" --token bench --label bench-key --pin-source env:BENCH_PIN --json |
         sed -n 's/.*"uri":"\([^"]*\)".*/\1/p')"
  "$repo/ci/make-test-pki" --out pki >/dev/null
  "$cg" keys csr --module "$module" --key "$uri" --pin-source env:BENCH_PIN --subject "$1" --out "$2.csr" 2>/dev/null
  "$repo/ci/make-test-pki" --out pki --csr "$2.csr" --leaf "$2" >/dev/null
}

# bench_trust_yaml PATTERN LIMITS: trust.yaml for publisher "acme" with the name PATTERN, the test
# root pinned by its absolute path (hosts may run in subdirectories), and the given limits line.
bench_trust_yaml() {
  local root_pin
  root_pin=$(openssl x509 -in "$work/pki/root.pem" -outform DER | sha256sum | cut -d' ' -f1)
  cat >trust.yaml <<YAML
schema: clawguard/trust/v1
mode: enforce
roots:
  - file: $work/pki/root.pem
    sha256: $root_pin
require_eku: codeSigning
publishers:
  acme: ["$1"]
threshold: 1
revoked: { certificates: [], keys: [], crls: [] }
allowlist_signer: null
rollback: refuse
limits: $2
elf: { allowed_needed: [libc.so.6] }
YAML
}

# bench_sign_plugin: bench_token_and_leaf for "acme release", the example plugin packed and signed
# in the token, trust.yaml and allowlist.yaml for it; sets $pkg.
bench_sign_plugin() {
  bench_token_and_leaf "/O=acme/CN=acme release" release
  "$cg" pack --manifest "$stage/manifest.yaml" --out plugins >/dev/null
  pkg=plugins/acme-orders-1.4.2.claw
  "$cg" sign --module "$module" --key "$uri" --pin-source env:BENCH_PIN --chain pki/release-chain.pem --no-ledger \
    "$pkg" >/dev/null
  bench_trust_yaml "acme-*" "{ max_package: 16MiB, max_unpacked: 64MiB, max_entries: 8, max_ratio: 100 }"
  printf 'schema: clawguard/allowlist/v1\nversion: 1\nexpires: 2099-12-31T00:00:00Z\nplugins:\n  - { name: acme-orders, version: 1.4.2, sha256: %s }\n' \
    "$(sha256sum "$pkg" | cut -d' ' -f1)" >allowlist.yaml
}

# bench_start_nginx WORKER_PROCESSES: nginx answering 200 '{}' to everything on a free loopback
# port (the ERP, and host_bench's reference); sets $nginx_port and waits until it answers.
bench_start_nginx() {
  nginx_port=$(free_port)
  mkdir -p nginx-tmp
  cat >nginx.conf <<NGINX
daemon off;
worker_processes $1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx-tmp/body;
  proxy_temp_path $work/nginx-tmp/proxy;
  fastcgi_temp_path $work/nginx-tmp/fastcgi;
  uwsgi_temp_path $work/nginx-tmp/uwsgi;
  scgi_temp_path $work/nginx-tmp/scgi;
  keepalive_requests 10000000;
  server {
    listen 127.0.0.1:$nginx_port;
    location / { default_type application/json; return 200 '{}'; }
  }
}
NGINX
  nginx -p "$work" -c "$work/nginx.conf" &
  pids+=($!)
  local _
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$nginx_port/" && break; sleep 0.05; done
}

# gen N PREFIX OUT: N distinct pre-signed first-time requests (clawguard-webhook gen) into OUT.
gen() { "$hook" gen "$1" --secret-env BENCH_WHSEC --template "$here/host_event_template.json" --id-prefix "$2" --out "$3" >/dev/null; }

# bench_host_yaml DIR STORE: DIR/host.yaml for the signed acme-orders plugin of bench_sign_plugin
# ($work/plugins, trust.yaml, allowlist.yaml) with nginx as the ERP ($nginx_port), STORE as the
# store URL (a relative sqlite: path is relative to where the host is started) and DIR's own audit
# log; $workers I/O threads; listen.execution from BENCH_EXECUTION (threads or fibers) and
# listen.carriers from BENCH_CARRIERS (fibers only) when set; plugins.isolation from
# BENCH_ISOLATION (sandbox or none; unset: the build's default) when set. The secrets come from
# BENCH_ADMIN_TOKEN, BENCH_WHSEC and BENCH_ERP_AUTH in the environment.
bench_host_yaml() {
  mkdir -p "$1"
  local execution_yaml=""
  case "${BENCH_EXECUTION:-}" in
    "") ;;
    threads|fibers) execution_yaml=", execution: $BENCH_EXECUTION" ;;
    *) echo "bench: BENCH_EXECUTION is threads or fibers, not '$BENCH_EXECUTION'" >&2; exit 2 ;;
  esac
  [ -n "${BENCH_CARRIERS:-}" ] && execution_yaml="$execution_yaml, carriers: $BENCH_CARRIERS"
  local isolation_yaml=""
  case "${BENCH_ISOLATION:-}" in
    "") ;;
    sandbox|none) isolation_yaml=", isolation: $BENCH_ISOLATION" ;;
    *) echo "bench: BENCH_ISOLATION is sandbox or none, not '$BENCH_ISOLATION'" >&2; exit 2 ;;
  esac
  cat >"$1/host.yaml" <<YAML
schema: clawguard/host/v1
listen: { address: 127.0.0.1:0, tls: null, max_body: 1MiB, max_headers: 16KiB, workers: $workers$execution_yaml }
admin: { address: 127.0.0.1:0, token: env:BENCH_ADMIN_TOKEN, tls: null }
store: $2
plugins: { dir: $work/plugins, trust: $work/trust.yaml, allowlist: $work/allowlist.yaml, handler_timeout: 5s$isolation_yaml }
webhooks:
  tolerance: 300s
  clock_skew: 5m
  platform_retry: { schedule: [1m, 2m, 4m, 8m, 16m] }
  routes:
    acme-orders/order.created: { current: env:BENCH_WHSEC }
  rate_limit: { per_plugin: 1000000/s, burst: 1000000 }
idempotency: { retention: 24h, lease: 30s, tombstones: 30d, intent_expiry: 24h }
erp:
  base_url: http://127.0.0.1:$nginx_port
  timeout: 5s
  ca: $work/pki/root.pem
  auth: env:BENCH_ERP_AUTH
  retry: { base: 1s, max: 1m, attempts: 3, jitter: 20%, floor_429: 60s }
breaker:
  key: { failures: 3, window: 5s, cooldown: 30s }
  erp: { failures: 1000, window: 30s, cooldown: 60s, half_open_probes: 1 }
log: { audit: audit.jsonl, redact: [token] }
YAML
}

# bench_host_secrets exports the secrets bench_host_yaml's host.yaml reads: a random admin token,
# a random webhook secret, and the ERP credential nginx ignores.
bench_host_secrets() {
  export BENCH_ADMIN_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  export BENCH_WHSEC="whsec_$(head -c 32 /dev/urandom | base64 -w0)"
  export BENCH_ERP_AUTH="Bearer bench-erp-token-0123456789abcdef"
}

# bench_start_host DIR BIN: starts `BIN host` on DIR/host.yaml with DIR as its working directory
# (output in DIR/host.out and DIR/host.err), waits until it prints its addresses, and sets host_pid
# and main (host:port of the webhook listener); the pid is added to the caller's pids array.
bench_start_host() {
  (cd "$1" && exec "$2" host --config host.yaml >host.out 2>host.err) &
  host_pid=$!
  pids+=("$host_pid")
  for _ in $(seq 300); do [ -s "$1/host.out" ] && break; kill -0 "$host_pid" 2>/dev/null || break; sleep 0.1; done
  [ -s "$1/host.out" ] || { echo "$(basename "$0"): the host in $1 ($2) did not start:" >&2; cat "$1/host.err" >&2; exit 2; }
  main=$(head -1 "$1/host.out" | json 'd["main"]')
}
