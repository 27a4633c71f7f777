#!/usr/bin/env bash
# Where the replay kernel's instructions go: one ncu profile per arch of a B=256, L=16 ReplaySSM step (one graph-node
# launch, staggered buffer positions, so 1/16 of the heads flush), with per-SASS-instruction counts correlated to the
# CUDA source lines (build with -DCMAKE_CUDA_FLAGS=-lineinfo; it does not change the generated code).
# Usage on the device: bash kernels/bench/profile_replay.sh BIN_DIR [OUT_DIR (default out/profile)] [policy] [format]
#   [arches] [bench options]
# Writes OUT_DIR/replay_<arch>.txt (details page) and replay_<arch>_source.csv.gz (source page, cuda,sass);
# kernels/bench/source_profile.py summarises the latter (per line, per file, per SASS opcode).
# The profiled launch is the op's non-flush kernel: the combined replay_kernel, or in the split layout (`replayssm
# bench --list-plans` shows which layout runs) replay_hot_kernel, head_step_kernel or group_verify_kernel, or the fused
# FP32 step's step_flush_kernel (kernels/bench/kernel_times.sh times the flush kernel too). PROFILE_KERNEL (an ncu
# name regex) picks another launch, e.g. replay_flush_kernel; PROFILE_PLAN (a REPLAYSSM_PLAN value, e.g.
# layout=combined) another plan; PROFILE_TAG names its files (replay_<tag><arch>...).
set -uo pipefail
: "${1:?usage: profile_replay.sh BIN_DIR [OUT_DIR] [policy] [format] [arches] [bench options]}"
bin=$(cd "$1" && pwd) || exit 2
out=${2:-out/profile}
policy=${3:-replay-shared}
format=${4:-fp32}
arches=${5:-gdn mamba2}
read -r -a extra <<< "${6:-}"  # e.g. "--usource lp" (split on blanks, no globbing)
mkdir -p "$out"
export REPLAYSSM_DATASETS=$PWD/datasets REPLAYSSM_BENCH_TARGETS=$PWD/kernels/bench/targets.ini
export REPLAYSSM_PLAN=${PROFILE_PLAN:-}
for arch in $arches; do
  rep=$out/replay_${PROFILE_TAG:-}$arch
  ncu --set full --import-source yes --kernel-name regex:"${PROFILE_KERNEL:-replay_(hot_)?kernel|head_step_kernel|group_verify_kernel|step_flush_kernel}" --launch-skip 2 --launch-count 1 -f -o "$rep" \
    "$bin/replayssm" bench --arch "$arch" --batch 256 --L 16 --formats "$format" --policies "$policy" --spec-T none \
    "${extra[@]}" --reps 1 --min-reps 1 --out '' --csv '' -q > "$rep.log" 2>&1 || { tail -20 "$rep.log"; continue; }
  ncu -i "$rep.ncu-rep" --page details > "$rep.txt" 2>&1
  ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda,sass 2>&1 | gzip > "${rep}_source.csv.gz"
  rm -f "$rep.ncu-rep"
  grep -m12 "Duration\|Registers Per\|Executed Ipc\|Achieved Occ\|Compute (SM) Th\|DRAM Throughput\|Local" "$rep.txt"
done
