#!/usr/bin/env bash
# A kernel performance pass on the GPU machine: correctness first (the GPU tests, validate at the small shapes), then
# the B=256 L=16 table, the full-shape validations, and an ncu profile of the replay kernel, in the order asked.
# Binaries built here and copied into $BIN (carried).
# Usage on the device (repository root): BIN=build-kperf2/bin bash kernels/bench/run_kperf.sh [bench] [full] [ncu]
# (BIN defaults to build-kperf/bin; REPLAYSSM_PLAN, if set, applies to every step, e.g. REPLAYSSM_PLAN=layout=split.)
# Writes checks.txt, bench.h5/.csv/.log and ncu.txt under out/kperf; where $OUT is set (the device tool, which returns
# only a few files) checks.txt and one tar of everything into $OUT.
set -o pipefail
export REPLAYSSM_DATASETS=$PWD/datasets REPLAYSSM_BENCH_TARGETS=$PWD/kernels/bench/targets.ini
B=$PWD/${BIN:-build-kperf/bin}
O=out/kperf
rm -rf "$O" && mkdir -p "$O"
C=$O/checks.txt
$B/replayssm --help >/dev/null 2>&1 || { echo "binary does not start"; ldd $B/replayssm; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$O/smi.txt"
t0=$(date +%s)
echo "== test_cuda_kernels${REPLAYSSM_PLAN:+ (REPLAYSSM_PLAN=$REPLAYSSM_PLAN)}" | tee -a $C
$B/test_cuda_kernels > "$O/test_cuda_kernels.log" 2>&1; r1=$?
grep -m20 -B2 -A8 "FAILED\|error" "$O/test_cuda_kernels.log" >> $C; tail -4 "$O/test_cuda_kernels.log" | tee -a $C
echo "== validate small" | tee -a $C
$B/replayssm validate --backend all --shapes small > "$O/validate_small.log" 2>&1; r2=$?
grep -m20 "FAIL\|error" "$O/validate_small.log" >> $C; tail -3 "$O/validate_small.log" | tee -a $C
echo "rc tests=$r1 validate=$r2 wall $(( $(date +%s) - t0 )) s" | tee -a $C
for what in "$@"; do
  case $what in
    bench)
      $B/replayssm bench --arch all --batch 256 --L 16 --formats fp32,fp8_e4m3:row --spec-T 1,8 --min-reps 3 \
        --case-ms ${CASE_MS:-100} --out "$O/bench.h5" --csv "$O/bench.csv" 2>&1 | tee "$O/bench.log" | tail -42 ;;
    full)
      for s in qwen3.5 nemotron-h; do
        echo "== validate $s" | tee -a $C
        $B/replayssm validate --arch all --backend all --shapes $s > "$O/validate_$s.log" 2>&1; echo "rc $?" | tee -a $C
        grep -m20 "FAIL\|error" "$O/validate_$s.log" >> $C; tail -3 "$O/validate_$s.log" | tee -a $C
      done ;;
    ncu)
      ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --kernel-name regex:"replay_(hot_)?kernel|head_step_kernel|step_flush_kernel" \
        --launch-skip 2 --launch-count 1 \
        $B/replayssm bench --arch gdn --batch 256 --L 16 --formats fp32 --policies replay-shared --spec-T none --reps 1 \
        --min-reps 1 --out '' --csv '' -q > "$O/ncu.txt" 2>&1; grep -m8 "Duration\|Registers\|Throughput\|Achieved Occ" "$O/ncu.txt" ;;
  esac
  echo "$what done, wall $(( $(date +%s) - t0 )) s"
done
if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
  cp "$C" "$OUT/checks.txt"
  tar czf "$OUT/kperf.tar.gz" -C out kperf
fi
