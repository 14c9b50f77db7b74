#!/usr/bin/python3
"""Plots bench_adaptive's CSV: output tokens/s against concurrency for plain,
fixed-length DFlash and adaptive speculation (medians of repeated runs),
with the long-context point beside it.

    python3 bench/plot_adaptive.py RESULTS.csv OUT.png [TITLE]
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"plain": ("plain decoding", "tab:gray", "o"),
         "fixed": ("DFlash, 15 drafts every step", "tab:red", "s"),
         "adaptive": ("DFlash, adaptive draft length", "tab:blue", "^")}


def medians(rows):
    """One row per (point, concurrency, method): the median tok/s of its runs (--repeats)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["point"], r["concurrency"], r["method"]), []).append(r)
    out = []
    for group in groups.values():
        row = dict(group[0])
        row["tok_s"] = statistics.median(float(r["tok_s"]) for r in group)
        out.append(row)
    return out


def main():
    rows = medians(list(csv.DictReader(open(sys.argv[1]))))
    title = sys.argv[3] if len(sys.argv) > 3 else "flashdraft, shipped pair, greedy HumanEval"
    fig, (ax, ax_long) = plt.subplots(1, 2, figsize=(10, 4.2), gridspec_kw={"width_ratios": [3, 1]})
    for method, (label, color, marker) in STYLE.items():
        pts = sorted((int(r["concurrency"]), float(r["tok_s"])) for r in rows
                     if r["point"] == "humaneval" and r["method"] == method)
        if pts:
            ax.plot([c for c, _ in pts], [t for _, t in pts], marker=marker, color=color, label=label)
    ax.set_xscale("log", base=2)
    concurrencies = sorted({int(r["concurrency"]) for r in rows if r["point"] == "humaneval"})
    ax.set_xticks(concurrencies)
    ax.set_xticklabels([str(c) for c in concurrencies])
    ax.set_xlabel("concurrent requests")
    ax.set_ylabel("output tokens/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title, fontsize=10)

    long_rows = [r for r in rows if r["point"] == "long"]
    if long_rows:
        names = [m for m in STYLE if any(r["method"] == m for r in long_rows)]
        values = [next(float(r["tok_s"]) for r in long_rows if r["method"] == m) for m in names]
        ax_long.bar(range(len(names)), values, color=[STYLE[m][1] for m in names])
        ax_long.set_xticks(range(len(names)))
        ax_long.set_xticklabels(names)
        r0 = long_rows[0]
        ax_long.set_title(f"long context: {r0['context']} tokens,\n{r0['concurrency']} at once", fontsize=10)
        ax_long.set_ylabel("output tokens/s")
        ax_long.grid(alpha=0.3, axis="y")
    else:
        ax_long.axis("off")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
