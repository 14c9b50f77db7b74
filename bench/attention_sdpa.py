#!/usr/bin/env python3
"""torch SDPA at the points of bench_attention (GQA 32/8, head_dim 128, bf16).

The baseline paged attention has to beat. K/V are contiguous [batch, 8, keys,
128] (SDPA has no paged layout, so it gets the easier input). Each point tries
the SDPA formulations a user could pick and keeps the fastest:
  gqa  enable_gqa=True on the 8 kv heads
  rep  K/V expanded to 32 heads beforehand (repeat_interleave, outside timing)
with the mask each point needs:
  decode          no mask (one query sees every key)
  block16_bidir   no mask (the block sees the context and itself)
  block16_causal  query i of the block sees keys <= ctx + i: causal_lower_right,
                  or the equivalent boolean mask
  block16_sliding causal and j > ctx + i - 2048: a boolean mask over only the
                  keys some query can see (K/V sliced to that range beforehand)
  prefill2048     is_causal=True (square); after a context, causal_lower_right
                  or the equivalent boolean mask
Timing: CUDA events around each call, warm-up, median of --reps, rotating over
enough K/V sets to exceed 3x the L2 cache. With --ours FILE (the CSV written by
`bench_attention --csv FILE`) it also prints ours/SDPA per point.
"""
import argparse
import csv
import math
import statistics

import torch
import torch.nn.functional as F

HD, NH, NKV, W = 128, 32, 8, 2048


def points():
    pts = []
    for b in (1, 32):
        for ctx in (1024, 8192, 32768):
            pts.append(("decode", b, ctx, 1))
    for kind in ("block16_bidir", "block16_sliding2048", "block16_causal"):
        for b in (1, 32):
            for ctx in (1024, 8192):
                pts.append((kind, b, ctx, 16))
    pts.append(("prefill2048", 1, 0, 2048))
    pts.append(("prefill2048", 1, 6144, 2048))  # the last chunk of an 8192-token prompt
    return pts


def key_range(kind, ctx, rows):
    """[lo, hi): keys the call must read (union of the rows' visible ranges)."""
    if kind == "decode":
        return 0, ctx
    if kind == "prefill2048":
        return 0, ctx + rows
    hi = ctx + rows
    lo = max(0, ctx - W + 1) if kind == "block16_sliding2048" else 0
    return lo, hi


def mask_for(kind, ctx, rows, lo, hi, dev):
    """Boolean [rows, hi - lo] mask (True = visible), or None."""
    if kind in ("decode", "block16_bidir") or (kind == "prefill2048" and ctx == 0):
        return None
    p = ctx + torch.arange(rows, device=dev)[:, None]
    j = lo + torch.arange(hi - lo, device=dev)[None, :]
    vis = j <= p
    if kind == "block16_sliding2048":
        vis &= j > p - W
    return vis


def median_time_us(fn, sets, reps):
    for i in range(5):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for i in range(reps):
        ev[i][0].record()
        fn(sets[i % len(sets)])
        ev[i][1].record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
    return statistics.median(t), 0.5 * (t[reps * 3 // 4] - t[reps // 4])


def copy_gbps():
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    b = torch.empty_like(a)
    us, _ = median_time_us(lambda s: b.copy_(a), [None], 10)
    return 2 * n / (us * 1e-6) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--ours", help="CSV from bench_attention --csv, to print ours/SDPA")
    ap.add_argument("--csv", help="write this table as CSV")
    args = ap.parse_args()
    dev = "cuda"
    torch.manual_seed(0)
    prop = torch.cuda.get_device_properties(0)
    l2 = getattr(prop, "L2_cache_size", 50 << 20)
    cp = copy_gbps()
    print(f"device {prop.name}, torch {torch.__version__}; device-to-device copy {cp:.0f} GB/s (read + write)")
    print(f"{'point':22s} {'batch':>5s} {'ctx':>6s} {'rows':>5s} {'time_us':>10s} {'+-us':>8s} {'KV_MB':>9s} "
          f"{'GB/s':>8s} {'of_copy':>7s} variant")
    rows_out = []
    scale = 1.0 / math.sqrt(HD)
    for kind, b, ctx, rows in points():
        lo, hi = key_range(kind, ctx, rows)
        nk = hi - lo
        kv_bytes = 2 * b * NKV * nk * HD * 2
        n_sets = int(min(8, math.ceil(3 * l2 / kv_bytes)))
        q = torch.empty(b, NH, rows, HD, device=dev, dtype=torch.bfloat16).uniform_(-2, 2)
        sets = []
        for _ in range(n_sets):
            k = torch.empty(b, NKV, nk, HD, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
            v = torch.empty(b, NKV, nk, HD, device=dev, dtype=torch.bfloat16).uniform_(-1, 1)
            sets.append((k, v))
        vis = mask_for(kind, ctx, rows, lo, hi, dev)
        causal = kind == "prefill2048" and ctx == 0  # is_causal aligns the square's corners only
        masks = [("none", None)] if vis is None else [("bool", vis)]
        if kind == "block16_causal" or (kind == "prefill2048" and ctx > 0):
            try:
                from torch.nn.attention.bias import causal_lower_right
                masks.insert(0, ("lower_right", causal_lower_right(rows, nk)))
            except ImportError:
                pass
        results = []
        ref = None
        for mname, m in masks:
            for vname in ("gqa", "rep"):
                if vname == "rep":
                    # Expanded copies cost memory: skip where they would not fit comfortably.
                    if kv_bytes * 4 * n_sets > 24e9:
                        continue
                    vsets = [(k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)) for k, v in sets]
                    kw = {}
                else:
                    vsets = sets
                    kw = {"enable_gqa": True}

                def fn(kv, m=m, kw=kw):
                    return F.scaled_dot_product_attention(q, kv[0], kv[1], attn_mask=m, is_causal=causal,
                                                          scale=scale, **kw)

                try:
                    out = fn(vsets[0]).float()
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001 - a formulation SDPA refuses is just skipped
                    print(f"  ({kind} b{b} ctx{ctx}: {vname}/{mname} not supported: {type(e).__name__})")
                    continue
                if ref is None:
                    ref = out
                elif (out - ref).abs().max().item() > 2e-2 * ref.abs().max().item():
                    raise SystemExit(f"{kind} b{b} ctx{ctx}: {vname}/{mname} disagrees with the first variant")
                us, spread = median_time_us(fn, vsets, args.reps)
                results.append((us, spread, f"{vname}/{mname}"))
                del vsets
        us, spread, variant = min(results)
        mb = kv_bytes / 1e6
        gbps = kv_bytes / (us * 1e-6) / 1e9
        print(f"{kind:22s} {b:5d} {ctx:6d} {rows:5d} {us:10.1f} {spread:8.1f} {mb:9.1f} {gbps:8.0f} {gbps / cp:7.2f} "
              f"{variant}", flush=True)
        rows_out.append((f"{kind}_b{b}_ctx{ctx}", us, spread, mb, gbps, gbps / cp, variant))
        del sets, q
        torch.cuda.empty_cache()

    print(f"\nsummary (torch SDPA, {prop.name}, copy {cp:.0f} GB/s)")
    print("| point | us | GB/s | of copy | variant |\n|---|---|---|---|---|")
    for name, us, _, _, gbps, frac, variant in rows_out:
        print(f"| {name} | {us:.1f} | {gbps:.0f} | {frac:.2f} | {variant} |")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["point", "us", "spread_us", "kv_mb", "gbps", "of_copy", "variant"])
            w.writerows(rows_out)
    if args.ours:
        ours = {}
        with open(args.ours) as f:
            for r in csv.DictReader(f):
                ours[r["point"]] = float(r["us"])
        print("\nours vs SDPA (time ratio ours/SDPA; < 1 means ours is faster)")
        print("| point | ours us | SDPA us | ours/SDPA |\n|---|---|---|---|")
        for name, us, *_ in rows_out:
            if name in ours:
                print(f"| {name} | {ours[name]:.1f} | {us:.1f} | {ours[name] / us:.2f} |")
        print("ratio line: " + " ".join(f"{name}={ours[name] / us:.2f}" for name, us, *_ in rows_out if name in ours))


if __name__ == "__main__":
    main()
