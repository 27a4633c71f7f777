#!/usr/bin/env bash
# What ptxas made of the tuned kernels, without a GPU (a kernel that spills registers to local memory runs slower): per
# kernel instantiation of the tuned translation units kernels/{gdn,mamba2}/*_{conventional,step,verify,records}.cu the
# registers, stack frame and spill bytes, and an md5 of each kernel's SASS, so that a refactor can be checked to leave
# the generated code unchanged before any device time (a kernel compiled in two units appears twice, with one md5).
# Usage (repository root, nvcc on PATH): bash kernels/bench/codegen_report.sh [OUT_DIR] [cuobjdump] [UNIT.cu ...]
#   UNIT.cu: only these translation units (default: every tuned one), for a quick check of one kernel's edit.
#   OUT_DIR (default out/codegen): cubins, ptxas logs and report.txt. The SASS md5 needs cuobjdump (CUDA toolkit, or
#   `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`, pass the cuobjdump's path and put nvdisasm on PATH);
#   without it the md5 column is "-".
# Compare two trees: run it in each (e.g. a `git worktree` of the base commit) and diff the two report.txt files.
set -uo pipefail
out=${1:-out/codegen}
cuobjdump=${2:-$(command -v cuobjdump || true)}
units=("${@:3}")
(( ${#units[@]} )) || units=(kernels/{gdn,mamba2}/*_{conventional,step,verify,records}.cu)
mkdir -p "$out"
root=$PWD
flags=(-DREPLAYSSM_HAVE_CUDA=1 -I"$root" -I"$root/src" -I/usr/include/hdf5/serial -isystem=/usr/include/eigen3 -O3
  -DNDEBUG -arch=sm_90a --fmad=false -std=c++17 -cubin -Xptxas -v)
pids=()
for src in "${units[@]}"; do
  name=$(basename "$src" .cu)
  nvcc "${flags[@]}" -o "$out/$name.cubin" "$src" > "$out/$name.ptxas.log" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
if (( rc != 0 )); then
  echo "codegen_report: nvcc failed; see $out/*.ptxas.log" >&2
  exit 1
fi
report=$out/report.txt
: > "$report"
for log in "$out"/*.ptxas.log; do
  name=$(basename "$log" .ptxas.log)
  # ptxas -v prints per entry: "Compiling entry function 'X'", then "N bytes stack frame, S bytes spill stores, L bytes
  # spill loads", then "Used R registers, ...".
  awk -v f="$name" '
    /Compiling entry function/ { match($0, /\x27[^\x27]+\x27/); fn = substr($0, RSTART + 1, RLENGTH - 2) }
    /bytes stack frame/ { st = $0; sub(/^[ \t]+/, "", st) }
    /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15);
                              if (fn != "") printf "%s %s regs=%s | %s\n", f, fn, r, st; fn = "" }' "$log"
done | sort > "$out/ptxas.txt"
while read -r file fn rest; do
  md5=-
  if [[ -n $cuobjdump ]]; then
    md5=$("$cuobjdump" -sass -fun "$fn" "$out/$file.cubin" 2>/dev/null | grep -E '^\s+/\*[0-9a-f]{4}\*/' |
      sed -E 's@/\*[0-9a-f]{4}\*/@@; s@/\* 0x[0-9a-f]+ \*/@@' | md5sum | cut -c1-12)
  fi
  printf '%-12s %s %s sass=%s\n' "$file" "$fn" "$rest" "$md5" >> "$report"
done < "$out/ptxas.txt"
grep -c . "$report" | xargs printf 'codegen_report: %s kernel instantiations in %s\n' "$report" >&2
cat "$report"
