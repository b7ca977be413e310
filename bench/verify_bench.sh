#!/usr/bin/env bash
# bench/verify_bench.sh — the verification (loader) benchmark (called by ci/bench). Prints a
# markdown table.
#
#   bench/verify_bench.sh [--build DIR] [--size-mib 64] [--runs 10] [--n 5]
#
# Two payloads, each a real plugin .so (passes every check and loads) carrying a 64 MiB
# .rodata.payload section (assembler .incbin), packed with `clawguard pack` and signed with
# `clawguard sign --no-ledger` (SoftHSM2 key + ci/make-test-pki leaf):
#   * incompressible: random bytes;
#   * typical: the bytes of large shared libraries of this machine concatenated (≈3.5:1 zstd).
# In one run, per payload, timed with hyperfine (--warmup 2, --runs R, --export-json):
#   * `clawguard verify PKG --trust T --allowlist A` (no ledger)
#   * the floor of necessary work, as a shell pipeline: `openssl dgst -sha256 PKG` (hash the
#     package) && `openssl dgst -sha256 -verify leafpub.pem -signature sig.der pae.bin` (the DSSE
#     signature over PAE rebuilt from the bundle) && `zstd -dc PKG | openssl dgst -sha256`
#     (decompress and hash the unpacked bytes)
#   * `minisign -Vm PKG` (unencrypted Ed25519 key, minisign -G -W) and `gpg --verify` of a detached
#     signature (throwaway GNUPGHOME, `gpg --quick-gen-key` default algorithm) on the same package
# plus in-process Loader::Load throughput (bench/load_bench, N loads, unloading between) beside
# `openssl speed -evp sha256 -bytes 16384 -seconds 3`, and the peak RSS of `clawguard verify`
# (/usr/bin/time -v).
# Targets: clawguard verify ≤ 1.3 × floor on both payloads; faster than minisign and gpg on the
# incompressible one; peak RSS ≤ package + unpacked library + 32 MiB.
# Needs SoftHSM2, openssl, zstd, jq, cc, hyperfine, /usr/bin/time (package `time`); minisign and
# gpg are used when present. Token, keys and PIN are throwaway.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
build="${CLAWGUARD_BENCH_BUILD:-${CLAWGUARD_BUILD_DIR:-$repo/build/bench}}" size_mib=64 runs=10 n=5
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --size-mib) size_mib="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    *) echo "bench/verify_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cg="${CLAWGUARD_BIN:-$build/cli/clawguard}"
load_bench="${LOAD_BENCH:-$build/bench/load_bench}"
module="${CLAWGUARD_PKCS11_MODULE:-/usr/lib/softhsm/libsofthsm2.so}"
die() { echo "bench/verify_bench.sh: $*" >&2; exit 2; }
[ -x "$cg" ] || die "no clawguard at $cg (build it or set CLAWGUARD_BIN)"
[ -x "$load_bench" ] || die "no load_bench at $load_bench (build target load_bench)"
command -v hyperfine >/dev/null || die "hyperfine is required"
[ -x /usr/bin/time ] || die "/usr/bin/time is required (apt-get install time)"
for t in openssl zstd jq cc softhsm2-util; do command -v "$t" >/dev/null || die "$t is required"; done

work="$(mktemp -d "${TMPDIR:-/tmp}/cg-verify-bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
size=$((size_mib * 1024 * 1024))

# --- a throwaway token, key and PKI (bench/lib.sh) ---------------------------------------------
. "$here/lib.sh"
bench_token_and_leaf "/O=acme/CN=acme bench" bench

# --- payload data --------------------------------------------------------------------------------
head -c "$size" /dev/urandom >incompressible.bin
# typical: big shared libraries of this machine, largest first, concatenated up to $size bytes.
: >typical.bin
while read -r _ f; do
  cat "$f" >>typical.bin
  [ "$(stat -c %s typical.bin)" -ge "$size" ] && break
done < <(find /usr/lib/x86_64-linux-gnu /usr/lib -maxdepth 2 -name '*.so*' -type f -size +1M -printf '%s %p\n' 2>/dev/null |
         sort -rn | awk '!seen[$1]++')
[ "$(stat -c %s typical.bin)" -ge "$size" ] || die "not enough shared-library bytes on this machine for $size_mib MiB"
truncate -s "$size" typical.bin

# --- the plugins, packages and signatures --------------------------------------------------------
make_plugin() {  # make_plugin KIND DATA
  local kind=$1 data=$2 d="plugin-$1"
  mkdir -p "$d/lib"
  cat >"$d/plugin.c" <<C
#include "clawguard/plugin.h"
__asm__(".section .rodata.payload,\"a\"\n.incbin \"$work/$data\"\n.previous");
static int bench_init(const cg_host_api *host) { (void)host; return 0; }
static int bench_handle(cg_call *call, const char *route, const cg_request *request) {
  (void)call; (void)route; (void)request; return 0;
}
static void bench_shutdown(void) {}
static const cg_plugin kPlugin = {CLAWGUARD_PLUGIN_ABI, 0u, bench_init, bench_handle, bench_shutdown};
CG_EXPORT const cg_plugin *clawguard_plugin_v1(void) { return &kPlugin; }
C
  cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -I"$repo/include" -Wl,-z,noexecstack \
     -o "$d/lib/libbench.so" "$d/plugin.c"
  cat >"$d/manifest.yaml" <<YAML
schema: clawguard/plugin/v1
name: bench-$kind
version: 1.0.0
publisher: acme
abi: 1
entry: lib/libbench.so
files:
  lib/libbench.so: null
YAML
  local pkg
  pkg="$("$cg" pack --manifest "$d/manifest.yaml" --out dist --json | sed -n 's/.*"package":"\([^"]*\)".*/\1/p')"
  [ -f "$pkg" ] || die "clawguard pack failed for $kind"
  "$cg" sign --module "$module" --key "$uri" --pin-source env:BENCH_PIN --chain pki/bench-chain.pem \
     --no-ledger "$pkg" >/dev/null
  echo "$pkg"
}
pkg_inc="$(make_plugin incompressible incompressible.bin)"
pkg_typ="$(make_plugin typical typical.bin)"
rm -f incompressible.bin typical.bin  # baked into the .so files now

bench_trust_yaml "bench-*" "{ max_package: 256MiB, max_unpacked: 1GiB, max_entries: 64, max_ratio: 100 }"
{
  echo "schema: clawguard/allowlist/v1"
  echo "version: 1"
  echo "expires: 2030-01-01T00:00:00Z"
  echo "plugins:"
  for p in "$pkg_inc" "$pkg_typ"; do
    k=$(basename "$p" .claw); k=${k%-1.0.0}
    echo "  - { name: $k, version: 1.0.0, sha256: $(sha256sum "$p" | cut -d' ' -f1) }"
  done
} >allowlist.yaml

# The floor's inputs: PAE rebuilt from the bundle, the DER signature and the leaf's public key.
floor_inputs() {  # floor_inputs PKG KIND
  local b="$1.sig" k=$2 type keyid
  jq -r '.dsseEnvelope.payload' "$b" | base64 -d >"payload-$k.bin"
  type=$(jq -r '.dsseEnvelope.payloadType' "$b")
  printf 'DSSEv1 %d %s %d ' "${#type}" "$type" "$(stat -c %s "payload-$k.bin")" >"pae-$k.bin"
  cat "payload-$k.bin" >>"pae-$k.bin"
  jq -r '.dsseEnvelope.signatures[0].sig' "$b" | base64 -d >"sig-$k.der"
  keyid=$(jq -r '.dsseEnvelope.signatures[0].keyid' "$b")
  jq -r ".verificationMaterial.certificates[\"$keyid\"][0]" "$b" | base64 -d >"leaf-$k.der"
  openssl x509 -inform DER -in "leaf-$k.der" -pubkey -noout >"leafpub-$k.pem"
  openssl dgst -sha256 -verify "leafpub-$k.pem" -signature "sig-$k.der" "pae-$k.bin" | grep -q 'Verified OK' ||
    die "openssl does not verify the bundle signature of $1"
}

have_minisign=0 have_gpg=0
if command -v minisign >/dev/null; then
  minisign -G -W -p mini.pub -s mini.key >/dev/null 2>&1 && have_minisign=1
fi
if command -v gpg >/dev/null; then
  export GNUPGHOME="$work/gnupg"
  mkdir -p "$GNUPGHOME" && chmod 700 "$GNUPGHOME"
  gpg --batch --passphrase '' --quick-gen-key 'bench <bench@example.invalid>' default default never >/dev/null 2>&1 &&
    have_gpg=1
fi

# mean_seconds NAME CMD: mean wall time of CMD (hyperfine, --warmup 2).
mean_seconds() {
  hyperfine --warmup 2 --runs "$runs" --export-json "$1.json" --shell bash "$2" >/dev/null 2>&1 ||
    die "hyperfine failed on: $2"
  jq -r '.results[0].mean' "$1.json"
}
# peak_rss_kib CMD...: maximum resident set size of CMD in KiB.
peak_rss_kib() {
  /usr/bin/time -v "$@" 2>time.txt >/dev/null || die "failed under /usr/bin/time: $*"
  sed -n 's/.*Maximum resident set size (kbytes): *\([0-9]*\).*/\1/p' time.txt
}

ms() { printf '%.1f' "$(echo "$1 * 1000" | bc -l)"; }
ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }
mib() { printf '%.1f' "$(echo "$1 / 1048576" | bc -l)"; }

declare -A T RSS PKGB LIBB ZR LOADMBS
for kind in incompressible typical; do
  if [ "$kind" = incompressible ]; then pkg=$pkg_inc; else pkg=$pkg_typ; fi
  out=$("$cg" verify "$pkg" --trust trust.yaml --allowlist allowlist.yaml --json) ||
    die "clawguard verify refused $pkg: $out"
  echo "$out" | jq -e '.verdict == "verified"' >/dev/null || die "not verified: $out"
  floor_inputs "$pkg" "$kind"
  PKGB[$kind]=$(stat -c %s "$pkg")
  LIBB[$kind]=$(stat -c %s "plugin-$kind/lib/libbench.so")
  ZR[$kind]=$(ratio "${LIBB[$kind]}" "${PKGB[$kind]}")
  if [ "$have_minisign" = 1 ]; then
    minisign -S -s mini.key -m "$pkg" -x "$pkg.minisig" >/dev/null
    minisign -V -p mini.pub -m "$pkg" -x "$pkg.minisig" -q || die "minisign -V failed"
  fi
  if [ "$have_gpg" = 1 ]; then
    gpg --batch --yes --detach-sign -o "$pkg.asc" "$pkg" 2>/dev/null
    gpg --batch --verify "$pkg.asc" "$pkg" 2>/dev/null || die "gpg --verify failed"
  fi

  T[cg-$kind]=$(mean_seconds "cg-$kind" "$cg verify $pkg --trust trust.yaml --allowlist allowlist.yaml")
  T[floor-$kind]=$(mean_seconds "floor-$kind" \
    "openssl dgst -sha256 $pkg >/dev/null && openssl dgst -sha256 -verify leafpub-$kind.pem -signature sig-$kind.der pae-$kind.bin >/dev/null && zstd -dc $pkg | openssl dgst -sha256 >/dev/null")
  [ "$have_minisign" = 1 ] && T[mini-$kind]=$(mean_seconds "mini-$kind" "minisign -V -q -p mini.pub -m $pkg -x $pkg.minisig")
  [ "$have_gpg" = 1 ] && T[gpg-$kind]=$(mean_seconds "gpg-$kind" "gpg --batch --verify $pkg.asc $pkg 2>/dev/null")

  RSS[$kind]=$(peak_rss_kib "$cg" verify "$pkg" --trust trust.yaml --allowlist allowlist.yaml)
  LOADMBS[$kind]=$("$load_bench" --trust trust.yaml --allowlist allowlist.yaml --package "$pkg" --n "$n" | jq -r '.mb_per_second')
done
# openssl speed: the "16384 bytes" column of the sha256 line is in 1000s of bytes per second.
sha_kbs=$(openssl speed -evp sha256 -bytes 16384 -seconds 3 2>/dev/null | awk '/^sha256/ {print $NF}' | tr -d k)
sha_mbs=$(printf '%.1f' "$(echo "$sha_kbs / 1000" | bc -l)")
load_avg=$(uptime | sed 's/.*load average: //')

echo "### Verification (${size_mib} MiB plugin library, mean of $runs runs; $(nproc) cores; $(date -u +%Y-%m-%d); load average $load_avg)"
echo
echo "| payload | package | zstd ratio (library : package) |"
echo "| --- | ---: | ---: |"
for kind in incompressible typical; do
  echo "| $kind | $(mib "${PKGB[$kind]}") MiB | ${ZR[$kind]}:1 |"
done
echo
echo "| what | incompressible | vs floor | typical | vs floor |"
echo "| --- | ---: | ---: | ---: | ---: |"
row() {  # row LABEL KEY
  local a=${T[$2-incompressible]:-} b=${T[$2-typical]:-}
  [ -n "$a" ] || return 0
  echo "| $1 | $(ms "$a") ms | $(ratio "$a" "${T[floor-incompressible]}")× | $(ms "$b") ms | $(ratio "$b" "${T[floor-typical]}")× |"
}
row '`clawguard verify` (no ledger)' cg
row 'floor: `openssl dgst -sha256` + signature verify over PAE + `zstd -dc \| openssl dgst -sha256`' floor
row '`minisign -V` (Ed25519)' mini
row '`gpg --verify` (detached, default key)' gpg
echo
echo "| in process | incompressible | typical |"
echo "| --- | ---: | ---: |"
printf '| `Loader::Load` (bench/load_bench, N=%s, unloading between) | %.1f MB/s | %.1f MB/s |\n' "$n" "${LOADMBS[incompressible]}" "${LOADMBS[typical]}"
echo "| \`openssl speed -evp sha256 -bytes 16384\` | $sha_mbs MB/s | $sha_mbs MB/s |"
echo
echo "| peak RSS of \`clawguard verify\` | incompressible | typical |"
echo "| --- | ---: | ---: |"
budget() { echo "${PKGB[$1]} / 1048576 + ${LIBB[$1]} / 1048576 + 32" | bc -l; }
printf '| measured | %.1f MiB | %.1f MiB |\n' "$(echo "${RSS[incompressible]} / 1024" | bc -l)" "$(echo "${RSS[typical]} / 1024" | bc -l)"
printf '| target: package + unpacked library + 32 MiB | %.1f MiB | %.1f MiB |\n' "$(budget incompressible)" "$(budget typical)"
echo
verdicts=()
for kind in incompressible typical; do
  ok=$(echo "${T[cg-$kind]} <= 1.3 * ${T[floor-$kind]}" | bc -l)
  [ "$ok" = 1 ] && verdicts+=("met: verify ≤ 1.3 × floor ($kind)") || verdicts+=("MISSED: verify > 1.3 × floor ($kind)")
  ok=$(echo "${RSS[$kind]} / 1024 <= $(budget "$kind")" | bc -l)
  [ "$ok" = 1 ] && verdicts+=("met: peak RSS within budget ($kind)") || verdicts+=("MISSED: peak RSS over budget ($kind)")
done
for tool in mini gpg; do
  [ -n "${T[$tool-incompressible]:-}" ] || continue
  ok=$(echo "${T[cg-incompressible]} < ${T[$tool-incompressible]}" | bc -l)
  name=$([ "$tool" = mini ] && echo minisign || echo gpg)
  [ "$ok" = 1 ] && verdicts+=("met: faster than $name (incompressible)") || verdicts+=("MISSED: not faster than $name (incompressible)")
done
echo "Targets: $(IFS=';'; echo "${verdicts[*]}" | sed 's/;/; /g')."
