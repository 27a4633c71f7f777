#!/bin/sh
# REPLAYSSM_PYTHON overrides the python of the oracle checks (run_python.sh): a fake python given through it is the
# one run (with the script and its arguments); unset, the default is run, or the test is skipped (77) when the
# default is missing; set to something that is not an executable, the test fails (1) instead of running the default.
# Usage: python_override_test.sh <run_python.sh>
wrapper=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyoverride.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
for who in fake default; do
  printf '#!/bin/sh\necho "%s python ran: $*"\n' "$who" > "$tmp/$who"
  chmod +x "$tmp/$who"
done
bad=0
expect() {  # expect <want rc> <want output substring> <env setting> <default python>
  out=$(env $3 /bin/sh "$wrapper" "$4" check.py arg1 2>&1)
  rc=$?
  case "$out" in
    *"$2"*) [ "$rc" -eq "$1" ] && { echo "ok   [$3] exit $rc: $out"; return; } ;;
  esac
  echo "FAIL [$3] default $4: expected exit $1 and '$2', got exit $rc: $out"
  bad=1
}
expect 0 "fake python ran: check.py arg1" "REPLAYSSM_PYTHON=$tmp/fake" "$tmp/default"
expect 0 "fake python ran: check.py arg1" "REPLAYSSM_PYTHON=$tmp/fake" "$tmp/missing"
expect 0 "default python ran: check.py arg1" "-u REPLAYSSM_PYTHON" "$tmp/default"
expect 77 "SKIP: $tmp/missing not found" "-u REPLAYSSM_PYTHON" "$tmp/missing"
expect 1 "FAIL: REPLAYSSM_PYTHON=$tmp/nope" "REPLAYSSM_PYTHON=$tmp/nope" "$tmp/default"
exit $bad
