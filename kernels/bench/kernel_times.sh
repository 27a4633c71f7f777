#!/usr/bin/env bash
# per-kernel durations of the replay kernels (v13 split vs combined)
set -uo pipefail
bin=$1; out=$2; mkdir -p $out
export REPLAYSSM_DATASETS=$PWD/datasets
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,smsp__inst_executed.sum,launch__shared_mem_per_block_dynamic
for arch in gdn mamba2; do for split in 1 0; do for fmt in fp32 fp8_e4m3:row; do
  pol=replay-shared; [[ $fmt == fp8* ]] && pol=replay-split
  ex=(); [[ $fmt == fp8* && $arch == gdn ]] && ex=(--usource lp)
  REPLAYSSM_KERNEL_SPLIT=$split ncu --cache-control none --clock-control none --kernel-name regex:replay_ --launch-skip 6 --launch-count 6 --metrics $m --csv \
    $bin/replayssm bench --arch $arch --batch 256 --L 16 --formats $fmt --policies $pol --spec-T none "${ex[@]}" --reps 1 --min-reps 1 --out '' --csv '' -q > $out/k_${arch}_${split}_${fmt%%:*}.csv 2>&1
  python3 - $out/k_${arch}_${split}_${fmt%%:*}.csv <<'PY'
import csv,sys,collections
rows=list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
h=rows[0]; ix={k:i for i,k in enumerate(h)}
d=collections.OrderedDict()
for r in rows[1:]:
    key=(r[ix["ID"]], r[ix["Kernel Name"]][:40])
    d.setdefault(key,{})[r[ix["Metric Name"]]]=r[ix["Metric Value"]]
print(sys.argv[1])
for k,v in d.items(): print(" ",k[0],k[1],"t=",v.get("gpu__time_duration.sum"),"grid=",v.get("launch__grid_size"),"rd=",v.get("dram__bytes_read.sum"),"wr=",v.get("dram__bytes_write.sum"),"warps%=",v.get("sm__warps_active.avg.pct_of_peak_sustained_active"),"regs=",v.get("launch__registers_per_thread"),"occ_reg=",v.get("launch__occupancy_limit_registers"),"occ_smem=",v.get("launch__occupancy_limit_shared_mem"),"inst=",v.get("smsp__inst_executed.sum"),"smem=",v.get("launch__shared_mem_per_block_dynamic"))
PY
done; done; done
