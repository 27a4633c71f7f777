#!/usr/bin/env bash
# Every GPU correctness check in one run on the GPU machine (H200):
#   test_cuda_kernels and test_formats_gpu, `replayssm validate --backend all --shapes all` and `--tree 4,2,2,1`, then
#   compute-sanitizer:
#   all four tools over the [sanitize] cases and test_formats_gpu (SAN_FULL=1: memcheck and racecheck over every GPU
#   test case too), as parallel processes, one per tool x test case, spread over the visible GPUs. Processes on one
#   GPU share it (16 progressed about 1.6x slower each than 10), so the total work per GPU is what counts.
#   Subsets: SAN_TOOLS="racecheck memcheck", SAN_ARCH=gdn|mamba2, SAN_SETS="awkward real real-head sanitize formats",
#   SAN_SKIP / SAN_ONLY=REGEX over the log names (TOOL_SET_ARCH_...) to leave out / keep. SKIP_VALIDATE=1 leaves out
#   validate.
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
export REPLAYSSM_REQUIRE_GPU=1  # on the GPU machine a missing device or a CUDA error fails the tests
san_limit=${SAN_LIMIT_S:-420}
summary=$out/summary.txt
: > "$summary"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$summary"
compute-sanitizer --version | tail -1 >> "$summary"

# One sanitizer job: tool, log label, binary, Catch2 filter; on the GPU running the fewest jobs; killed at the
# common deadline (rc 124). Catch2's compact reporter with -s prints a line per passed assertion, so a killed job
# still tells how far it got.
sanitize() {
  local tool=$1 label=$2 exe=$3 filter=$4 extra=() left log t0=$SECONDS
  [[ $tool == memcheck ]] && extra=(--leak-check full)
  left=$(( deadline - $(date +%s) ))
  if (( left < 30 )); then
    echo "compute-sanitizer --tool $tool $exe \"$filter\": not started (deadline)" >> "$summary"
    return 0
  fi
  log=$out/${tool}_${label}.log
  # The GPU running the fewest jobs (round robin left one GPU idle while the other still had a queue of long jobs).
  local gpu=0 g n min=1000000
  exec {lock}> "$out/.running/lock"
  flock "$lock"
  for (( g = 0; g < ngpu; ++g )); do
    n=$(find "$out/.running/$g" -type f | wc -l)
    (( n < min )) && min=$n gpu=$g
  done
  touch "$out/.running/$gpu/${tool}_$label"
  flock -u "$lock"
  CUDA_VISIBLE_DEVICES=$gpu timeout "$left" compute-sanitizer --tool "$tool" "${extra[@]}" \
    --error-exitcode 99 "$bin/$exe" "$filter" -r compact -s > "$log" 2>&1
  local rc=$?  # 0 clean, 99 the tool reported errors, 124 killed at the deadline, else a test failed
  rm -f "$out/.running/$gpu/${tool}_$label"
  echo "compute-sanitizer --tool $tool${extra:+ ${extra[*]}} $exe \"$filter\": rc=$rc ($((SECONDS - t0)) s);" \
    "$(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$log" | tr '\n' ' ')" \
    "$(grep -c ': passed:' "$log") assertions passed, $(grep -c ': failed:' "$log") failed;" \
    "$(grep -h '^Passed\|^Failed\|test cases' "$log" | tail -1)" >> "$summary"
}
export -f sanitize

pids=()
# datasets/capture_hf.py end to end where torch + transformers exist (the GPU machine has both)
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
if [[ ${SKIP_VALIDATE:-0} != 1 ]]; then
  "$bin/replayssm" validate --arch all --backend all --shapes all > "$out/validate_all.log" 2>&1; rc=$?
  echo "replayssm validate --arch all --backend all --shapes all: rc=$rc $(tail -1 "$out/validate_all.log") ($((SECONDS - start)) s)" >> "$summary"
  start=$SECONDS
  "$bin/replayssm" validate --arch all --backend all --tree 4,2,2,1 > "$out/validate_tree.log" 2>&1; rc=$?
  echo "replayssm validate --arch all --backend all --tree 4,2,2,1: rc=$rc $(tail -1 "$out/validate_tree.log") ($((SECONDS - start)) s)" >> "$summary"
fi

# The sanitizers last (the plain checks above are CPU-heavy and would starve them), one process per (tool, test case),
# up to SAN_JOBS at once, all stopped at the common deadline SAN_LIMIT_S. Every tool runs the [sanitize] cases (every
# kernel x mode x format through a step, a flush, a long run, verifies and an early flush; 8 shards) and memcheck and
# racecheck also test_formats_gpu. SAN_FULL=1 adds memcheck and racecheck over the awkward cases (8 shards x 4 case
# groups) and the real shapes (8 shards), several times the work. SKIP_SANITIZERS=1 leaves them out.
if [[ ${SKIP_SANITIZERS:-0} != 1 ]]; then
  ngpu=$(nvidia-smi -L | grep -c '^GPU'); (( ngpu > 0 )) || ngpu=1
  rm -rf "$out/.running"
  for (( g = 0; g < ngpu; ++g )); do mkdir -p "$out/.running/$g"; done
  export bin out summary ngpu deadline=$(( $(date +%s) + san_limit ))
  jobs=()
  # Shards: arch:policy tags (GDN replay-split once per u source); groups: the awkward case groups.
  shards=(gdn:conventional gdn:replay-shared gdn:replay-split][u-hp gdn:replay-split][u-lp gdn:replay-split][u-recompute
          mamba2:conventional mamba2:replay-shared mamba2:replay-split)
  tools=${SAN_TOOLS:-racecheck memcheck initcheck synccheck}
  sets=${SAN_SETS:-sanitize formats}
  [[ ${SAN_FULL:-0} == 1 ]] && sets="awkward real real-head sanitize formats"
  want() { [[ " $tools " == *" $1 "* ]] && [[ -z ${SAN_ARCH:-} || $2 == "${SAN_ARCH}" ]]; }
  add() {  # SAN_SKIP / SAN_ONLY: regexes over TOOL_LABEL (the log name) of jobs to leave out / to keep, e.g. to run
    # only what an earlier run did not finish
    [[ -n ${SAN_SKIP:-} && ${1}_$2 =~ $SAN_SKIP ]] && return
    [[ -n ${SAN_ONLY:-} && ! ${1}_$2 =~ $SAN_ONLY ]] && return
    jobs+=("$1 $2 $3 $4")
  }
  for tool in racecheck memcheck initcheck synccheck; do  # racecheck, the slowest, first; then sets in $sets order
    for set in $sets; do
      # initcheck and synccheck run the quick cases only; memcheck and racecheck cover every GPU test.
      # racecheck runs the real head dims at 4 heads ([real-head]) in place of all 32 / 128 heads ([real], 8x / 32x
      # as long): a race is within one CTA, and the other heads' CTAs run the same code on other data.
      [[ $set != sanitize && ($tool == initcheck || $tool == synccheck) ]] && continue
      [[ $set == real && $tool == racecheck ]] && continue
      if [[ $set == formats ]]; then
        want "$tool" formats && add "$tool" formats test_formats_gpu "[gpu]"
        continue
      fi
      groups=("")  # the awkward cases group-major: every shard's steps, then every shard's long run, ...
      [[ $set == awkward ]] && groups=(steps long verify-1 verify-2)
      for g in "${groups[@]}"; do
        for sh in "${shards[@]}"; do
          want "$tool" "${sh%%:*}" || continue
          add "$tool" "${set}_${sh//[^a-z0-9-]/_}${g:+_$g}" test_cuda_kernels "[$set][${sh%%:*}][${sh#*:}]${g:+[$g]}"
        done
      done
    done
  done
  if (( ${#jobs[@]} )); then
    echo "${#jobs[@]} sanitizer jobs on $ngpu GPU(s), deadline ${san_limit} s" >> "$summary"
    # One pool per tool, so that the quick memcheck jobs do not wait behind racecheck: SAN_JOBS_<tool> processes each
    # (default SAN_JOBS / number of tools). A load and GPU-utilisation sample every 20 s goes to monitor.log.
    ntools=$(printf '%s\n' "${jobs[@]}" | awk '{print $1}' | sort -u | wc -l)
    for tool in racecheck memcheck initcheck synccheck; do
      mine=$(printf '%s\n' "${jobs[@]}" | awk -v t="$tool" '$1 == t')
      [[ -n $mine ]] || continue
      var=SAN_JOBS_$tool p=${!var:-$(( (${SAN_JOBS:-16} + ntools - 1) / ntools ))}
      echo "$tool: up to $p processes at once" >> "$summary"
      printf '%s\n' "$mine" | xargs -r -P "$p" -L 1 bash -c 'sanitize "$@"' _ &
      pids+=($!)
    done
    ( while (( $(date +%s) < deadline )); do
        echo "$(date +%T) load $(cut -d' ' -f1 /proc/loadavg) gpu% $(nvidia-smi --query-gpu=utilization.gpu \
          --format=csv,noheader,nounits | tr '\n' ' ')"
        sleep 20
      done > "$out/monitor.log" 2>&1 ) &
    monitor=$!
  fi
fi
wait "${pids[@]}"
[[ -n ${monitor:-} ]] && kill "$monitor" 2>/dev/null
cat "$summary"
if [[ -n ${OUT:-} && -d ${OUT:-} && $(cd "$out" && pwd) != $(cd "$OUT" && pwd) ]]; then
  cp "$summary" "$OUT/summary.txt"
  tar czf "$OUT/gpu_checks_logs.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
fi
