#!/usr/bin/env bash
# bench/sign_bench.sh — the signing benchmark (called by ci/bench). Prints a markdown table.
#
#   bench/sign_bench.sh [--build DIR] [--size-mib 64] [--n 200] [--runs 10]
#
# In one run, on the same 64 MiB package:
#   * `clawguard sign --no-ledger` (read once, SHA-256 once, manifest entry, HSM login + ECDSA)
#   * `openssl dgst -sha256 -sign key.pem` (a P-256 file key: the floor for "hash + sign")
#   * `minisign -S` (unencrypted Ed25519 key, minisign -G -W)
# timed with hyperfine when installed (else a bash time loop); and HSM signatures/s:
#   * N `pkcs11-tool --sign -m ECDSA` processes (load module, log in, sign; per call)
#   * N HsmSigner::Sign calls in one process (bench/hsm_sign_bench: one login, one session)
# Target: clawguard sign ≤ 1.2 × openssl dgst -sign. Needs SoftHSM2, opensc (pkcs11-tool),
# openssl, zstd; minisign and hyperfine are used when present. The token, keys and PIN are
# throwaway (the PIN is given to pkcs11-tool on its command line: acceptable for a benchmark).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${CLAWGUARD_BUILD_DIR:-$repo/build/dev}" size_mib=64 n=200 runs=10
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --size-mib) size_mib="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    *) echo "bench/sign_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cg="${CLAWGUARD_BIN:-$build/cli/clawguard}"
hsm_bench="${HSM_SIGN_BENCH:-$build/bench/hsm_sign_bench}"
module="${CLAWGUARD_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
[ -x "$cg" ] || { echo "bench/sign_bench.sh: no clawguard at $cg (build it or set CLAWGUARD_BIN)" >&2; exit 2; }
[ -x "$hsm_bench" ] || { echo "bench/sign_bench.sh: no hsm_sign_bench at $hsm_bench (build target hsm_sign_bench)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/cg-sign-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"

# --- a throwaway token, key and PKI (bench/lib.sh) ---------------------------------------------
. "$here/lib.sh"
bench_token_and_leaf "/O=bench/CN=bench" bench

# --- the package: a small library plus a random data file, listed in the manifest --------------
mkdir -p plugin/lib plugin/data
so="$(find "$build/examples" -name 'libacme_orders.so' 2>/dev/null | head -1 || true)"
if [ -n "$so" ]; then cp "$so" plugin/lib/libplugin.so; else head -c 65536 /dev/urandom >plugin/lib/libplugin.so; fi
head -c "$((size_mib * 1024 * 1024))" /dev/urandom >plugin/data/blob.bin
cat >plugin/manifest.yaml <<YAML
schema: clawguard/plugin/v1
name: bench-plugin
version: 1.0.0
publisher: bench
abi: 1
entry: lib/libplugin.so
files:
  lib/libplugin.so: null
  data/blob.bin: null
YAML
pkg="$("$cg" pack --manifest plugin/manifest.yaml --out dist --json | sed -n 's/.*"package":"\([^"]*\)".*/\1/p')"
[ -f "$pkg" ] || { echo "bench/sign_bench.sh: clawguard pack failed" >&2; exit 2; }
pkg_mib="$(( $(stat -c %s "$pkg") / 1024 / 1024 ))"

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out file-key.pem 2>/dev/null
have_minisign=0
if command -v minisign >/dev/null; then
  minisign -G -W -p mini.pub -s mini.key >/dev/null 2>&1 && have_minisign=1
fi

sign_cmd="BENCH_PIN=$pin $cg sign --module $module --key '$uri' --pin-source env:BENCH_PIN --chain pki/bench-chain.pem --no-ledger $pkg"
openssl_cmd="openssl dgst -sha256 -sign file-key.pem -out openssl.sig $pkg"
minisign_cmd="minisign -S -s mini.key -m $pkg -x minisign.sig"

# mean_seconds NAME CMD: mean wall time of CMD over $runs runs (hyperfine if present).
mean_seconds() {
  if command -v hyperfine >/dev/null; then
    hyperfine --warmup 2 --runs "$runs" --export-json "$1.json" --shell bash "$2" >/dev/null 2>&1
    sed -n 's/.*"mean": *\([0-9.e-]*\).*/\1/p' "$1.json" | head -1
  else
    local start end
    start=$(date +%s.%N)
    for _ in $(seq "$runs"); do bash -c "$2" >/dev/null 2>&1; done
    end=$(date +%s.%N)
    echo "($end - $start) / $runs" | bc -l
  fi
}

t_sign=$(mean_seconds clawguard "$sign_cmd")
t_openssl=$(mean_seconds openssl "$openssl_cmd")
t_minisign=""
[ "$have_minisign" = 1 ] && t_minisign=$(mean_seconds minisign "$minisign_cmd")

# --- HSM signatures per second --------------------------------------------------------------
head -c 32 /dev/urandom >digest.bin
start=$(date +%s.%N)
for _ in $(seq "$n"); do
  pkcs11-tool --module "$module" --token-label bench --login --pin "$pin" --label bench-key --sign -m ECDSA \
    -i digest.bin -o p11.sig >/dev/null 2>&1
done
end=$(date +%s.%N)
p11_rate=$(echo "$n / ($end - $start)" | bc -l)
export BENCH_PIN="$pin"
inproc_rate=$("$hsm_bench" --module "$module" --key "$uri" --pin-source env:BENCH_PIN --n "$n" |
              sed -n 's/.*"signatures_per_second":\([0-9.e+-]*\).*/\1/p')

ms() { echo "$1 * 1000" | bc -l | xargs printf '%.1f'; }
ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }

echo "### Signing (${pkg_mib} MiB package, mean of $runs runs; $(nproc) cores; $(date -u +%Y-%m-%d))"
echo
echo "| what | time | vs openssl dgst -sign |"
echo "| --- | ---: | ---: |"
echo "| \`clawguard sign --no-ledger\` (SoftHSM2, ECDSA P-256) | $(ms "$t_sign") ms | $(ratio "$t_sign" "$t_openssl")× |"
echo "| \`openssl dgst -sha256 -sign\` (P-256 file key) | $(ms "$t_openssl") ms | 1.00× |"
if [ -n "$t_minisign" ]; then
  echo "| \`minisign -S\` (Ed25519 file key) | $(ms "$t_minisign") ms | $(ratio "$t_minisign" "$t_openssl")× |"
fi
echo
echo "| HSM signatures (ECDSA P-256, SoftHSM2, N=$n) | signatures/s | vs pkcs11-tool |"
echo "| --- | ---: | ---: |"
echo "| \`pkcs11-tool --sign -m ECDSA\`, one process per signature | $(printf '%.1f' "$p11_rate") | 1.00× |"
echo "| \`HsmSigner::Sign\` in one process (bench/hsm_sign_bench) | $(printf '%.1f' "$inproc_rate") | $(ratio "$inproc_rate" "$p11_rate")× |"
echo
target=$(echo "$t_sign <= 1.2 * $t_openssl" | bc -l)
if [ "$target" = 1 ]; then
  echo "Target met: clawguard sign ≤ 1.2 × openssl dgst -sign."
else
  echo "Target missed: clawguard sign > 1.2 × openssl dgst -sign."
fi
