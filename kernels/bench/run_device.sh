#!/usr/bin/env bash
# One run of `replayssm bench` on the GPU machine (H200). Expects the binary built here, copied with its non-glibc
# shared libraries into build-bench/bin (carried). Writes bench.h5/.csv/.log (L=16 sweep) and bench_L.h5/.csv/.log
# (fp32 at L=8,32) and bench_tree.h5/.csv/.log (tree verify rows) into $OUT (the device tool's folder), or out/device
# where $OUT is not set.
set -o pipefail
O=${OUT:-$PWD/out/device}
mkdir -p "$O" || exit 1
export REPLAYSSM_BENCH_TARGETS=$PWD/kernels/bench/targets.ini
cd build-bench/bin || exit 1
./replayssm --help >/dev/null 2>&1 || export LD_LIBRARY_PATH=$PWD/lib
./replayssm --help >/dev/null 2>&1 || { echo "binary does not start"; ldd ./replayssm; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$O/smi.txt"
./replayssm bench --L 16 --batch 256,1,16,64,512 --min-reps 3 --max-seconds "${BENCH_MAIN_S:-170}" \
  --out "$O/bench.h5" --csv "$O/bench.csv" 2>&1 | tee "$O/bench.log"
./replayssm bench --L 8,32 --batch 256,1 --formats fp32 --policies conventional,replay-shared --spec-T 8 \
  --min-reps 3 --max-seconds "${BENCH_L_S:-40}" --out "$O/bench_L.h5" --csv "$O/bench_L.csv" -q 2>&1 | tee "$O/bench_L.log"
# tree verify (reference kernel) beside the chain verify of as many drafts and the standard step
./replayssm bench --L 16 --batch 256,1 --formats fp32 --policies conventional,replay-shared --spec-T 8 \
  --verify-policies conventional,replay-shared --step-dots exact --tree chain:8 --tree binary:3 --tree 4,2,2,1 \
  --min-reps 3 --max-seconds "${BENCH_TREE_S:-40}" --out "$O/bench_tree.h5" --csv "$O/bench_tree.csv" -q 2>&1 |
  tee "$O/bench_tree.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$O/smi.txt"
