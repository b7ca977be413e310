#!/usr/bin/env bash
# unit_security_test.sh UNIT — the service unit's hardening, as systemd scores it: the overall
# exposure of `systemd-analyze security --offline=true` must be at most 2.0 ("OK"; a bare unit is
# 9.2), and the unit must still allow what the plugin sandbox needs (the namespaces a worker is
# started in, the system calls it confines itself with), or every sandboxed plugin would fail to
# start under systemd while the host's own tests pass.
set -euo pipefail
unit=$1
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze not found (ci/setup-deps installs systemd)"; exit 1; }
report=$(systemd-analyze security --offline=true --threshold=20 --no-pager "$unit" 2>&1) || {
  echo "$report"
  echo "FAIL: $unit: exposure above 2.0 (or the unit does not parse)"
  exit 1
}
echo "$report" | grep -E "Overall exposure"
fail=0
need() {  # need KEY VALUE...: the unit's KEY= lines carry each VALUE
  local key=$1; shift
  local line
  line=$(grep -E "^$key=" "$unit" | grep -v '=~' | tr '\n' ' ')
  for v in "$@"; do
    case " ${line#*=} " in *" $v "*) ;; *) echo "FAIL: $key= lacks $v (the plugin sandbox needs it)"; fail=1 ;; esac
  done
}
need RestrictNamespaces user pid net ipc mnt uts
need SystemCallFilter @system-service seccomp landlock_create_ruleset landlock_add_rule landlock_restrict_self
need RestrictAddressFamilies AF_UNIX
grep -qx "Type=notify" "$unit" || { echo "FAIL: Type=notify (the host sends READY=1)"; fail=1; }
grep -qx "KillMode=control-group" "$unit" || { echo "FAIL: KillMode=control-group (workers go with the host)"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
