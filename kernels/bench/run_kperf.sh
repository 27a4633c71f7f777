#!/usr/bin/env bash
# One device call of the issue-5 kernel pass (v3+): correctness first, then the B=256 L=16 table, the full-shape
# validations, and an ncu profile of the replay kernel. Binaries built here and copied into $BIN (carried).
# Usage on the device: BIN=build-kperf2/bin bash kernels/bench/run_kperf.sh [bench] [full] [ab] [ncu]
# (BIN defaults to build-kperf/bin; ab = the replay variants again with REPLAYSSM_LEAN=$AB_LEAN, default 3 = v5, same
# binary; several: AB_LEAN='3 1'; checkN = the correctness checks again with REPLAYSSM_LEAN=N, e.g. check3 = v5.)
set -o pipefail
export REPLAYSSM_DATASETS=$PWD/datasets
B=$PWD/${BIN:-build-kperf/bin}
C=$OUT/checks.txt
$B/replayssm --help >/dev/null 2>&1 || { echo "binary does not start"; ldd $B/replayssm; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/smi.txt"
t0=$(date +%s)
checks() {  # $1: REPLAYSSM_LEAN (7 = shipped default, 3 = v5)
  echo "== REPLAYSSM_LEAN=$1 test_cuda_kernels" | tee -a $C
  REPLAYSSM_LEAN=$1 $B/test_cuda_kernels > /tmp/t.txt 2>&1; local r1=$?
  grep -m20 -B2 -A8 "FAILED\|error" /tmp/t.txt >> $C; tail -4 /tmp/t.txt | tee -a $C
  echo "== REPLAYSSM_LEAN=$1 validate small" | tee -a $C
  REPLAYSSM_LEAN=$1 $B/replayssm validate --backend all --shapes small > /tmp/v.txt 2>&1; local r2=$?
  grep -m20 "FAIL\|error" /tmp/v.txt >> $C; tail -3 /tmp/v.txt | tee -a $C
  echo "rc tests=$r1 validate=$r2 wall $(( $(date +%s) - t0 )) s" | tee -a $C
  [ $r1 -eq 0 ] && [ $r2 -eq 0 ]
}
ok=
for lean in 7 3 1 0; do if checks $lean; then ok=$lean; break; fi; done
echo "passing REPLAYSSM_LEAN=${ok:-none}" | tee -a $C
export REPLAYSSM_LEAN=${ok:-7}
for what in "$@"; do
  case $what in
    bench)
      $B/replayssm bench --arch all --batch 256 --L 16 --formats fp32,fp8_e4m3:row --spec-T 1,8 --min-reps 3 \
        --case-ms ${CASE_MS:-100} --out "$OUT/bench.h5" --csv "$OUT/bench.csv" 2>&1 | tee "$OUT/bench.log" | tail -42 ;;
    check*) checks ${what#check} ;;
    ab)
      for al in ${AB_LEAN:-3}; do for a in gdn mamba2; do
        REPLAYSSM_LEAN=$al $B/replayssm bench --arch $a --batch 256 --L 16 --formats fp32,fp8_e4m3:row \
          --policies replay-shared,replay-split --verify-policies replay-shared --spec-T 1,8 --min-reps 3 \
          --case-ms ${CASE_MS:-100} --out "$OUT/ab_lean${al}_$a.h5" --csv "$OUT/ab_lean${al}_$a.csv" 2>&1 | grep "bench:"
      done; done ;;
    full)
      for s in qwen3.5 nemotron-h; do
        echo "== validate $s" | tee -a $C
        $B/replayssm validate --arch all --backend all --shapes $s > /tmp/v.txt 2>&1; echo "rc $?" | tee -a $C
        grep -m20 "FAIL\|error" /tmp/v.txt >> $C; tail -3 /tmp/v.txt | tee -a $C
      done ;;
    ncu)
      ncu --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --kernel-name regex:replay_kernel --launch-skip 2 --launch-count 1 \
        $B/replayssm bench --arch gdn --batch 256 --L 16 --formats fp32 --policies replay-shared --spec-T none --reps 1 \
        --min-reps 1 --out '' --csv '' -q > "$OUT/ncu.txt" 2>&1; grep -m8 "Duration\|Registers\|Throughput\|Achieved Occ" "$OUT/ncu.txt" ;;
  esac
  echo "$what done, wall $(( $(date +%s) - t0 )) s"
done
