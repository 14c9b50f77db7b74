"""Phase 3: tau on HumanEval with the reference loop (both drafters, T=0 and T=1), then fixtures.

Usage: python3 phase3_measure.py MODELS_DIR HUMANEVAL OUT_DIR [--budget SECONDS] [--limit N]
Plain greedy (4 shards) and the four (drafter, temperature) runs go in parallel
processes; each is stopped at the budget and what it measured so far is kept. Writes OUT_DIR/phase3.json (tau table),
the per-run result files, and OUT_DIR/fixtures/ (tests/fixtures/dflash/).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.path.join(HERE, "..", "reference")
RUNS = [(d, t) for d in ("drafter-full", "drafter-swa") for t in (0, 1)]
PLAIN_SHARDS = 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models")
    ap.add_argument("humaneval")
    ap.add_argument("out")
    ap.add_argument("--budget", type=float, default=360)
    ap.add_argument("--limit", type=int)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    target = os.path.join(args.models, "target")
    limit = ["--limit", str(args.limit)] if args.limit else []
    measure = [sys.executable, os.path.join(REF, "measure_humaneval.py")]
    common = ["--target", target, "--prompts", args.humaneval] + limit
    env = dict(os.environ, OMP_NUM_THREADS="2")
    jobs = {}
    # Plain greedy (4 shards) and the four DFlash runs all at once: each is launch-bound.
    for i in range(PLAIN_SHARDS):
        jobs[f"plain-{i}"] = measure + ["plain", "--shard", f"{i}/{PLAIN_SHARDS}",
                                        "--out", os.path.join(args.out, f"plain-{i}.json")] + common
    for d, t in RUNS:
        jobs[f"{d}-T{t}"] = measure + ["dflash", "--drafter", os.path.join(args.models, d), "--temperature", str(t),
                                       "--out", os.path.join(args.out, f"{d}-T{t}.json")] + common
    procs = {name: subprocess.Popen(cmd, stdout=open(os.path.join(args.out, name + ".log"), "w"),
                                    stderr=subprocess.STDOUT, env=env) for name, cmd in jobs.items()}
    deadline = t0 + args.budget
    for name, p in procs.items():
        try:
            p.wait(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            print(f"{name}: stopped at the budget", flush=True)
    order = lambda r: int(r["task_id"].split("/")[1])  # noqa: E731
    plain_results = []
    for i in range(PLAIN_SHARDS):
        path = os.path.join(args.out, f"plain-{i}.json")
        if os.path.exists(path):
            plain_results += json.load(open(path))["results"]
    plain = os.path.join(args.out, "plain.json")
    with open(plain, "w") as f:
        json.dump({"results": sorted(plain_results, key=order)}, f)
    table = {"seconds": time.time() - t0, "plain_prompts": len(plain_results)}
    for d, t in RUNS:
        name = f"{d}-T{t}"
        path = os.path.join(args.out, name + ".json")
        if not os.path.exists(path):
            continue
        if t == 0:
            subprocess.run(measure + ["compare", "--plain", plain, "--out", path], check=True)
        r = json.load(open(path))
        table[name] = {**r["summary"], "mismatches": r.get("mismatches"), "seconds": r["seconds"]}
        print(name, json.dumps({k: v for k, v in r["summary"].items() if k != "histogram"}), flush=True)
    with open(os.path.join(args.out, "phase3.json"), "w") as f:
        json.dump(table, f, indent=1)
    subprocess.run([sys.executable, os.path.join(REF, "make_fixtures.py"), args.models,
                    os.path.join(args.out, "fixtures"), "--humaneval", args.humaneval, "--plain", plain,
                    "--trace", "drafter-full=" + os.path.join(args.out, "drafter-full-T0.json"),
                    "--trace", "drafter-swa=" + os.path.join(args.out, "drafter-swa-T0.json")], check=True)
    print(f"phase 3 done in {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
