#!/usr/bin/env bash
# generate-man.sh CLAWGUARD OUTDIR — the manual pages, made by help2man from the command's own
# help (CLI11): clawguard.1 from `clawguard --help`, and clawguard-COMMAND.1 from
# `clawguard COMMAND --help` for each subcommand that `clawguard --help` lists. Each is written
# to OUTDIR compressed with gzip -9n, as Debian installs manual pages (cmake/Packaging.cmake runs
# this at build time and installs OUTDIR/*.1.gz to share/man/man1).
set -euo pipefail
if [ "$#" -ne 2 ]; then
  echo "usage: $0 CLAWGUARD OUTDIR" >&2
  exit 2
fi
exe=$(realpath "$1")
out=$2
command -v help2man >/dev/null || { echo "$0: help2man not found (ci/setup-deps installs it)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

version=$("$exe" --version)   # "clawguard X.Y.Z"
version=${version##* }
help=$("$exe" --help)
# The first line is "clawguard — WHAT IT DOES".
summary=$(head -n 1 <<<"$help")
summary=${summary#*— }
# "Subcommands:" then one "  NAME   DESCRIPTION" line each, up to a blank line.
subcommands=$(awk '/^Subcommands:/ { on = 1; next } on && /^[[:space:]]*$/ { on = 0 } on && /^  [a-z]/ { print }' <<<"$help")
if [ -z "$subcommands" ]; then
  echo "$0: no subcommands found in '$exe --help'" >&2
  exit 1
fi

h2m() {  # h2m PROGRAM NAME_LINE PAGE [help2man options]: the page PAGE.1 for PROGRAM
  local program=$1 name=$2 page=$3
  shift 3
  # UTF-8 (the help has an em dash), whatever the build's locale: help2man writes ??? for what
  # its locale cannot encode.
  LC_ALL=C.UTF-8 help2man --locale=C.UTF-8 --no-info --no-discard-stderr --section=1 \
    --version-string="$version" --source="ClawGuard $version" --manual="ClawGuard manual" \
    --name="$name" --output="$work/$page.1" "$@" "$program"
}

mkdir -p "$work/bin"
see_also=""
while read -r cmd description; do
  # A wrapper named clawguard-CMD, so the page's NAME and title are clawguard-CMD.
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$exe" "$cmd" >"$work/bin/clawguard-$cmd"
  chmod +x "$work/bin/clawguard-$cmd"
  printf '[SEE ALSO]\n.BR clawguard (1)\n' >"$work/clawguard-$cmd.h2m"
  h2m "$work/bin/clawguard-$cmd" "${description:-clawguard $cmd}" "clawguard-$cmd" \
    --include="$work/clawguard-$cmd.h2m"
  see_also+="${see_also:+,
}.BR clawguard-$cmd (1)"
done <<<"$subcommands"
printf '[SEE ALSO]\n%s\n' "$see_also" >"$work/clawguard.h2m"
h2m "$exe" "$summary" clawguard --include="$work/clawguard.h2m"

mkdir -p "$out"
rm -f "$out"/*.1.gz
for page in "$work"/*.1; do
  gzip -9n -c "$page" >"$out/$(basename "$page").gz"
done
