#!/usr/bin/env python3
"""bench/realapps: r3 on public, unmodified CUDA programs (the corpus build_corpus.sh builds).

For every program of the corpus's manifest.tsv:
  1. the program runs once plain (its wall time) and once under `r3 record` (its kernels, the first
     launch of each by default);
  2. every recorded kernel is replayed as recorded (`r3 replay`): verified or not, its median time,
     and the fidelity = replayed time / the launch's time inside the application (CUPTI);
  3. the kernels chosen for tuning (by default each program's longest kernel) are tuned with
     `mpirun -n 2 r3-mpi` (one evaluator) on the recorded code: the compiler level (the recorded PTX
     through the JIT with ptxas options) and the launch level (block shapes), with the winner
     confirmation against the application's own code;
and prints one line per kernel: recorded, verified, fidelity, confirmed speedup over the recorded
code (or "keep" when nothing beat it), candidates by outcome class, the application's run time and
the mean cost of one candidate. Every figure comes from this one run.

Usage:
  realapps.py --corpus DIR --r3 BUILD/bin [--out DIR] [--only a,b] [--evaluations N]
              [--wall-time 40s] [--tune all|longest|none] [--launches N] [--mpirun mpirun]
"""
import argparse
import csv
import os
import re
import shlex
import shutil
import subprocess
import sys
import time


def run(cmd, cwd=None, timeout=600, env=None):
    start = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return p, time.monotonic() - start


def read_manifest(corpus):
    programs = []
    with open(os.path.join(corpus, "manifest.tsv")) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < len(header):
                continue
            programs.append(dict(zip(header, fields)))
    return programs


def inspect(r3, capture):
    """Kernels of a capture: index, mangled name, demangled name, app times of its launches."""
    p, _ = run([r3, "inspect", capture, "--launches", "1000"])
    if p.returncode != 0:
        p, _ = run([r3, "inspect", capture])
    kernels = []
    for line in p.stdout.splitlines():
        m = re.match(r"kernel #(\d+)\s+(\S+)", line)
        if m:
            kernels.append({"index": int(m.group(1)), "name": m.group(2), "demangled": "",
                            "app_us": []})
            continue
        if not kernels:
            continue
        m = re.match(r"\s+demangled\s+(.*)", line)
        if m:
            kernels[-1]["demangled"] = m.group(1).strip()
        m = re.search(r"([0-9.]+) us in the application", line)
        if m:
            kernels[-1]["app_us"].append(float(m.group(1)))
    return kernels


def unnamed_regions(r3, capture):
    p, _ = run([r3, "inspect", capture, "--regions", "--launches", "1000"])
    return p.stdout.count("(unnamed)")


def base_name(kernel):
    text = kernel["demangled"] or kernel["name"]
    return text.split("(")[0].split(" ")[-1]


def replay(r3, capture, index):
    p, _ = run([r3, "replay", capture, "-k", f"#{index}", "-n", "21"])
    medians = [float(m) for m in re.findall(r"verified\s+median\s+([0-9.]+) us", p.stdout)]
    verified = p.returncode == 0 and len(medians) > 0
    why = ""
    if not verified:
        lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
        why = lines[-1] if lines else "no output"
    return verified, medians, why


def read_kernels_tsv(corpus):
    """(program, base name) -> (translation unit path, -D/-I flags) from build_corpus.sh."""
    out = {}
    path = os.path.join(corpus, "kernels.tsv")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            tu = row["translation_unit"]
            suite = "rodinia" if tu.startswith("cuda/") else "polybench"
            tu_path = os.path.join(corpus, "src", suite, tu)
            words = (row.get("nvcc_flags", "")
                     .replace("<rodinia>", os.path.join(corpus, "src", "rodinia"))
                     .replace("<polybench>", os.path.join(corpus, "src", "polybench"))).split()
            flags = []
            for i, w in enumerate(words):
                if w.startswith("-D") and len(w) > 2:
                    flags.append(w)
                elif w in ("-use_fast_math", "--use_fast_math"):
                    flags.append("--use_fast_math")  # as the application was built
                elif w.startswith("-I") and len(w) > 2:
                    flags.append("-I" + os.path.join(os.path.dirname(tu_path), w[2:]))  # or absolute
                elif w == "-I" and i + 1 < len(words):
                    flags += ["-I" + os.path.join(corpus, "src", suite, words[i + 1]),
                              "-I" + os.path.join(os.path.dirname(tu_path), "..", words[i + 1])]
            out[(row["program"], row["base"])] = (tu_path, flags)
    return out


def extract_and_replay(r3, capture, index, base, source, workdir):
    """The kernel's unit cut from the application's own file, replayed through NVRTC: verified or
    not, and the recorded code's time over the unit's (the rebuilt original's ratio)."""
    tu, flags = source
    unit = os.path.join(workdir, f"unit-{index}.cu")
    p, _ = run([r3, "extract", os.path.basename(tu), "-k", base, "-o", unit] +
               [f for f in flags if f.startswith(("-D", "-I"))], cwd=os.path.dirname(tu))
    if p.returncode != 0:
        return {"extracted": False, "verified": False,
                "why": ([l for l in p.stderr.splitlines() if l.strip()] or ["?"])[-1]}
    defines = [x for f in flags if f.startswith("-D") for x in ("-D", f[2:])]
    build = [f for f in flags if f == "--use_fast_math"]
    p, _ = run([r3, "replay", capture, "-k", f"#{index}", "--source", unit, "--compiler", "nvrtc",
                "-n", "21"] + defines + (["--flags", " ".join(build)] if build else []))
    medians = [float(m) for m in re.findall(r"verified\s+median\s+([0-9.]+) us", p.stdout)]
    ok = p.returncode == 0 and bool(medians)
    why = "" if ok else ([l for l in (p.stdout + p.stderr).splitlines() if l.strip()] or ["?"])[-1]
    return {"extracted": True, "verified": ok, "unit_us": medians[0] if medians else None,
            "why": why}


def tune(args, capture, index, workdir, source=None):
    """Tunes one kernel: on the recorded code, or (source = (file, flags)) on its unit cut from
    the application's own file, with the source and parameter levels on too."""
    os.makedirs(workdir, exist_ok=True)
    yaml = os.path.join(workdir, "tune.yaml")
    kernel = f"  - name: '#{index}'\n"
    levels = "    source:\n      enabled: false\n    parameters:\n      enabled: false\n"
    if source:
        tu, flags = source
        kernel += f"    source: {tu}\n"
        defines = {f[2:].split("=", 1)[0]: (f[2:].split("=", 1) + ["1"])[1]
                   for f in flags if f.startswith("-D")}
        if defines:
            kernel += "    defines: {" + ", ".join(f"'{k}': '{v}'" for k, v in defines.items()) + "}\n"
        dirs = [f[2:] for f in flags if f.startswith("-I")]
        if dirs:
            kernel += "    include_dirs: [" + ", ".join(f"'{d}'" for d in dirs) + "]\n"
        if "--use_fast_math" in flags:
            kernel += "    flags: ['--use_fast_math']\n"
        levels = ""
    with open(yaml, "w") as f:
        f.write(f"""capture: {capture}
kernels:
{kernel}search:
  batch_size: 8
  levels:
{levels}    launch:
      enabled: true
budget:
  evaluations: {args.evaluations}
  wall_time: {args.wall_time}
timing:
  repeats: 20
  confirm_rounds: 3
  confirm_repeats: 30
output:
  directory: {os.path.join(workdir, 'results')}
""")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [args.mpirun, "-n", "2", "--oversubscribe", os.path.join(args.r3, "r3-mpi"), yaml]
    p, seconds = run(cmd, env=env, timeout=900)
    with open(os.path.join(workdir, "r3-mpi.log"), "w") as log:
        log.write(p.stderr)
    result = {"status": p.returncode, "seconds": seconds, "summary": "", "outcomes": {},
              "mean_candidate_s": 0.0, "speedup": None, "keep": False, "rebuilt": None,
              "diff": "-"}
    if source:
        # The winner's patch applies to the application's file, in the file's directory.
        diffs = [os.path.join(root, f) for root, _, files in
                 os.walk(os.path.join(workdir, "results")) for f in files if f == "best.diff"]
        if diffs:
            check = subprocess.run(["patch", "-p1", "--dry-run", "-i", diffs[0]],
                                   cwd=patch_directory(diffs[0], source[0]),
                                   capture_output=True, text=True)
            result["diff"] = "applies" if check.returncode == 0 else "FAILS"
            result["diff_path"] = diffs[0]
        else:
            result["diff"] = "none"
    for line in p.stderr.splitlines():
        if "kernel #" in line and ("confirmed" in line or "keep the application" in line or
                                   "single sample" in line or "no candidate" in line):
            result["summary"] = line.split("kernel ", 1)[1].strip()
    s = result["summary"]
    m = re.search(r": ([0-9.]+)x confirmed", s)
    if m:
        result["speedup"] = float(m.group(1))
    if "keep the application's code" in s:
        result["keep"] = True
        result["speedup"] = 1.0
    m = re.search(r"rebuilt original at ([0-9.]+)x", s)
    if m:
        result["rebuilt"] = float(m.group(1))
    csv_path = os.path.join(workdir, "results", "candidates.csv")
    if os.path.exists(csv_path):
        with open(csv_path) as f:
            rows = list(csv.DictReader(f))
        for r in rows:
            outcome = r["outcome"].replace(" ", "_")  # candidates.csv writes "wrong result"
            result["outcomes"][outcome] = result["outcomes"].get(outcome, 0) + 1
        costs = [float(r["evaluation_seconds"]) for r in rows if r["evaluation_seconds"]]
        if costs:
            result["mean_candidate_s"] = sum(costs) / len(costs)
    if p.returncode != 0 and not result["summary"]:
        tail = [l for l in p.stderr.splitlines() if l.strip()][-3:]
        result["summary"] = "r3-mpi exited " + str(p.returncode) + ": " + " | ".join(tail)
    return result


def read_build_commands(corpus):
    """program -> its nvcc command line as build_corpus.sh ran it (<OUTDIR> for the corpus)."""
    out = {}
    path = os.path.join(corpus, "build.tsv")
    if os.path.exists(path):
        with open(path) as f:
            header = f.readline().rstrip("\n").split("\t")
            for line in f:
                row = dict(zip(header, line.rstrip("\n").split("\t")))
                out[row["program"]] = row["nvcc_command"]
    return out


def self_check(text):
    """The program's own verdict where it prints one (PolyBench: mismatches against its CPU
    reference), else None."""
    m = re.search(r"Non-Matching CPU-GPU Outputs Beyond Error Threshold of [0-9.]+ Percent: (\d+)",
                  text)
    return int(m.group(1)) if m else None


def kernel_app_us(r3, binary, app_args, kernel_regex, launches, wd):
    """The median of the kernel's first `launches` launch times inside the application (CUPTI,
    as r3 record measures them)."""
    capture = os.path.join(wd, "timing.h5")
    if os.path.exists(capture):
        os.remove(capture)
    p, _ = run([r3, "record", "-k", kernel_regex, "--launches", str(launches), "-o", capture,
                "--", binary] + app_args, cwd=wd)
    if p.returncode != 0 or not os.path.exists(capture):
        return None
    times = sorted(t for k in inspect(r3, capture) for t in k["app_us"])
    return times[len(times) // 2] if times else None


def patch_directory(diff, source):
    """Where best.diff applies: its first line says ("# r3: apply in DIR with: ..."), else the
    source's directory."""
    with open(diff) as f:
        first = f.readline()
    prefix = "# r3: apply in "
    if first.startswith(prefix) and " with: " in first:
        return first[len(prefix):first.index(" with: ")]
    return os.path.dirname(source)


def check_patch(args, corpus, prog, source, diff, kernel, speedup, workdir):
    """The winner's best.diff applied to a copy of the program's sources, rebuilt with the
    program's own nvcc command, run: its own check (where it has one) still passes, and the
    kernel's time in the application moves as the replay said (interleaved re-recordings of the
    original and the patched program, --patch-launches launches each)."""
    r3 = os.path.join(args.r3, "r3")
    command = read_build_commands(corpus).get(prog["program"])
    if not command:
        return {"status": "no build command"}
    tree = os.path.join(workdir, "patched")
    if os.path.exists(tree):
        shutil.rmtree(tree)
    shutil.copytree(os.path.join(corpus, "src"), os.path.join(tree, "src"))
    relative = os.path.relpath(patch_directory(diff, source), os.path.join(corpus, "src"))
    p = subprocess.run(["patch", "-p1", "-i", diff], cwd=os.path.join(tree, "src", relative),
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"status": "patch FAILS: " + (p.stdout + p.stderr).strip().splitlines()[-1]}
    os.makedirs(os.path.join(tree, "bin"), exist_ok=True)
    os.makedirs(os.path.join(tree, ".work", "build", prog["program"]), exist_ok=True)
    build = shlex.split(command.replace("<OUTDIR>", tree))
    b, _ = run(build, cwd=tree, timeout=600)
    if b.returncode != 0:
        return {"status": "rebuild FAILS: " + ((b.stderr.strip().splitlines() or ["?"])[-1])}
    patched = os.path.join(tree, os.path.relpath(os.path.join(corpus, prog["binary"]), corpus))
    original = os.path.join(corpus, prog["binary"])
    app_args = shlex.split(prog.get("arguments", ""))
    runs = {}
    for label, binary in (("original", original), ("patched", patched)):
        wd = os.path.join(workdir, "run-" + label)
        os.makedirs(wd, exist_ok=True)
        r, _ = run([binary] + app_args, cwd=wd)
        runs[label] = (r.returncode, self_check(r.stdout + r.stderr))
    if runs["patched"][0] != 0:
        return {"status": f"patched program exits {runs['patched'][0]}"}
    check = runs["patched"][1]
    verdict = ("no self-check" if check is None else
               "self-check passes" if check == 0 or check == runs["original"][1] else
               f"self-check FAILS ({check} mismatches)")
    regex = re.escape(kernel)  # as the corpus's recordings select it
    times = {"original": [], "patched": []}
    for _ in range(args.patch_rounds):  # interleaved
        for label, binary in (("original", original), ("patched", patched)):
            wd = os.path.join(workdir, "run-" + label)
            t = kernel_app_us(r3, binary, app_args, regex, args.patch_launches, wd)
            if t:
                times[label].append(t)
    if not times["original"] or not times["patched"]:
        return {"status": verdict + "; the kernel's time in the program was not measured"}
    before = sorted(times["original"])[len(times["original"]) // 2]
    after = sorted(times["patched"])[len(times["patched"]) // 2]
    in_app = before / after
    # The patch carries the winner's source (its tunables at the winning values); its launch
    # shape and compiler options go in best.yaml, which the program's own build does not read.
    # What the patched program should gain is what the replay gives the patched source alone.
    predicted = source_only_speedup(args, capture_of(workdir), index_of(workdir), flags_of(workdir),
                                    os.path.dirname(diff))
    agree = predicted is not None and abs(in_app / predicted - 1) <= 0.10
    return {"status": verdict, "app_speedup": in_app, "before_us": before, "after_us": after,
            "source_only": predicted, "agrees": agree}


def tune_yaml_value(workdir, key):
    with open(os.path.join(workdir, "tune.yaml")) as f:
        for line in f:
            if line.strip().startswith(key + ":"):
                return line.split(":", 1)[1].strip().strip("'\"")
    return ""


def capture_of(workdir):
    return tune_yaml_value(workdir, "capture")


def index_of(workdir):
    return tune_yaml_value(workdir, "- name").lstrip("#")


def flags_of(workdir):
    return tune_yaml_value(workdir, "flags")


def source_only_speedup(args, capture, index, base_flags, results):
    """The recorded code's replayed time over the winner's source alone (best.yaml less the
    compiler options the search added, and less the block unless the source's sizes fix it)."""
    r3 = os.path.join(args.r3, "r3")
    best = os.path.join(results, "best.yaml")
    if not os.path.exists(best):
        return None
    with open(best) as f:
        lines = f.read().splitlines()
    source = next((l.split(":", 1)[1].strip().strip('"') for l in lines
                   if l.strip().startswith("source:")), "")
    coupled = False
    if source and os.path.exists(os.path.join(results, source)):
        with open(os.path.join(results, source)) as f:
            coupled = "R3_LAUNCH_BLOCK(" in f.read()
    kept = []
    for line in lines:
        key = line.strip().split(":", 1)[0]
        if key == "flags" or (key in ("block", "grid") and not coupled):
            continue
        kept.append(line)
        if key == "source" and base_flags:
            kept.append("    flags: " + base_flags)
    alone = os.path.join(results, "source-only.yaml")
    with open(alone, "w") as f:
        f.write("\n".join(kept) + "\n")
    medians = {}
    for _ in range(2):  # interleaved
        for label, cmd in (("recorded", [r3, "replay", capture, "-k", f"#{index}", "-n", "21"]),
                           ("source", [r3, "replay", "--config", alone, "-n", "21"])):
            p, _ = run(cmd, cwd=results)
            m = re.findall(r"verified\s+median\s+([0-9.]+) us", p.stdout)
            if p.returncode != 0 or not m:
                return None
            medians.setdefault(label, []).append(float(m[0]))
    return min(medians["recorded"]) / min(medians["source"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="OUTDIR of build_corpus.sh")
    ap.add_argument("--r3", required=True, help="directory holding r3 and r3-mpi")
    ap.add_argument("--out", default="realapps-out", help="captures and tuning runs go here")
    ap.add_argument("--only", default="", help="comma-separated program names")
    ap.add_argument("--evaluations", type=int, default=32, help="budget.evaluations per kernel")
    ap.add_argument("--wall-time", default="40s", help="budget.wall_time per kernel")
    ap.add_argument("--tune", default="longest", choices=["all", "longest", "none"],
                    help="which recorded kernels to tune")
    ap.add_argument("--launches", type=int, default=1, help="r3 record --launches")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--tune-source", action="store_true",
                    help="tune on the kernels' units cut from the applications' own files (source "
                         "and parameter levels on), and check that each best.diff applies")
    ap.add_argument("--patch-launches", type=int, default=5,
                    help="with --tune-source: launches of the kernel timed in the original and in "
                         "the patched program when a winner's best.diff is checked")
    ap.add_argument("--patch-rounds", type=int, default=1,
                    help="interleaved rounds of those re-recordings (the median is compared)")
    ap.add_argument("--extract", action="store_true",
                    help="also cut each kernel's unit from the application's own file (r3 extract) "
                         "and replay it through NVRTC against the recording")
    args = ap.parse_args()
    corpus = os.path.abspath(args.corpus)
    out = os.path.abspath(args.out)
    r3 = os.path.join(os.path.abspath(args.r3), "r3")
    args.r3 = os.path.abspath(args.r3)
    os.makedirs(out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    sources = read_kernels_tsv(corpus) if args.extract or args.tune_source else {}
    rows = []
    for prog in read_manifest(corpus):
        name = prog["program"]
        if only and name not in only:
            continue
        binary = os.path.join(corpus, prog["binary"])
        app_args = shlex.split(prog.get("arguments", ""))
        wd = os.path.join(out, name)
        os.makedirs(wd, exist_ok=True)
        plain, plain_s = run([binary] + app_args, cwd=wd)
        regex = "|".join(re.escape(k) for k in prog["kernels"].split(",") if k)
        capture = os.path.join(wd, name + ".h5")
        rec, rec_s = run([r3, "record", "-k", regex, "--launches", str(args.launches), "-o", capture,
                          "--", binary] + app_args, cwd=wd)
        print(f"# {name}: plain run {plain_s:.2f} s (exit {plain.returncode}), recorded in "
              f"{rec_s:.2f} s (exit {rec.returncode})", file=sys.stderr, flush=True)
        if rec.returncode != 0:
            print("\n".join(f"#   {l}" for l in rec.stderr.strip().splitlines()[-6:]),
                  file=sys.stderr, flush=True)
        kernels = inspect(r3, capture) if rec.returncode == 0 and os.path.exists(capture) else []
        unnamed = unnamed_regions(r3, capture) if kernels else 0
        if unnamed:
            print(f"# {name}: {unnamed} unnamed region(s) in the capture", file=sys.stderr)
        expected = [k for k in prog["kernels"].split(",") if k]
        seen = {base_name(k) for k in kernels}
        for missing in [k for k in expected if k not in seen]:
            rows.append({"program": name, "kernel": missing, "recorded": False})
        longest = None
        for k in kernels:
            k["verified"], k["medians"], k["why"] = replay(r3, capture, k["index"])
            if k["app_us"] and (longest is None or max(k["app_us"]) > max(longest["app_us"])):
                longest = k
        for k in kernels:
            row = {"program": name, "kernel": base_name(k), "recorded": True, "unnamed": unnamed,
                   "verified": k["verified"], "why": k["why"], "app_s": plain_s,
                   "app_us": k["app_us"][0] if k["app_us"] else None,
                   "replay_us": k["medians"][0] if k["medians"] else None}
            if row["app_us"] and row["replay_us"]:
                row["fidelity"] = row["replay_us"] / row["app_us"]
            if args.extract and (name, base_name(k)) in sources:
                row["unit"] = extract_and_replay(r3, capture, k["index"], base_name(k),
                                                 sources[(name, base_name(k))], wd)
            if k["verified"] and (args.tune == "all" or (args.tune == "longest" and k is longest)):
                source = sources.get((name, base_name(k))) if args.tune_source else None
                tune_dir = os.path.join(wd, f"tune-{k['index']}")
                row["tune"] = tune(args, capture, k["index"], tune_dir, source)
                t = row["tune"]
                if source and t.get("diff") == "applies" and t["speedup"] and not t["keep"]:
                    t["patch"] = check_patch(args, corpus, prog, source[0], t["diff_path"],
                                             base_name(k), t["speedup"], tune_dir)
                    print(f"# {name} {row['kernel']}: patched program: {t['patch']}",
                          file=sys.stderr, flush=True)
                print(f"# {name} {row['kernel']}: {row['tune']['summary']}", file=sys.stderr,
                      flush=True)
            rows.append(row)
    print_table(rows)


def print_table(rows):
    print(f"{'program':<15} {'kernel':<28} {'rec':>3} {'verif':>5} {'app us':>9} {'replay us':>9} "
          f"{'fidelity':>8} {'speedup':>8} {'rebuilt':>7} {'unit':>5} {'rec/unit':>8}  candidates (ok/wrong/launch/compile/"
          f"timeout/crash)  app run s / candidate s")
    speedups = []
    for r in rows:
        t = r.get("tune")
        fid = f"{r['fidelity']:.3f}" if r.get("fidelity") else "-"
        app_us = f"{r['app_us']:.1f}" if r.get("app_us") else "-"
        rep_us = f"{r['replay_us']:.1f}" if r.get("replay_us") else "-"
        if t:
            sp = "keep" if t["keep"] else (f"{t['speedup']:.3f}" if t["speedup"] else "?")
            if t["speedup"]:
                speedups.append(t["speedup"])
            rb = f"{t['rebuilt']:.3f}" if t["rebuilt"] else "-"
            o = t["outcomes"]
            cand = "/".join(str(o.get(c, 0)) for c in
                            ["ok", "wrong_result", "launch_error", "compile_error", "timeout",
                             "crash"])
            cost = (f"{r['app_s']:.2f} / {t['mean_candidate_s']:.3f}"
                    if t["mean_candidate_s"] else "-")
            if t.get("diff", "-") != "-":
                cost += f"  best.diff {t['diff']}"
            pt = t.get("patch")
            if pt:
                cost += f"; patched program: {pt['status']}"
                if pt.get("app_speedup"):
                    alone = pt.get("source_only")
                    cost += (f", kernel {pt['before_us']:.1f} -> {pt['after_us']:.1f} us in the "
                             f"program = {pt['app_speedup']:.3f}x vs replay of the patched source "
                             f"{alone:.3f}x" if alone else "?")
                    cost += f" ({'within' if pt['agrees'] else 'NOT within'} 10%)"
        else:
            sp, rb, cand, cost = "-", "-", "-", "-"
        u = r.get("unit")
        unit = "-" if not u else ("yes" if u["verified"] else ("NO" if u["extracted"] else "noext"))
        ratio = (f"{r['replay_us'] / u['unit_us']:.3f}"
                 if u and u.get("unit_us") and r.get("replay_us") else "-")
        print(f"{r['program']:<15} {r['kernel'][:28]:<28} {'yes' if r['recorded'] else 'NO':>3} "
              f"{('yes' if r.get('verified') else 'NO') if r['recorded'] else '-':>5} {app_us:>9} "
              f"{rep_us:>9} {fid:>8} {sp:>8} {rb:>7} {unit:>5} {ratio:>8}  {cand:<33}  {cost}")
        if u and not u["verified"]:
            print(f"{'':<15}   unit: {u['why']}")
        if r["recorded"] and not r.get("verified"):
            print(f"{'':<15}   not verified: {r.get('why', '')}")
    recorded = sum(1 for r in rows if r["recorded"])
    units = [r["unit"] for r in rows if r.get("unit")]
    if units:
        print(f"# units cut from the application's own files: {sum(1 for u in units if u['extracted'])}"
              f" extracted, {sum(1 for u in units if u['verified'])} replayed verified through NVRTC,"
              f" of {len(units)}")
    unnamed = sum(r.get("unnamed", 0) for r in {r["program"]: r for r in rows}.values())
    verified = sum(1 for r in rows if r.get("verified"))
    slower = sum(1 for s in speedups if s < 1.0)
    geo = 1.0
    for s in speedups:
        geo *= s
    geo = geo ** (1 / len(speedups)) if speedups else float("nan")
    print(f"# kernels: {len(rows)}, recorded {recorded}, replayed verified {verified}, unnamed "
          f"regions {unnamed}; tuned "
          f"{len(speedups)}: geometric mean speedup {geo:.3f}, results slower than the recorded "
          f"code: {slower}, confirmed faster: {sum(1 for s in speedups if s > 1.0)}")
    patches = [r["tune"]["patch"] for r in rows if r.get("tune") and r["tune"].get("patch")]
    if patches:
        print(f"# winners' best.diff applied, rebuilt and run: {len(patches)}; kernel time in the "
              f"program within 10% of the replay's speedup: "
              f"{sum(1 for p in patches if p.get('agrees'))}")


if __name__ == "__main__":
    main()
