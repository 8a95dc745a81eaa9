#!/usr/bin/env python3
"""bench/sweeps/corpus_sweep.py: an exhaustive tuning table of a recorded kernel of a real program.

gpu_sweep measures kernels written for it; this measures a kernel of the real-program corpus
(bench/realapps/build_corpus.sh) as r3 would tune it without its source: the launch level (the
block shape, the grid covering the same threads) and the compiler level of the recorded PTX (the
JIT's register limit and global-load cache mode). Each point is one `r3 replay` of the capture
(verified against the recording, the median of --repeats timed runs after 2 warm-up runs); a
point that does not launch, compile or verify is `fail`. Points are spread over the GPUs given,
one replay at a time per GPU.

Usage (GPU host):
  corpus_sweep.py --r3 BUILD/bin/r3 --capture F.h5 --kernel '#0' --out TABLE.csv
                  [--gpus 0,1,2,3] [--repeats 10] [--title TEXT]

The table (bench/data's format: one column per parameter, `time` in ms or `fail`):
  BX, BY   block shape, powers of two 1..1024 (BX*BY > 1024 is written `fail` without a run:
           no GPU launches it; the .constraints file beside the table says so)
  REGS     --maxrregcount for the JIT, 0: none
  DLCM     global loads cached in L1 and L2 (0: the default) or in L2 only (1: -dlcm=cg)
"""
import argparse
import concurrent.futures
import itertools
import os
import queue
import re
import subprocess
import sys
import time

BLOCK = [1 << k for k in range(11)]
REGS = [0, 32, 64]
DLCM = [0, 1]
MAX_THREADS = 1024

RESULT = re.compile(r"result\s+ok: (\d+) launch\(es\) verified, total median ([\d.]+) (us|ms|s)")
UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def replay(r3, capture, kernel, point, repeats, gpu):
    bx, by, regs, dlcm = point
    cmd = [r3, "replay", capture, "-k", kernel, "--block", f"{bx},{by},1", "-n", str(repeats)]
    flags = []
    if regs:
        flags.append(f"--maxrregcount={regs}")
    if dlcm:
        flags.append("-dlcm=cg")
    if flags:
        cmd += ["--flags", " ".join(flags)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "timeout"
    m = RESULT.search(p.stdout)
    if p.returncode != 0 or not m:
        last = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return None, last[-1] if last else f"exit {p.returncode}"
    return float(m.group(2)) * UNIT_MS[m.group(3)], ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--r3", required=True, help="the r3 executable")
    ap.add_argument("--capture", required=True)
    ap.add_argument("--kernel", required=True, help="as r3 replay -k takes it, e.g. '#0'")
    ap.add_argument("--out", required=True, help="the table to write")
    ap.add_argument("--gpus", default="0", help="GPU indices to spread the points over (default 0)")
    ap.add_argument("--repeats", type=int, default=10, help="timed runs per point (default 10)")
    ap.add_argument("--title", default="", help="the table's first comment line")
    args = ap.parse_args()

    points = list(itertools.product(BLOCK, BLOCK, REGS, DLCM))
    runnable = [p for p in points if p[0] * p[1] <= MAX_THREADS]
    gpus = queue.Queue()
    for g in args.gpus.split(","):
        gpus.put(g)
    results, why = {}, {}
    start = time.time()

    def measure(point):
        gpu = gpus.get()
        try:
            return point, replay(args.r3, args.capture, args.kernel, point, args.repeats, gpu)
        finally:
            gpus.put(gpu)

    with concurrent.futures.ThreadPoolExecutor(max_workers=gpus.qsize()) as pool:
        for done, (point, (ms, reason)) in enumerate(pool.map(measure, runnable), 1):
            results[point] = ms
            if ms is None:
                why[reason] = why.get(reason, 0) + 1
            if done % 50 == 0:
                print(f"corpus_sweep: {done}/{len(runnable)} points, {time.time() - start:.0f} s",
                      file=sys.stderr, flush=True)
    with open(args.out, "w") as out:
        title = args.title or f"{args.kernel} of {os.path.basename(args.capture)}"
        out.write(f"# {title}; time in ms: r3 replay's verified median of {args.repeats} runs "
                  "after 2 warm-up runs; fail: did not launch, compile or verify\n")
        out.write("BX,BY,REGS,DLCM,time\n")
        for p in points:
            ms = results.get(p)
            out.write(",".join(map(str, p)) + "," + (f"{ms:.5f}" if ms is not None else "fail") + "\n")
    ok = [ms for ms in results.values() if ms is not None]
    print(f"corpus_sweep: {len(points)} points, {len(runnable)} run, {len(ok)} verified, "
          f"best {min(ok) if ok else float('nan'):.5f} ms, {time.time() - start:.0f} s")
    for reason, n in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"  {n} failed: {reason}")


if __name__ == "__main__":
    main()
