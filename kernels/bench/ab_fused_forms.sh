#!/usr/bin/env bash
# One device call: A/B of the FP32 step's fused-grid forms in ONE binary (REPLAYSSM_STEP_FUSED: 1 v66's step_flush_kernel,
# 2 v67's mul-hi mapping, 0 the split layout's two kernels), B = 256 and 512, L = 16: [real-head] GPU tests per form,
# alternating bench rounds (median of rounds' medians, ratio to v66), then ncu of each form's kernels with DRAM, L2
# and local-memory counters (session 27 found v66's step path spilling: 52 MB of local stores per GDN step,
# PERF_NOTES twenty-seventh pass).
# Usage on the device (repository root), with the release binaries packed as build-gpu/pkg/pkg.tar.xz (bin/replayssm,
# bin/test_cuda_kernels, bin/lib/*.so*; carry build-gpu/pkg):  bash kernels/bench/ab_fused_forms.sh
# Knobs: VARIANTS / NCU_VARIANTS ("name:VAR=v[,VAR=v] ..."), TEST_MODES, ROUNDS, BATCH. Copies summary.txt and
# medians.txt to $OUT (the device tool returns only a few files).
set -uo pipefail
root=$PWD
(cd build-gpu/pkg && tar xJf pkg.tar.xz) || exit 2
B=$root/build-gpu/pkg/bin
export LD_LIBRARY_PATH=$B/lib REPLAYSSM_DATASETS=$root/datasets
O=out/ab27; rm -rf "$O"; mkdir -p "$O"; S=$O/summary.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee -a "$S"
t0=$SECONDS; step() { echo "== $* ($((SECONDS - t0)) s)" | tee -a "$S"; }
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  for f in ${TEST_MODES:-1 2}; do
    step "test_cuda_kernels [real-head],[real-head-batch] REPLAYSSM_STEP_FUSED=$f"
    REPLAYSSM_STEP_FUSED=$f "$B/test_cuda_kernels" "[real-head],[real-head-batch]" > "$O/t$f.log" 2>&1
    echo "rc=$? $(grep -h 'test cases' "$O/t$f.log" | tail -1)" | tee -a "$S"
  done
fi
read -ra vs <<< "${VARIANTS:-v66:REPLAYSSM_STEP_FUSED=1 v67:REPLAYSSM_STEP_FUSED=2 two:REPLAYSSM_STEP_FUSED=0}"
read -ra nvs <<< "${NCU_VARIANTS:-${vs[*]}}"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for spec in "${vs[@]}"; do
    v=${spec%%:*}
    step "bench round $r $v"
    IFS=, read -ra envs <<< "${spec#*:}"
    env "${envs[@]}" "$B/replayssm" bench --arch all --batch ${BATCH:-256,512} --L 16 --formats fp32 \
      --policies conventional,replay-shared --spec-T none --min-reps 5 --case-ms 100 --out '' --csv "$O/b_${v}_$r.csv" \
      > "$O/b_${v}_$r.log" 2>&1 || echo "rc=$?" | tee -a "$S"
    sed 's/^bench: //' "$O/b_${v}_$r.log" | grep -E "^(gdn|mamba2) .* us " | awk -v v=$v -v r=$r '{print v, r, $0}' >> "$O/medians.txt"
  done
done
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum
m+=,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,launch__registers_per_thread
m+=,smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
for arch in gdn mamba2; do
  for spec in "${nvs[@]}"; do
    v=${spec%%:*}
    step "ncu $arch $v"
    IFS=, read -ra envs <<< "${spec#*:}"
    env "${envs[@]}" ncu --cache-control none --clock-control none --kernel-name regex:"replay_|head_step|step_flush" \
      --launch-skip 6 --launch-count 4 --metrics "$m" --csv "$B/replayssm" bench --arch "$arch" --batch 256 --L 16 \
      --formats fp32 --policies replay-shared --spec-T none --reps 1 --min-reps 1 --out '' --csv '' -q \
      > "$O/ncu_${arch}_$v.csv" 2>&1
    python3 - "$O/ncu_${arch}_$v.csv" >> "$S" <<'PY'
import collections, csv, sys
rows = list(csv.reader(l for l in open(sys.argv[1]) if l.startswith('"')))
if not rows:
    sys.exit(print(sys.argv[1], ": no ncu rows"))
ix = {k: i for i, k in enumerate(rows[0])}
L = collections.OrderedDict()
for r in rows[1:]:
    L.setdefault((r[ix["ID"]], r[ix["Kernel Name"]][:28]), {})[r[ix["Metric Name"]]] = r[ix["Metric Value"]].replace(",", "")
print(sys.argv[1])
for (i, n), v in L.items():
    g = lambda k: v.get(k, "-")
    mb = lambda k: "%.1f" % (float(g(k)) / 1e6) if g(k) not in ("-", "") else "-"
    sec = lambda k: "%.1f" % (float(g(k)) * 32 / 1e6) if g(k) not in ("-", "") else "-"
    print(f"  {i} {n} t_us={float(g('gpu__time_duration.sum'))/1e3:.1f} dram_rd={mb('dram__bytes_read.sum')} "
          f"dram_wr={mb('dram__bytes_write.sum')} l2_wr={sec('lts__t_sectors_op_write.sum')} "
          f"l2_rd={sec('lts__t_sectors_op_read.sum')} local_st={sec('l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum')} "
          f"local_ld={sec('l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum')} glob_st={sec('l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum')} "
          f"regs={g('launch__registers_per_thread')} inst={g('smsp__inst_executed.sum')} (MB)")
PY
  done
done
python3 - "$O/medians.txt" >> "$S" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    v, key = f[0], " ".join([f[2], f[3], f[5], f[7]])
    us = float(f[f.index("us") - 1])
    d[(key, v)].append(us)
keys = sorted({k for k, _ in d})
vs = list(dict.fromkeys(l.split()[0] for l in open(sys.argv[1])))
print("case | " + " ".join(vs) + " (median of rounds, us) | ratio to " + vs[0])
for k in keys:
    m = [statistics.median(d[(k, v)]) if d[(k, v)] else float("nan") for v in vs]
    print(k, "|", " ".join(f"{x:8.2f}" for x in m), "|", " ".join(f"{x / m[0]:.3f}" for x in m))
PY
step done
[[ -n ${OUT:-} ]] && cp "$S" "$O/medians.txt" "$OUT/"
