#!/usr/bin/env bash
# Per-kernel times of the tuned ReplaySSM decode step: ncu metrics of six consecutive launches of the B=256, L=16
# bench step (staggered buffer positions, 1/16 of the sequences flush), fp32 replay-shared and fp8_e4m3:row
# replay-split (GDN u=lp), both archs, in each layout the plan override can force (REPLAYSSM_PLAN=layout=...):
# fused (FP32 only: the step and its folded flush in one step_flush_kernel grid), split (replay_flush_kernel, then the
# non-flush kernel: head_step_kernel for the step) and combined (one replay_kernel grid). ncu serialises the launches
# (no graph, caches kept, clocks free), so a split step's time is the sum of its two kernels; what the bench measures
# overlapped, this shows apart.
# Usage on the device (repository root): bash kernels/bench/kernel_times.sh BIN_DIR [OUT_DIR (default out/kernel_times)]
# Writes OUT_DIR/k_<arch>_<layout>_<format>.csv (ncu CSV) and prints one line per kernel launch.
set -uo pipefail
bin=$(cd "${1:?usage: kernel_times.sh BIN_DIR [OUT_DIR]}" && pwd) || exit 2
out=${2:-out/kernel_times}
mkdir -p "$out"
export REPLAYSSM_DATASETS=$PWD/datasets REPLAYSSM_BENCH_TARGETS=$PWD/kernels/bench/targets.ini
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active
m+=,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem
m+=,smsp__inst_executed.sum,launch__shared_mem_per_block_dynamic
for arch in gdn mamba2; do
  for fmt in fp32 fp8_e4m3:row; do
    layouts="fused split combined"
    [[ $fmt == fp32 ]] || layouts="split combined"
    for layout in $layouts; do
      pol=replay-shared ex=()
      [[ $fmt == fp8* ]] && pol=replay-split
      [[ $fmt == fp8* && $arch == gdn ]] && ex=(--usource lp)
      csv=$out/k_${arch}_${layout}_${fmt%%:*}.csv
      REPLAYSSM_PLAN=layout=$layout ncu --cache-control none --clock-control none --kernel-name regex:"replay_|head_step|group_verify|step_flush" \
        --launch-skip 6 --launch-count 6 --metrics "$m" --csv "$bin/replayssm" bench --arch "$arch" --batch 256 \
        --L 16 --formats "$fmt" --policies "$pol" --spec-T none "${ex[@]}" --reps 1 --min-reps 1 --out '' --csv '' \
        -q > "$csv" 2>&1
      python3 - "$csv" <<'PY'
import collections, csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
if not rows:
    sys.exit(print(sys.argv[1], ": no ncu rows (see the file)"))
ix = {k: i for i, k in enumerate(rows[0])}
launches = collections.OrderedDict()
for r in rows[1:]:
    launches.setdefault((r[ix["ID"]], r[ix["Kernel Name"]][:40]), {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]]
print(sys.argv[1])
for (i, name), v in launches.items():
    g = lambda k: v.get(k, "-")
    print(f"  {i} {name} t_ns={g('gpu__time_duration.sum')} grid={g('launch__grid_size')} "
          f"dram_rd={g('dram__bytes_read.sum')} dram_wr={g('dram__bytes_write.sum')} "
          f"warps%={g('sm__warps_active.avg.pct_of_peak_sustained_active')} regs={g('launch__registers_per_thread')} "
          f"ctas_by_regs={g('launch__occupancy_limit_registers')} ctas_by_smem={g('launch__occupancy_limit_shared_mem')} "
          f"inst={g('smsp__inst_executed.sum')} smem={g('launch__shared_mem_per_block_dynamic')}")
PY
    done
  done
done
