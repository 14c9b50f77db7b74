#!/usr/bin/env python3
"""GPU idle time between kernels, per replayed CUDA graph, from a timeline
written by bench/libkernel_timeline.so (bench/kernel_timeline.cpp).

  python3 bench/kernel_gaps.py t.csv [--top 3] [--by-kernel] [--phase-end NAME]

A graph launch is the kernels sharing one (graph id, correlation id). For each
graph replayed at least 5 times: kernels per launch, and the median over its
launches of the span (first start to last end), the busy time (the union of
its kernels' intervals: programmatic dependent launch lets neighbours
overlap) and the idle time (span - busy), with the kernel pairs whose gaps
cost the most (median over launches). --by-kernel adds, for each graph
reported, where its time goes: per kernel and grid (one GEMM shape, one
attention launch shape), the launches per replay and their summed duration
(median over replays), and how much of the span each adds: a kernel adds
its end minus the latest end before it (the time the replay waits on it,
gaps included): in each replay these sum to its span whatever overlaps
(their medians, printed, to about the median span). --phase-end NAME (with
--by-kernel) cuts each replay into phases after the first kernel of that name
in it (argmax_kernel: a DFlash cycle graph's drafter pass, then the verify)
and gives each phase's share of the span and its kernels' shares.
"""
import argparse
import collections
import csv
import re
import statistics

def short(name):
    """The kernel's own name: the last identifier of a mangled nested name
    (_ZN 10flashdraft 3ops 4cuda <anonymous namespace> 14rmsnorm_kernel I...),
    or the demangled text up to its template arguments."""
    if name.startswith("_ZN"):
        i, parts = 3, []
        while i < len(name) and name[i].isdigit():
            j = i
            while name[j].isdigit():
                j += 1
            parts.append(name[j:j + int(name[i:j])])
            i = j + int(name[i:j])
        if parts:
            return parts[-1][:40]
    name = re.sub(r"^void ", "", name.replace("(anonymous namespace)::", ""))
    name = re.sub(r"\(.*$", "", name)
    name = re.sub(r"<.*$", "", name)
    return name.split("::")[-1][:40]


def busy_and_gaps(ks):
    """ks sorted by start, each (start, end, ...): the time covered by their
    union, and each gap as (index of the kernel after it, length)."""
    busy, gaps, cur_s, cur_e = 0, [], ks[0][0], ks[0][1]
    for i, k in enumerate(ks[1:], 1):
        s, e = k[0], k[1]
        if s > cur_e:
            busy += cur_e - cur_s
            gaps.append((i, s - cur_e))
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return busy + cur_e - cur_s, gaps


def overall(path, label):
    ks = sorted((int(r["start_ns"]), int(r["end_ns"]), r["graph_id"], r["correlation_id"])
                for r in csv.DictReader(open(path)))
    busy, _ = busy_and_gaps(ks)
    span = max(e for _, e, _, _ in ks) - ks[0][0]
    starts, seen = [], set()
    for s, _, g, c in ks:
        if g != "0" and (g, c) not in seen:
            seen.add((g, c))
            starts.append(s)
    period = statistics.median(b - a for a, b in zip(starts, starts[1:])) / 1e3 if len(starts) > 2 else float("nan")
    print(f"| {label} | {len(ks)} kernels | span {span / 1e6:.1f} ms | GPU busy {100 * busy / span:.1f}% | "
          f"{len(starts)} graph replays, median period {period:.0f} us |")


def phase_of(ks, phase_end):
    """Each kernel's phase in one replay: 0 up to and including the first
    kernel named phase_end, 1 after it (all 0 without phase_end)."""
    phases, phase = [], 0
    for _, _, name, _ in ks:
        phases.append(phase)
        if phase_end and phase == 0 and short(name) == phase_end:
            phase = 1
    return phases


def by_kernel(launches, label, phase_end=None):
    """Per (phase, kernel, grid): count per launch and the medians over
    launches of its summed time and of what it adds to the span."""
    per = collections.defaultdict(list)
    for ks in launches:
        sums, adds, counts = collections.defaultdict(float), collections.defaultdict(float), collections.defaultdict(int)
        latest = ks[0][0]
        for (s, e, name, grid), phase in zip(ks, phase_of(ks, phase_end)):
            key = (phase, short(name), grid)
            sums[key] += (e - s) / 1e3
            adds[key] += max(0, e - latest) / 1e3
            latest = max(latest, e)
            counts[key] += 1
        for key, v in sums.items():
            per[key].append((v, adds[key], counts[key]))
    n = len(launches)
    rows = sorted(((statistics.median(v for v, _, _ in vs), statistics.median(a for _, a, _ in vs), vs[0][2], key)
                   for key, vs in per.items() if len(vs) * 2 >= n), key=lambda r: (r[3][0], -r[0]))
    present = sorted({r[3][0] for r in rows})
    for phase in present:
        mine = [r for r in rows if r[3][0] == phase]
        total = sum(r[0] for r in mine)
        added = sum(r[1] for r in mine)
        name = f", phase {phase} ({'to' if phase == 0 else 'after'} the first {phase_end})" if len(present) > 1 else ""
        print(f"\n{label}{name}: kernel time per replay by kernel and grid (sum {total:.1f} us; "
              f"adds to the span {added:.1f} us)\n")
        print("| kernel | grid | per replay | us | share | adds to the span, us |")
        print("|---|---|---|---|---|---|")
        for us, add, count, (_, kname, grid) in mine:
            print(f"| {kname} | {grid} | {count} | {us:.1f} | {100 * us / total:.1f}% | {add:.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=3, help="graphs to report, most replayed first")
    ap.add_argument("--label", default="", help="a name for the run, printed with each row")
    ap.add_argument("--overall", action="store_true",
                    help="one line for the whole run instead: how busy the GPU was between its first and last "
                         "kernel, and the period between graph replays (a serving loop's step)")
    ap.add_argument("--by-kernel", action="store_true",
                    help="also: each reported graph's kernel time by kernel and grid")
    ap.add_argument("--phase-end", metavar="NAME",
                    help="with --by-kernel: split each replay after the first kernel of this name "
                         "(argmax_kernel ends a DFlash cycle's drafter pass)")
    a = ap.parse_args()
    if a.overall:
        overall(a.csv, a.label)
        return
    launches = collections.defaultdict(list)
    for r in csv.DictReader(open(a.csv)):
        if r["graph_id"] != "0":
            launches[(int(r["graph_id"]), int(r["correlation_id"]))].append(
                (int(r["start_ns"]), int(r["end_ns"]), r["name"], r.get("grid", "")))
    by_graph = collections.defaultdict(list)
    for (g, _), ks in launches.items():
        by_graph[g].append(sorted(ks))
    graphs = sorted((g for g in by_graph if len(by_graph[g]) >= 5), key=lambda g: -len(by_graph[g]))[: a.top]
    print("| run | graph | launches | kernels | span us | busy us | idle us | idle % | costliest gaps (us) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for g in graphs:
        spans, busys, idles = [], [], []
        gap_at = collections.defaultdict(list)
        for ks in by_graph[g]:
            t0, t1 = ks[0][0], max(k[1] for k in ks)
            busy, gaps = busy_and_gaps(ks)
            for i, gap in gaps:
                gap_at[(i, short(ks[i - 1][2]), short(ks[i][2]))].append(gap)
            spans.append((t1 - t0) / 1e3)
            busys.append(busy / 1e3)
            idles.append((t1 - t0 - busy) / 1e3)
        n = len(by_graph[g])
        # Sum the gaps over kernel pairs of the same names (one per layer), median per launch.
        pair_cost = collections.defaultdict(float)
        for (i, x, y), v in gap_at.items():
            pair_cost[(x, y)] += statistics.median(v) * len(v) / n / 1e3
        worst = sorted(pair_cost.items(), key=lambda kv: -kv[1])[:3]
        worst_s = "; ".join(f"{x} > {y} {c:.1f}" for (x, y), c in worst)
        span, busy, idle = statistics.median(spans), statistics.median(busys), statistics.median(idles)
        print(f"| {a.label} | {g} | {n} | {len(by_graph[g][0])} | {span:.1f} | {busy:.1f} | {idle:.1f} | "
              f"{100 * idle / span:.1f} | {worst_s} |")
    if a.by_kernel:
        for g in graphs:
            by_kernel(by_graph[g], f"{a.label}, graph {g}", a.phase_end)


if __name__ == "__main__":
    main()
