#!/usr/bin/env bash
# Every GPU correctness check of issues 4 and 10 in one device call on the lent H200:
#   test_cuda_kernels, `replayssm validate --backend all --shapes all`, and compute-sanitizer memcheck, racecheck,
#   initcheck and synccheck over the [sanitize] GPU test (every kernel x mode x format: decode, verify, early
#   flush), run concurrently after the plain checks
#   (the instrumentation is CPU-bound; the GPU machine has 16 cores).
# Usage (device machine, repository root): scripts/gpu_checks.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds replayssm and test_cuda_kernels built here with -DREPLAYSSM_CUDA=ON -DREPLAYSSM_STATIC_BOOST=ON.
# Writes one log per check and summary.txt under OUT_DIR ($OUT on the device tool, else out/gpu_checks).
set -uo pipefail
bin=$(cd "${1:?usage: scripts/gpu_checks.sh BIN_DIR [OUT_DIR]}" && pwd)
out=${2:-${OUT:-out/gpu_checks}}
mkdir -p "$out"
export REPLAYSSM_DATASETS=$PWD/datasets
san_limit=${SAN_LIMIT_S:-420}
summary=$out/summary.txt
: > "$summary"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$summary"
compute-sanitizer --version | tail -1 >> "$summary"

sanitize() {  # tool, label, test filter
  local tool=$1 label=$2 filter=$3 extra=()
  [[ $tool == memcheck ]] && extra=(--leak-check full)
  timeout "$san_limit" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 \
    "$bin/test_cuda_kernels" "$filter" > "$out/${tool}_${label}.log" 2>&1
  local rc=$?  # 99: the tool reported errors; 124: killed at SAN_LIMIT_S
  echo "compute-sanitizer --tool $tool${extra:+ ${extra[*]}} test_cuda_kernels \"$filter\": rc=$rc;" \
    "$(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$out/${tool}_${label}.log" | tr '\n' ' ')" \
    "$(grep -h 'test cases' "$out/${tool}_${label}.log" | tail -1)" >> "$summary"
}

pids=()
# datasets/capture_hf.py end to end where torch + transformers exist (the GPU machine has both): issue 9
if python3 -c "import torch, transformers, h5py" 2>/dev/null; then
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
fi
start=$SECONDS
"$bin/replayssm" validate --arch all --backend all --shapes all > "$out/validate_all.log" 2>&1; rc=$?
echo "replayssm validate --arch all --backend all --shapes all: rc=$rc $(tail -1 "$out/validate_all.log") ($((SECONDS - start)) s)" >> "$summary"

# The sanitizers last, concurrently: the plain checks above are CPU-heavy (the emulation) and would starve them.
# SKIP_SANITIZERS=1 leaves them out.
if [[ ${SKIP_SANITIZERS:-0} != 1 ]]; then
  for tool in memcheck racecheck initcheck synccheck; do
    sanitize "$tool" quick "[sanitize]" & pids+=($!)
  done
fi
wait "${pids[@]}"
cat "$summary"
