#!/usr/bin/env python3
"""Summaries of an ncu source page (profile_replay.sh's *_source.csv.gz: `--page source --csv --print-source cuda,sass`).

    source_profile.py FILE [--top N] [--ops] [--ops-lines OP,OP,...] [--file NAME --lines A-B]

Prints the executed warp instructions and warp-stall samples per CUDA source line (top N), per source file, and with
--ops the instruction mix by SASS opcode; --ops-lines OPS lists the source lines that execute those opcodes (e.g.
BRA,BSSY,BSYNC: where the control flow goes); --file/--lines prints one file's lines in order. Line numbers refer to
the source the binary was built from: profile a binary of the checked-out tree, or read them against that commit.
"""
import argparse
import collections
import csv
import gzip
import re
import sys


def num(v):
    return int(v) if v.isdigit() else 0


def read(path):
    """Yields ('line', (file, line, text), inst, samples) and ('sass', (file, line, text), opcode, inst)."""
    src = None
    cur = None
    ii = si = None
    for r in csv.reader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)):
        if not r:
            continue
        if r[0] == "File Path":
            src = r[1].split("/")[-1]
        elif r[0] == "Line No":
            ii, si = r.index("Instructions Executed"), r.index("Warp Stall Sampling (All Samples)")
        elif r[0].isdigit() and ii is not None:
            cur = (src, int(r[0]), r[1].strip()[:90])
            yield "line", cur, num(r[ii]), num(r[si])
        elif r[0] == "" and len(r) > ii and r[2].startswith("0x"):
            m = re.match(r"\s*(@!?U?P\w+\s+)?([A-Z0-9_.]+)", r[3])
            yield "sass", cur, (m.group(2).split(".")[0] if m else "?"), num(r[ii])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--ops", action="store_true")
    ap.add_argument("--ops-lines", default="")
    ap.add_argument("--file", dest="only", default="")
    ap.add_argument("--lines", default="")
    a = ap.parse_args()
    lines, ops, op_lines = [], collections.Counter(), collections.Counter()
    want = set(filter(None, a.ops_lines.split(",")))
    sass_total = 0
    for kind, where, x, y in read(a.file):
        if kind == "line":
            lines.append((where, x, y))
        else:
            ops[x] += y
            sass_total += y
            if x in want:
                op_lines[where] += y
    ti = sum(i for _, i, _ in lines) or 1
    ts = sum(s for _, _, s in lines) or 1
    print(f"{a.file}: {ti / 1e6:.2f}M warp instructions, {ts} stall samples")
    for (f, l, text), i, s in sorted(lines, key=lambda x: -x[1])[: a.top]:
        print(f"  {100 * i / ti:5.1f}% inst {100 * s / ts:5.1f}% stall  {f}:{l}  {text}")
    by_file_i, by_file_s = collections.Counter(), collections.Counter()
    for (f, _, _), i, s in lines:
        by_file_i[f] += i
        by_file_s[f] += s
    print("by file:")
    for f, i in by_file_i.most_common():
        print(f"  {100 * i / ti:5.1f}% inst {100 * by_file_s[f] / ts:5.1f}% stall  {f}")
    if a.ops:
        print("by SASS opcode:")
        for op, i in ops.most_common(30):
            print(f"  {op:10s} {100 * i / max(sass_total, 1):5.1f}%")
    if want:
        print(f"lines executing {','.join(sorted(want))}:")
        for (f, l, text), i in op_lines.most_common(a.top):
            print(f"  {100 * i / max(sass_total, 1):5.2f}%  {f}:{l}  {text}")
    if a.only and a.lines:
        lo, hi = (int(v) for v in a.lines.split("-"))
        for (f, l, text), i, s in sorted(lines, key=lambda x: x[0][1]):
            if f == a.only and lo <= l <= hi and (i or s):
                print(f"  {100 * i / ti:5.1f}% inst {100 * s / ts:5.1f}% stall  {l} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
