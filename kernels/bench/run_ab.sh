#!/usr/bin/env bash
# A kernel A/B on the GPU machine, in one run: correctness of the new binaries first, then the B=256, L=16 bench table for the
# old and the new binaries alternately in the same run (ratios and run-to-run spread within one run), an ncu source
# profile of the new replay kernel, and memcheck over the quick GPU cases of the new binaries.
# Usage on the device (repository root): bash kernels/bench/run_ab.sh OLD_BIN_DIR NEW_BIN_DIR [what...]
#   what: checks bench ncu memcheck (default: all four; memcheck: the quick cases, the real head dims and
#   test_formats_gpu). AB_SPEC_T (default 1,8): the verify draft counts of the table. Writes under out/ab; where $OUT
#   is set (the device tool, which returns only a few files) summary.txt and one tar of everything into $OUT.
#   AB_BATCH (default 256): the batch sizes of the table.
set -uo pipefail
export REPLAYSSM_DATASETS=$PWD/datasets REPLAYSSM_BENCH_TARGETS=$PWD/kernels/bench/targets.ini
: "${1:?usage: run_ab.sh OLD_BIN_DIR NEW_BIN_DIR [what...]}" "${2:?usage: run_ab.sh OLD_BIN_DIR NEW_BIN_DIR [what...]}"
A=$(cd "$1" && pwd) || exit 2
B=$(cd "$2" && pwd) || exit 2
shift 2
what=${*:-checks bench ncu memcheck}
O=out/ab
rm -rf "$O"  # a warm device keeps out/: no results of an earlier call in this one's files
mkdir -p "$O"
S=$O/summary.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee -a "$S"
t0=$SECONDS
step() { echo "== $* ($((SECONDS - t0)) s)" | tee -a "$S"; }
table=(--arch all --batch "${AB_BATCH:-256}" --L 16 --formats fp32,fp8_e4m3:row --spec-T "${AB_SPEC_T:-1,8}" --min-reps 3 --case-ms "${CASE_MS:-100}")
for w in $what; do
  case $w in
    checks)
      step "new: test_cuda_kernels"
      "$B/test_cuda_kernels" > "$O/test_cuda_kernels.log" 2>&1; echo "rc=$? $(grep -h 'test cases' "$O/test_cuda_kernels.log" | tail -1)" | tee -a "$S"
      grep -m5 -B3 -A12 "FAILED" "$O/test_cuda_kernels.log" | head -60 >> "$S"
      step "new: test_formats_gpu"
      "$B/test_formats_gpu" > "$O/test_formats_gpu.log" 2>&1; echo "rc=$? $(grep -h 'test cases' "$O/test_formats_gpu.log" | tail -1)" | tee -a "$S"
      step "new: validate --arch all --backend all --shapes all"
      "$B/replayssm" validate --arch all --backend all --shapes all > "$O/validate.log" 2>&1
      echo "rc=$? $(tail -1 "$O/validate.log")" | tee -a "$S" ;;
    bench)
      # AB_EXTRA="name:PLAN ..." adds variants of the new binary run with REPLAYSSM_PLAN=PLAN, in both rounds (e.g.
      # AB_EXTRA="h1:heads=1 split:layout=split,slices=2": the same binary with a CTA per head, and with the split
      # layout's two kernels at two row slices per flush CTA; `replayssm bench --list-plans` shows the plans).
      vs=(old new)
      for x in ${AB_EXTRA:-}; do vs+=("$x"); done
      vs+=(old2 new2)
      for x in ${AB_EXTRA:-}; do vs+=("${x%%:*}2:${x#*:}"); done
      for spec in "${vs[@]}"; do
        v=${spec%%:*}
        plan=
        [[ $spec == *:* ]] && plan=${spec#*:}
        bin=$B
        [[ $v == old* ]] && bin=$A
        step "bench $v${plan:+ REPLAYSSM_PLAN=$plan}"
        REPLAYSSM_PLAN=$plan "$bin/replayssm" bench "${table[@]}" --out "$O/bench_$v.h5" --csv "$O/bench_$v.csv" \
          > "$O/bench_$v.log" 2>&1 || echo "rc=$?" | tee -a "$S"
        grep -E "^(gdn|mamba2) .*(decode|verify)" "$O/bench_$v.log" | awk -v v=$v '{print v, $1, "B=" $2, $4, $5, $6, $7}' >> "$O/medians.txt"
      done ;;
    ncu)
      step "ncu"
      bash kernels/bench/profile_replay.sh "$B" "$O/ncu_fp32" replay-shared fp32 >> "$S" 2>&1
      bash kernels/bench/profile_replay.sh "$B" "$O/ncu_fp8" replay-split fp8_e4m3:row "gdn mamba2" "--usource lp" >> "$S" 2>&1 ;;
    memcheck)
      step "memcheck"
      # AB_SAN_TOOLS="memcheck racecheck" and AB_SAN_SKIP (a SAN_SKIP regex) add racecheck jobs.
      OUT= SKIP_CAPTURE=1 SKIP_FULL_TESTS=1 SKIP_VALIDATE=1 SAN_TOOLS=${AB_SAN_TOOLS:-memcheck} \
        SAN_SETS="sanitize real-head formats" SAN_SKIP=${AB_SAN_SKIP:-} SAN_JOBS_memcheck=9 SAN_JOBS_racecheck=8 \
        SAN_LIMIT_S=${SAN_LIMIT_S:-240} bash scripts/gpu_checks.sh "$B" "$O/memcheck" > /dev/null 2>&1
      grep -h "compute-sanitizer" "$O/memcheck/summary.txt" | sed 's/ test_cuda_kernels / /' >> "$S" ;;
  esac
done
step "done"
if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
  cp "$S" "$OUT/summary.txt"
  [[ -f $O/medians.txt ]] && cp "$O/medians.txt" "$OUT/"
  tar czf "$OUT/ab.tar.gz" --exclude='*.h5' -C out ab
fi
