#!/usr/bin/env bash
# Where the replay kernel's instructions go: one ncu profile per arch of a B=256, L=16 ReplaySSM step (one graph-node
# launch, staggered buffer positions, so 1/16 of the heads flush), with per-SASS-instruction counts correlated to the
# CUDA source lines (build with -DCMAKE_CUDA_FLAGS=-lineinfo; it does not change the generated code).
# Usage on the device: bash kernels/bench/profile_replay.sh BIN_DIR OUT_DIR [policy] [format] [arches] [bench options]
# Writes OUT_DIR/replay_<arch>.txt (details page) and replay_<arch>_source.csv.gz (source page, cuda,sass);
# kernels/bench/source_profile.py summarises the latter (per line, per file, per SASS opcode).
# The profiled launch is the combined replay_kernel or, where the v13 split layout runs (kern::kernel_split_rule: FP8,
# every verify op), its non-flush replay_hot_kernel (kernels/bench/kernel_times.sh times the flush kernel too).
# PROFILE_KERNEL (an ncu name regex, default the non-flush kernels) picks another launch, e.g. replay_flush_kernel;
# PROFILE_TAG names its files (replay_<tag><arch>...).
set -uo pipefail
: "${1:?usage: profile_replay.sh BIN_DIR OUT_DIR [policy] [format] [arches] [bench options]}"
bin=$(cd "$1" && pwd) || exit 2
out=${2:?OUT_DIR}
policy=${3:-replay-shared}
format=${4:-fp32}
arches=${5:-gdn mamba2}
read -r -a extra <<< "${6:-}"  # e.g. "--usource lp" (split on blanks, no globbing)
mkdir -p "$out"
export REPLAYSSM_DATASETS=$PWD/datasets
for arch in $arches; do
  rep=$out/replay_${PROFILE_TAG:-}$arch
  ncu --set full --import-source yes --kernel-name regex:"${PROFILE_KERNEL:-replay_(hot_)?kernel}" --launch-skip 2 --launch-count 1 -f -o "$rep" \
    "$bin/replayssm" bench --arch "$arch" --batch 256 --L 16 --formats "$format" --policies "$policy" --spec-T none \
    "${extra[@]}" --reps 1 --min-reps 1 --out '' --csv '' -q > "$rep.log" 2>&1 || { tail -20 "$rep.log"; continue; }
  ncu -i "$rep.ncu-rep" --page details > "$rep.txt" 2>&1
  ncu -i "$rep.ncu-rep" --page source --csv --print-source cuda,sass 2>&1 | gzip > "${rep}_source.csv.gz"
  rm -f "$rep.ncu-rep"
  grep -m12 "Duration\|Registers Per\|Executed Ipc\|Achieved Occ\|Compute (SM) Th\|DRAM Throughput\|Local" "$rep.txt"
done
