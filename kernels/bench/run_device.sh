#!/usr/bin/env bash
# One run of `replayssm bench` on the GPU machine (H200). Expects the binary built here, copied with its non-glibc
# shared libraries into build-bench/bin (carried). Writes bench.h5/.csv/.log (L=16 sweep) and bench_L.h5/.csv/.log
# (fp32 at L=8,32) into $OUT (the device tool's folder), or out/device where $OUT is not set.
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
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$O/smi.txt"
