#!/usr/bin/env bash
# Every GPU correctness check of issues 4 and 10 in one device call on the lent H200:
#   test_cuda_kernels and test_formats_gpu, `replayssm validate --backend all --shapes all`, then compute-sanitizer:
#   all four tools over the [sanitize] cases and test_formats_gpu (SAN_FULL=1: every GPU test case), as parallel
#   processes, one per tool x test case. They share the one GPU: 16 processes progressed about 1.6x slower each than
#   10, so the total is what counts; SAN_TOOLS="racecheck memcheck" and SAN_ARCH=gdn|mamba2 pick a subset.
#   SKIP_CAPTURE=1 leaves out the capture_hf end-to-end test (CPU only, ~3 min); SKIP_FULL_TESTS=1 the plain tests.
# Usage (device machine, repository root): scripts/gpu_checks.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds replayssm, test_cuda_kernels and test_formats_gpu built here with -DREPLAYSSM_CUDA=ON
#   -DREPLAYSSM_STATIC_BOOST=ON.
# Writes one log per check and summary.txt under OUT_DIR (default out/gpu_checks); where $OUT is set (the device
# tool, which returns only a few files) also summary.txt and one tar of every log into $OUT.
set -uo pipefail
bin=$(cd "${1:?usage: scripts/gpu_checks.sh BIN_DIR [OUT_DIR]}" && pwd)
out=${2:-out/gpu_checks}
mkdir -p "$out"
export REPLAYSSM_DATASETS=$PWD/datasets
san_limit=${SAN_LIMIT_S:-420}
summary=$out/summary.txt
: > "$summary"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$summary"
compute-sanitizer --version | tail -1 >> "$summary"

# One sanitizer job: tool, log label, binary, Catch2 filter; killed at the common deadline (rc 124).
sanitize() {
  local tool=$1 label=$2 exe=$3 filter=$4 extra=() left
  [[ $tool == memcheck ]] && extra=(--leak-check full)
  left=$(( deadline - $(date +%s) )); (( left < 10 )) && left=10
  timeout "$left" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
    "$bin/$exe" "$filter" > "$out/${tool}_${label}.log" 2>&1
  local rc=$?  # 0 clean, 99 the tool reported errors, 124 killed at the deadline, else a test failed
  echo "compute-sanitizer --tool $tool${extra:+ ${extra[*]}} $exe \"$filter\": rc=$rc;" \
    "$(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$out/${tool}_${label}.log" | tr '\n' ' ')" \
    "$(grep -h 'All tests passed\|test cases' "$out/${tool}_${label}.log" | tail -1)" >> "$summary"
}
export -f sanitize

pids=()
# datasets/capture_hf.py end to end where torch + transformers exist (the GPU machine has both): issue 9
if [[ ${SKIP_CAPTURE:-0} != 1 ]] && python3 -c "import torch, transformers, h5py" 2>/dev/null; then
  ( start=$SECONDS; python3 tests/external/capture_hf_test.py "$bin/replayssm" > "$out/capture_hf.log" 2>&1; rc=$?
    echo "capture_hf_test.py (torch $(python3 -c 'import torch; print(torch.__version__)'), transformers" \
      "$(python3 -c 'import transformers; print(transformers.__version__)')): rc=$rc $(tail -1 "$out/capture_hf.log")" \
      "($((SECONDS - start)) s)" >> "$summary" ) & pids+=($!)
fi

start=$SECONDS
if [[ ${SKIP_FULL_TESTS:-0} == 1 ]]; then  # SKIP_FULL_TESTS=1: validate, capture and the sanitizers only
  echo "test_cuda_kernels: not run (SKIP_FULL_TESTS=1)" >> "$summary"
else
  "$bin/test_cuda_kernels" > "$out/test_cuda_kernels.log" 2>&1; rc=$?
  echo "test_cuda_kernels: rc=$rc $(grep -h 'test cases' "$out/test_cuda_kernels.log" | tail -1) ($((SECONDS - start)) s)" >> "$summary"
  start=$SECONDS
  "$bin/test_formats_gpu" > "$out/test_formats_gpu.log" 2>&1; rc=$?
  echo "test_formats_gpu: rc=$rc $(grep -h 'test cases' "$out/test_formats_gpu.log" | tail -1) ($((SECONDS - start)) s)" >> "$summary"
fi
start=$SECONDS
"$bin/replayssm" validate --arch all --backend all --shapes all > "$out/validate_all.log" 2>&1; rc=$?
echo "replayssm validate --arch all --backend all --shapes all: rc=$rc $(tail -1 "$out/validate_all.log") ($((SECONDS - start)) s)" >> "$summary"

# The sanitizers last (the plain checks above are CPU-heavy and would starve them), one process per (tool, test case),
# up to SAN_JOBS at once, all stopped at the common deadline SAN_LIMIT_S. Every tool runs the [sanitize] cases (every
# kernel x mode x format through a step, a flush, a long run, verifies and an early flush; 8 shards) and memcheck and
# racecheck also test_formats_gpu. SAN_FULL=1 adds memcheck and racecheck over the awkward and real-shape test cases
# (each several times longer; more than one device call in all). SKIP_SANITIZERS=1 leaves them out.
if [[ ${SKIP_SANITIZERS:-0} != 1 ]]; then
  export bin out summary deadline=$(( $(date +%s) + san_limit ))
  jobs=()
  shards=(gdn:u-hp gdn:u-lp gdn:u-recompute gdn:conventional gdn:replay-shared
          mamba2:conventional mamba2:replay-shared mamba2:replay-split)
  tools=${SAN_TOOLS:-racecheck memcheck initcheck synccheck}
  want() { [[ " $tools " == *" $1 "* ]] && [[ -z ${SAN_ARCH:-} || $2 == "${SAN_ARCH}" ]]; }
  for tool in racecheck memcheck; do  # the two the issue names first, then the format kernels, then the other two
    for sh in "${shards[@]}"; do
      want "$tool" "${sh%%:*}" && jobs+=("$tool ${sh/:/_} test_cuda_kernels [sanitize][${sh%%:*}][${sh##*:}]")
    done
  done
  for tool in racecheck memcheck; do want "$tool" formats && jobs+=("$tool formats test_formats_gpu [gpu]"); done
  for tool in initcheck synccheck; do
    for sh in "${shards[@]}"; do
      want "$tool" "${sh%%:*}" && jobs+=("$tool ${sh/:/_} test_cuda_kernels [sanitize][${sh%%:*}][${sh##*:}]")
    done
  done
  if [[ ${SAN_FULL:-0} == 1 ]]; then
    for tool in memcheck racecheck; do
      for a in gdn mamba2; do
        want "$tool" "$a" || continue
        for pol in replay-split replay-shared conventional; do
          jobs+=("$tool awkward_${a}_${pol} test_cuda_kernels [awkward][$a][$pol]")
        done
        jobs+=("$tool real_${a} test_cuda_kernels [real][$a]")
      done
    done
  fi
  if (( ${#jobs[@]} )); then
    printf '%s\n' "${jobs[@]}" | xargs -P "${SAN_JOBS:-16}" -L 1 bash -c 'sanitize "$@"' _ &
    pids+=($!)
  fi
fi
wait "${pids[@]}"
cat "$summary"
if [[ -n ${OUT:-} && -d ${OUT:-} && $(cd "$out" && pwd) != $(cd "$OUT" && pwd) ]]; then
  cp "$summary" "$OUT/summary.txt"
  tar czf "$OUT/gpu_checks_logs.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
fi
