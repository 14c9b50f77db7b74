#!/usr/bin/env python3
"""The sum of kernel times in an `ncu --metrics gpu__time_duration.sum --csv` log.

ncu runs the profiled kernels one at a time (the scripts pass
`--cache-control none`, so each finds the caches as the kernel before left
them), so the sum is the step's GPU time without launch gaps or overlap (issue 7's "sum of kernel times from a
profile"). Usage: ncu_kernel_sum.py NCU.csv LABEL [--top N]
"""
import argparse
import collections
import csv
import sys

SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("label")
    ap.add_argument("--top", type=int, default=8)
    a = ap.parse_args()
    rows = [r for r in csv.reader(open(a.csv)) if len(r) > 10]
    if len(rows) < 2:
        print(f"{a.label}: no kernels in {a.csv} (did ncu run?)", file=sys.stderr)
        return 1
    head, body = rows[0], rows[1:]
    ki, ui, vi = head.index("Kernel Name"), head.index("Metric Unit"), head.index("Metric Value")
    by = collections.defaultdict(float)
    for r in body:
        by[r[ki][:60]] += float(r[vi].replace(",", "")) * SCALE[r[ui]]
    total = sum(by.values())
    print(f"{a.label}: {len(body)} kernels, sum of kernel times {total / 1000:.3f} ms")
    for k, v in sorted(by.items(), key=lambda x: -x[1])[: a.top]:
        print(f"  {v / 1000:8.3f} ms  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
