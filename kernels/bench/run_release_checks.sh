#!/usr/bin/env bash
# A kernel release on the GPU machine: the GPU tests, validate, the bench runs that make the committed samples
# (experiments/samples/bench_h200_*: copy them there from out/fin), then compute-sanitizer memcheck and racecheck of
# each tuned layout's real-head cases in parallel, until the deadline. Usage on the device (repository root):
#   bash kernels/bench/run_release_checks.sh BIN_DIR [LIMIT_S (default 565)]
# REL_RC_LAYOUT=combined|split|group (default group): the test binary's layout (REPLAYSSM_TEST_LAYOUT) that the
# second racecheck job runs. Writes out/fin (summary.txt, logs, bench .h5/.csv, sanitizer summaries) and, where $OUT
# is set, out/fin as one tar into $OUT.
set -uo pipefail
bin=$(cd "${1:?usage: run_release_checks.sh BIN_DIR [LIMIT_S]}" && pwd) || exit 2
limit=${2:-565}
export REPLAYSSM_DATASETS=$PWD/datasets REPLAYSSM_BENCH_TARGETS=$PWD/kernels/bench/targets.ini
unset REPLAYSSM_PLAN  # the shipped plans
F=out/fin S=out/fin/summary.txt
rm -rf "$F" && mkdir -p "$F"
t0=$SECONDS
log() { echo "$* ($((SECONDS - t0)) s)" | tee -a "$S"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >> "$S"
"$bin/test_cuda_kernels" > "$F/test_cuda_kernels.log" 2>&1
log "test_cuda_kernels rc=$? $(grep 'test cases' "$F/test_cuda_kernels.log" | tail -1)"
"$bin/test_formats_gpu" > "$F/test_formats_gpu.log" 2>&1
log "test_formats_gpu rc=$? $(grep 'test cases' "$F/test_formats_gpu.log" | tail -1)"
"$bin/replayssm" validate --arch all --backend all --shapes all > "$F/validate.log" 2>&1
log "validate rc=$? $(tail -1 "$F/validate.log")"
b() { local name=$1; shift; "$bin/replayssm" bench "$@" --min-reps 3 --case-ms 100 --out "$F/$name.h5" --csv "$F/$name.csv" \
  > "$F/$name.log" 2>&1; log "bench $name rc=$?"; }
b bench_h200_b256_l16 --arch all --batch 256 --L 16 --formats fp32,fp8_e4m3:row --spec-T 1..8
b bench_h200_batch_l16 --arch all --batch 1,16,64,512 --L 16 --formats fp32 --spec-T 1,8 -q
b bench_h200_mamba2_verify_b256 --arch mamba2 --L 16 --batch 256 --formats fp32 --policies conventional,replay-shared \
  --spec-T 1..8 --max-seconds 40 -q
b bench_h200_L8_L32 --L 8,32 --batch 256,1 --formats fp32 --policies conventional,replay-shared --spec-T 8 -q
L=$(( limit - (SECONDS - t0) - 25 ))
log "sanitizers, deadline $L s"
# One process per (tool, layout, test case), in parallel on the GPU: each tuned layout's real-head cases (the fused
# FP32 step grid, the split layout's two kernels with the folded flush, the grouped verify in [verify-drafts]). This
# list takes ~170 s on one H200; the whole [sanitize] and [real-head] sets (scripts/gpu_checks.sh) take much longer.
san() {  # tool layout filter name
  REPLAYSSM_TEST_LAYOUT=$2 timeout "$L" compute-sanitizer --tool "$1" --error-exitcode 99 "$bin/test_cuda_kernels" "$3" \
    -r compact -s > "$F/san_$4.log" 2>&1
  echo "$1 layout=${2:-all} \"$3\": rc=$? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' "$F/san_$4.log" | tr '\n' ' ')" \
    "$(grep -c ': passed:' "$F/san_$4.log") passed, $(grep -c ': failed:' "$F/san_$4.log") failed" >> "$F/san_summary.txt"
  tail -c 20000 "$F/san_$4.log" > "$F/san_$4.tail" && rm -f "$F/san_$4.log"  # the tar stays small
}
san memcheck split-fused-hint1 "[real-head][gdn][replay-shared]" mc_fused_gdn &
san memcheck split-fused-hint1 "[real-head][mamba2][replay-shared]" mc_fused_m2 &
san racecheck split-fused "[real-head][gdn][replay-shared]" rc_fused_gdn &
san memcheck split "[real-head][gdn][replay-shared]" mc_split_gdn &
san memcheck split "[real-head][gdn][replay-split][u-lp]" mc_split_gdn_lp &
san memcheck split "[real-head][mamba2][replay-split]" mc_split_m2 &
san racecheck "${REL_RC_LAYOUT:-group}" "[real-head][gdn][replay-shared]" rc_group_gdn &
san racecheck "" "[verify-drafts]" rc_verify_drafts &
san memcheck "" "[verify-drafts]" mc_verify_drafts &
wait
cat "$F/san_summary.txt" >> "$S"
log "done"
[[ -n ${OUT:-} && -d ${OUT:-} ]] && tar czf "$OUT/fin.tar.gz" -C out fin
exit 0
