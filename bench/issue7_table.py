#!/usr/bin/env python3
"""Issue 7's benchmark figures as one table, from one call's logs.

`bash scripts/gpu_run.sh scorecard` writes the logs into one directory and
runs this on it; every ratio in the table comes from that one run (the
floors from the copy bandwidth each program measures itself). Inputs, each
optional (a missing one leaves its rows out, saying so):
  bench_step.log        bench_step --contexts 1024,16384 --batches 1 (eager steps)
  bench_cycle.log       bench_cycle --contexts 1024,16384 --batches 1 (the plain step as a replayed graph)
  ncu_sum_CTX.txt       "sum of kernel times X ms" of one eager decode step under ncu (one kernel at a
                        time, caches left as the step leaves them)
  attention_ours.csv    bench_attention --bench --csv
  attention_sdpa.csv    bench/attention_sdpa.py --csv (same card, same call)
  agreement.log         engine_gpu_tests' Gpu.GreedyOutputsAgreeWithCpu
Usage: issue7_table.py DIR [--commit SHA] [--date YYYY-MM-DD]
"""
import argparse
import csv
import os
import re
import sys

# Decode points where reading K/V is the call's work (>= 100 MB of it): issue
# 7 asks for >= 0.8 of copy bandwidth there.
KV_BOUND_MB = 100.0
# The attention points issue 7 sets its goal on (decode; 16-query blocks,
# bidirectional and causal sliding window); bench_attention's causal blocks
# and prefill are reported beside them.
GOAL_POINTS = ("decode_", "block16_bidir_", "block16_sliding2048_")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def step_rows(text):
    """bench_step lines: {(step, ctx): (ms, floor_ms, note)}; copy GB/s; GPU line."""
    rows = {}
    for m in re.finditer(r"^(decode|verify16|draft16|prefill)[ \t]+(\d+)[ \t]+(\d+)[ \t]+([\d.]+)[ \t]+(\S+)[ \t]+(\S+)[ \t]*(.*)$", text, re.M):
        step, batch, ctx, ms, floor, _, note = m.groups()
        if int(batch) == 1:
            rows[(step, int(ctx))] = (float(ms), None if floor == "-" else float(floor), note.strip())
    bw = re.search(r"copy bandwidth (\d+) GB/s", text)
    return rows, float(bw.group(1)) if bw else None


def cycle_rows(text):
    """bench_cycle's first table: {ctx: (plain ms, floor ms)} at batch 1."""
    rows = {}
    for m in re.finditer(r"^\| (\d+) \| 1 \| ([\d.]+) \| ([\d.]+) \|", text, re.M):
        rows.setdefault(int(m.group(1)), (float(m.group(2)), float(m.group(3))))
    return rows


def load_csv(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return {r["point"]: r for r in csv.DictReader(f)}


def yes(ok):
    return "yes" if ok else "**no**"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--commit", default="?")
    ap.add_argument("--date", default="?")
    ap.add_argument("--gpu", default=None)
    a = ap.parse_args()
    d = a.dir
    out = []
    missing = []
    gpu = a.gpu or (read(os.path.join(d, "gpu.txt")) or "?").split(",")[0].strip()

    step_text = read(os.path.join(d, "bench_step.log"))
    steps, bw = step_rows(step_text) if step_text else ({}, None)
    cycle_text = read(os.path.join(d, "bench_cycle.log"))
    cycles = cycle_rows(cycle_text) if cycle_text else {}
    if not step_text:
        missing.append("bench_step.log")
    if not cycle_text:
        missing.append("bench_cycle.log")

    for ctx in (1024, 16384):
        dec = steps.get(("decode", ctx))
        k = f"{ctx // 1024}k"
        if dec:
            ms, floor, _ = dec
            out.append((f"decode, batch 1, ctx {k}, eager launches: ms (floor / ms)", "reported",
                        f"{ms:.2f} ({floor / ms:.2f})", "-"))
            ncu = read(os.path.join(d, f"ncu_sum_{ctx}.txt"))
            m = re.search(r"sum of kernel times ([\d.]+) ms", ncu or "")
            if m:
                t = float(m.group(1))
                out.append((f"decode, batch 1, ctx {k}, sum of kernel times (ncu: one kernel at a time): ms (floor / ms)",
                            ">= 0.90", f"{t:.2f} ({floor / t:.2f})", yes(floor / t >= 0.90)))
            else:
                missing.append(f"ncu_sum_{ctx}.txt")
        if ctx in cycles:
            ms, floor = cycles[ctx]
            out.append((f"decode, batch 1, ctx {k}, replayed CUDA graph: ms (floor / ms)", ">= 0.90",
                        f"{ms:.2f} ({floor / ms:.2f})", yes(floor / ms >= 0.90)))
    ver = steps.get(("verify16", 1024))
    if ver:
        r = float(re.search(r"verify/decode ([\d.]+)", ver[2]).group(1))
        out.append(("16-token verify / 1-token decode, batch 1, ctx 1k (eager)", "<= 1.10", f"{r:.2f}", yes(r <= 1.10)))

    ours = load_csv(os.path.join(d, "attention_ours.csv"))
    sdpa = load_csv(os.path.join(d, "attention_sdpa.csv"))
    if ours and sdpa:
        for point, s in sdpa.items():
            if point not in ours:
                continue
            o = ours[point]
            ratio = float(o["us"]) / float(s["us"])
            goal = point.startswith(GOAL_POINTS)
            out.append((f"attention {point}: ours / SDPA time (ours us, SDPA us)",
                        "<= 1.00" if goal else "reported (not an issue 7 point)",
                        f"{ratio:.2f} ({float(o['us']):.1f}, {float(s['us']):.1f})", yes(ratio <= 1.0) if goal else "-"))
        for point, o in ours.items():
            if point.startswith("decode_") and float(o["kv_mb"]) >= KV_BOUND_MB:
                f = float(o["of_copy"])
                peer = f" (SDPA {float(sdpa[point]['of_copy']):.3f})" if point in sdpa else ""
                out.append((f"attention {point}: K/V read, of copy bandwidth", ">= 0.80", f"{f:.3f}{peer}",
                            yes(f >= 0.8)))
    else:
        missing.append("attention_ours.csv / attention_sdpa.csv")

    pre = steps.get(("prefill", 2048))
    if pre:
        tf = re.search(r"([\d.]+) TFLOP/s", pre[2]).group(1)
        out.append(("prefill, 2048 tokens: ms, TFLOP/s", "reported", f"{pre[0]:.1f}, {tf}", "-"))

    agree = read(os.path.join(d, "agreement.log"))
    m = re.search(r"(\d+) of (\d+) prompts identical", agree or "")
    if m:
        n, tot = int(m.group(1)), int(m.group(2))
        out.append(("plain greedy CPU (fp32) vs GPU (bf16), 164 HumanEval prompts x 128 tokens: identical",
                    ">= 95%", f"{n}/{tot} ({100.0 * n / tot:.1f}%)", yes(n >= 0.95 * tot)))
    else:
        missing.append("agreement.log")

    print(f"Issue 7's figures, {gpu}, {a.date}, commit {a.commit}, `bash scripts/gpu_run.sh scorecard`"
          + (f" (copy {bw:.0f} GB/s)" if bw else "") + ":\n")
    print("| figure | goal | measured | met |\n|---|---|---|---|")
    for row in out:
        print("| " + " | ".join(row) + " |")
    met = sum(1 for r in out if r[3] == "yes")
    goals = sum(1 for r in out if r[3] != "-")
    print(f"\n{met} of {goals} goals met.", flush=True)
    if missing:
        print("not in this run: " + ", ".join(missing), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
