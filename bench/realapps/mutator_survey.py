#!/usr/bin/env python3
"""bench/realapps/mutator_survey: what r3's built-in mutators make of the corpus's kernels.

For every kernel build_corpus.sh listed (kernels.tsv), its device-only unit is cut from the
program's own file as the tuning job cuts it (`r3 extract` with the -D/-I of the program's nvcc
line), and bench/mutator_yield runs the six mutators on it twice: read bare, and read as the job
reads it, with the same -D/-I (a kernel's tune.yaml defines and include_dirs). It prints, per
kernel, the rewrites offered (they compile with Clang at their tunables' defaults) and how many
of them also compile with NVRTC at every value, or why there are none. No GPU is needed: the
programs are built with nvcc, nothing is run.

Usage:
  mutator_survey.py --corpus DIR --r3 BUILD/bin --mutator-yield BUILD/bench/mutator_yield
                    [--only a,b]
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from realapps import read_kernels_tsv  # noqa: E402

MUTATORS = ["restrict", "unroll", "launch_bounds", "ldg", "hoist_loads", "parametrise"]


def yield_of(tool, unit, entry, flags):
    """mutator_yield on one unit: {mutator: (offered, nvrtc at every value)}, first diagnostic."""
    build = [x for f in flags if f.startswith(("-D", "-I")) for x in (f[:2], f[2:])]
    p = subprocess.run([tool] + build + [f"{unit}:{entry}"], capture_output=True, text=True,
                       timeout=600)
    counts = {}
    for line in p.stdout.splitlines():
        words = line.split()
        if len(words) == 6 and words[0] in MUTATORS:
            counts[words[0]] = (int(words[2]), int(words[5]))
    why = next((l.strip() for l in p.stderr.splitlines() if "error" in l), "")
    return counts, re.sub(r"^\S*/", "", why)


def describe(counts):
    made = [f"{m} {counts[m][0]}" for m in MUTATORS if counts.get(m, (0, 0))[0] > 0]
    return ", ".join(made) if made else "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="OUTDIR of build_corpus.sh")
    ap.add_argument("--r3", required=True, help="directory holding r3")
    ap.add_argument("--mutator-yield", required=True, help="bench/mutator_yield of the same build")
    ap.add_argument("--only", default="", help="comma-separated program names")
    args = ap.parse_args()
    sources = read_kernels_tsv(args.corpus)
    if not sources:
        sys.exit(f"mutator_survey: no kernels.tsv in {args.corpus} (run build_corpus.sh)")
    only = set(filter(None, args.only.split(",")))
    with open(os.path.join(args.corpus, "kernels.tsv")) as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    totals = {"kernels": 0, "bare": 0, "read": 0, "offered_bare": 0, "offered": 0, "nvrtc": 0}
    print(f"{'program':15} {'kernel':30} {'bare':>5} {'read':>5} {'nvrtc':>5}  rewrites as the job "
          "reads the unit (or why none)")
    with tempfile.TemporaryDirectory() as work:
        for row in rows:
            program, base = row["program"], row["base"]
            if only and program not in only:
                continue
            tu, flags = sources[(program, base)]
            unit = os.path.join(work, f"{program}-{base}.cu")
            p = subprocess.run([os.path.join(args.r3, "r3"), "extract", os.path.basename(tu), "-k",
                                base, "-o", unit] + [f for f in flags if f.startswith(("-D", "-I"))],
                               cwd=os.path.dirname(tu), capture_output=True, text=True, timeout=600)
            totals["kernels"] += 1
            if p.returncode != 0:
                why = ([l for l in p.stderr.splitlines() if l.strip()] or ["?"])[-1]
                print(f"{program:15} {base:30} {'-':>5} {'-':>5} {'-':>5}  not cut: {why[:120]}")
                continue
            # A template kernel is named by its recorded instance, as the job names it.
            entry = row["demangled"] if row.get("template") == "yes" else base
            bare, _ = yield_of(args.mutator_yield, unit, entry, [])
            read, why = yield_of(args.mutator_yield, unit, entry, flags)
            offered_bare = sum(c[0] for c in bare.values())
            offered = sum(c[0] for c in read.values())
            nvrtc = sum(c[1] for c in read.values())
            totals["bare"] += offered_bare > 0
            totals["read"] += offered > 0
            totals["offered_bare"] += offered_bare
            totals["offered"] += offered
            totals["nvrtc"] += nvrtc
            detail = describe(read) if offered else (why[:120] or "nothing to rewrite")
            print(f"{program:15} {base[:30]:30} {offered_bare:5} {offered:5} {nvrtc:5}  {detail}")
    print(f"# {totals['kernels']} kernels; with rewrites: {totals['bare']} read bare, "
          f"{totals['read']} read as the job reads them; rewrites offered: {totals['offered_bare']}"
          f" bare, {totals['offered']} read, of which {totals['nvrtc']} compile with NVRTC at "
          "every value of their tunables")


if __name__ == "__main__":
    main()
