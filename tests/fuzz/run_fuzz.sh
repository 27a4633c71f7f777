#!/bin/sh
# run_fuzz.sh BINARY CORPUS SECONDS FINDINGS_DIR WHY: fuzzes the readers for SECONDS from the seed corpus (CTest
# fuzz_readers). Exit 0 without a finding, 1 with one (the reproducer is copied to FINDINGS_DIR and printed in base64:
# make it a badinput case, then fix it), 77 (skipped) when the binary could not be built, with WHY.
bin=$1 corpus=$2 seconds=$3 findings=$4 why=$5
if [ ! -x "$bin" ]; then
  echo "SKIP: fuzz_readers not available: $why"
  exit 77
fi
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
# The target writes one small HDF5 file per input: in memory where /dev/shm is writable (3x the executions).
scratch=/dev/shm
[ -d "$scratch" ] && [ -w "$scratch" ] || scratch=$work
TMPDIR=$scratch "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$corpus" > "$work/log" 2>&1
rc=$?
grep -E "^#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|ERROR|runtime error|SUMMARY" \
  "$work/log" | head -20
found=$(ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' || true)
if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
  tail -40 "$work/log"
  mkdir -p "$findings"
  for f in $found; do
    cp "$work/$f" "$findings/$f"
    echo "FINDING $findings/$f (base64): $(base64 -w0 "$work/$f")"
  done
  echo "FAIL: fuzz_readers exit $rc"
  exit 1
fi
echo "PASS: no finding in ${seconds} s"
