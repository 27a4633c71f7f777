#!/usr/bin/env bash
# One device call for a kernel release (issue 5): the GPU tests, validate, the shipped bench samples
# (experiments/samples/bench_h200_*), then compute-sanitizer memcheck of the split layout and racecheck of the grouped
# layout in parallel, until the deadline. Usage on the device (repository root): bash kernels/bench/run_release_checks.sh
# BIN_DIR [LIMIT_S (default 565)]; REL_RC_LAYOUT=combined|split|group (default group): the layout racecheck runs.
# Writes out/fin (summary.txt, logs, bench .h5/.csv, sanitizer summaries) and, where
# $OUT is set, out/fin as one tar into $OUT.
set -uo pipefail
bin=$(cd "${1:?usage: run_release_checks.sh BIN_DIR [LIMIT_S]}" && pwd) || exit 2
limit=${2:-565}
export REPLAYSSM_DATASETS=$PWD/datasets
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
L=$(( limit - (SECONDS - t0) - 25 ))
log "sanitizers, deadline $L s"
san() {  # layout tool sets dir
  REPLAYSSM_TEST_LAYOUT=$1 OUT= SKIP_CAPTURE=1 SKIP_FULL_TESTS=1 SKIP_VALIDATE=1 SAN_TOOLS=$2 SAN_SETS=$3 \
    SAN_JOBS_memcheck=8 SAN_JOBS_racecheck=8 SAN_LIMIT_S=$L bash scripts/gpu_checks.sh "$bin" "$F/$4" > /dev/null 2>&1
}
san split memcheck "sanitize real-head formats" mc_split &
rc=rc_${REL_RC_LAYOUT:-group}
san "${REL_RC_LAYOUT:-group}" racecheck "real-head sanitize" "$rc" &
wait
for d in mc_split "$rc"; do
  grep -h "compute-sanitizer" "$F/$d/summary.txt" | sed "s/^/$d: /; s/ test_cuda_kernels / /" >> "$S"
done
log "done"
[[ -n ${OUT:-} && -d ${OUT:-} ]] && tar czf "$OUT/fin.tar.gz" -C out fin
exit 0
