#!/usr/bin/env python3
"""Where one kernel's warps wait: ncu's warp-state samples per SASS instruction, summed.

Input: the source page of an ncu report as CSV, e.g. for the prefill call
(bench/bench_attention_notes.md):

  ncu --kernel-name regex:paged_attention_kernel --launch-skip 3 --launch-count 1 \\
      --section SourceCounters --section WarpStateStats --import-source no -o /tmp/pf -f \\
      build-gpu/bench/bench_attention --only prefill2048_b1_ctx0 --reps 5
  ncu --import /tmp/pf.ncu-rep --page source --csv --print-source sass > pf.csv

Prints the samples by opcode (the SASS mnemonic before its first dot) and the
hottest instructions with their two largest stall reasons. An instruction's
index is its row in the listing, so a range of indices is a range of code
(look the rows up in the CSV). Usage: ncu_source_summary.py PF.csv LABEL [--top N]
"""
import argparse
import collections
import csv
import gzip
import re
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", help="ncu --page source --csv --print-source sass output (.gz too)")
    ap.add_argument("label")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    opener = gzip.open if a.csv.endswith(".gz") else open
    with opener(a.csv, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head_at = next((i for i, r in enumerate(rows) if any(c.strip() == "Source" for c in r)), None)
    if head_at is None:
        print(f"{a.label}: no 'Source' column in {a.csv} (was it --page source --print-source sass?)", file=sys.stderr)
        return 1
    head = [c.strip() for c in rows[head_at]]
    src = head.index("Source")
    samples = next((i for i, c in enumerate(head) if c.startswith("Warp Stall Sampling (All")), None)
    if samples is None:
        print(f"{a.label}: no warp-state samples in {a.csv} (profile with --section SourceCounters)", file=sys.stderr)
        return 1
    stalls = [(i, c) for i, c in enumerate(head) if c.lower().startswith("stall_") and "Not Issued" not in c]
    listing = []
    for r in rows[head_at + 1:]:
        if len(r) <= max(src, samples):
            continue
        sass = r[src].strip()
        opcode = re.sub(r"^@!?U?P\w+\s+", "", sass).split(" ")[0].split(".")[0]
        listing.append((number(r[samples]), sass, opcode, r))
    total = sum(n for n, *_ in listing)
    if total <= 0:
        print(f"{a.label}: no samples", file=sys.stderr)
        return 1
    print(f"{a.label}: {len(listing)} instructions, {total:.0f} samples")
    by_op, count = collections.Counter(), collections.Counter()
    for n, _, opcode, _ in listing:
        by_op[opcode] += n
        count[opcode] += 1
    print("opcode: samples (share), instructions of it in the code")
    for opcode, n in by_op.most_common(20):
        print(f"  {opcode:14s} {n:8.0f} ({100 * n / total:5.1f}%)  x{count[opcode]}")
    print("hottest instructions: index, share, SASS, largest stall reasons")
    hottest = sorted(enumerate(listing), key=lambda e: -e[1][0])[: a.top]
    for index, (n, sass, _, r) in hottest:
        top = sorted(((number(r[i]), c) for i, c in stalls), reverse=True)[:2]
        reasons = " ".join(f"{c.replace('stall_', '')}={v:.0f}" for v, c in top if v)
        print(f"  {index:5d} {100 * n / total:5.2f}%  {sass[:64]:64s} {reasons}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
