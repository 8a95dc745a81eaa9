#!/usr/bin/env python3
"""bench/app_speedup: what a replay-confirmed speedup gives the unmodified application under `r3 apply`.

For each CUDA example (cuda_heat, cuda_cg, cuda_fields; or those named), and with --corpus for
each program of the real-program corpus (bench/realapps/build_corpus.sh; --only to choose):
  1. it is recorded (`r3 record`) and its kernel tuned (`mpirun -n 2 r3-mpi`, a small budget, the
     winner confirmation on): an example with its tune-*.yaml, unless --results DIR holds a run; a
     corpus program's longest kernel on its recorded code (compiler and launch levels, as
     bench/realapps/realapps.py tunes it);
  2. interleaved over --rounds rounds, the application runs plain, under `r3 apply --original`
     (nothing substituted, the tuned kernel timed on the GPU by the apply library through CUPTI)
     and under `r3 apply` (the winner substituted and timed the same way);
and prints per kernel: the replay-confirmed speedup from the result, the kernel's summed GPU time
inside the application, original and winner (medians over the rounds) and their ratio, that ratio
over the confirmed one, and the application's wall time plain, under --original and applied (its
own run, as `r3 apply` reports it) with the end-to-end ratio original/applied. Every figure comes
from this one run.

With --kokkos DIR (the examples examples/kokkos/build_kokkos.sh builds: a Kokkos for CUDA with
its tuning interface) two Kokkos kernels too, the heat example's MDRange stencil and the policies
example's TeamPolicy matvec (Kokkos::AUTO team size and vector length): each recorded by its label
(`r3 record --kokkos -k LABEL`), tuned the same way (its tile or team shape: the launch level),
then run under `r3 apply --original` (the connector loaded without the result) and `r3 apply` (the tuned tile
through the application's own tuning variables; the tuned team through Kokkos' team-size tuner,
--kokkos-tune-internals), interleaved; its GPU column is the application's own fenced time of
the label's launches, as it prints it.

Usage:
  app_speedup.py --build BUILD [--out DIR] [--rounds 5] [--evaluations 80] [--wall-time 2m]
                 [--mpirun mpirun] [--corpus DIR [--only a,b]] [--kokkos DIR]
                 [heat] [cg] [fields]
"""
import argparse
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (kernel, record arguments of the application, arguments of the measured runs)
EXAMPLES = {
    "heat": ("heat_step", ["4096", "20"], ["4096", "200"]),
    "cg": ("csr_spmv", ["1024", "50"], ["1024", "400"]),
    "fields": ("compute_flux", ["4194304", "5"], ["4194304", "60"]),
}


def run(cmd, timeout=1800, env=None, cwd=None):
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    return p, time.monotonic() - start


def tune_yaml(example, capture, results, evaluations, wall_time):
    """The example's tune-*.yaml with absolute paths, a small budget and its own output."""
    lines = []
    with open(os.path.join(SOURCE, "examples", "cuda", f"tune-{example}.yaml")) as f:
        section = None
        for line in f:
            if re.match(r"^\S", line):
                section = line.split(":")[0]
            if line.startswith("capture:"):
                line = f"capture: {capture}\n"
            elif re.match(r"^\s+source:\s*\S+\.cuh", line):
                name = line.split(":", 1)[1].strip()
                line = line.split("source:")[0] + f"source: {SOURCE}/examples/cuda/{name}\n"
            elif section in ("budget", "output"):
                continue  # replaced below
            if line.startswith(("budget:", "output:")):
                continue
            lines.append(line)
    lines.append(f"budget:\n  evaluations: {evaluations}\n  wall_time: {wall_time}\n")
    lines.append(f"output:\n  directory: {results}\n")
    return "".join(lines)


def record_and_tune(args, example, kernel, record_args, workdir):
    os.makedirs(workdir, exist_ok=True)
    app = os.path.join(args.build, "examples", f"cuda_{example}")
    capture = os.path.join(workdir, f"{example}.h5")
    p, _ = run([os.path.join(args.build, "bin", "r3"), "record", "-k", kernel, "--launches", "2",
                "-o", capture, "--", app] + record_args)
    if p.returncode != 0:
        sys.exit(f"app_speedup: recording {example} failed:\n{p.stderr}")
    results = os.path.join(workdir, "results")
    shutil.rmtree(results, ignore_errors=True)  # never an earlier run's result
    yaml = os.path.join(workdir, "tune.yaml")
    with open(yaml, "w") as f:
        f.write(tune_yaml(example, capture, results, args.evaluations, args.wall_time))
    return results, tune(args, yaml, example, workdir)


def tune(args, yaml, what, workdir):
    """`mpirun -n 2 r3-mpi YAML`, its log in WORKDIR/r3-mpi.log; its wall time."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p, seconds = run([args.mpirun, "-n", "2", "--oversubscribe",
                      os.path.join(args.build, "bin", "r3-mpi"), yaml], env=env)
    with open(os.path.join(workdir, "r3-mpi.log"), "w") as log:
        log.write(p.stderr)
    if p.returncode != 0:
        sys.exit(f"app_speedup: tuning {what} failed (see {workdir}/r3-mpi.log)")
    return seconds


def confirmed(results):
    for root, _, files in os.walk(results):
        if "best.yaml" in files:
            text = open(os.path.join(root, "best.yaml")).read()
            if "# keep the application's code" in text:
                return 1.0, "keep"
            m = re.search(r"# confirmed speedup ([0-9.]+)x", text)
            return (float(m.group(1)), "confirmed") if m else (None, "single sample")
    return None, "no result"


def applied_run(args, results, app, app_args, original, cwd=None):
    cmd = [os.path.join(args.build, "bin", "r3"), "apply", results]
    if original:
        cmd.append("--original")
    p, _ = run(cmd + ["--", app] + app_args, cwd=cwd)
    if p.returncode != 0:
        sys.exit(f"app_speedup: {' '.join(cmd)} failed:\n{p.stderr}")
    gpu = re.search(r"GPU time ([0-9.]+) ms over (\d+) launch", p.stderr)
    wall = re.search(r"the application ran for ([0-9.]+) s", p.stderr)
    ran = re.search(r"(\d+) launch\(es\) ran the winner", p.stderr)
    if not original and (not ran or ran.group(1) == "0"):
        sys.exit(f"app_speedup: the winner never ran:\n{p.stderr}")
    # The winner's code: the image its run kept (best.code), or compiled by r3 apply.
    code = "stored" if "as it was confirmed" in p.stderr else "compiled"
    return (float(gpu.group(1)) if gpu else float("nan"),
            float(wall.group(1)) if wall else float("nan"), p.stdout, code)


def interleaved_row(args, name, kernel, results, tune_s, plain, original, applied, result_lines):
    """One row from --rounds interleaved runs of the three ways to run the application: plain(),
    original() and applied() each return (GPU ms, wall s, stdout, what code ran);
    result_lines(stdout) is the output without the lines that differ from run to run."""
    speedup, how = confirmed(results)
    if how in ("keep", "no result"):  # nothing to apply: r3 apply would run it as it is
        return [name, kernel, "-", how] + ["-"] * 10 + [f"{tune_s:.0f}"]
    runs = {"plain": [], "original": [], "applied": []}
    for _ in range(args.rounds):  # interleaved: plain, original, applied
        for key, one in (("plain", plain), ("original", original), ("applied", applied)):
            runs[key].append(one())
    outputs = {result_lines(r[2]) for r in runs["original"] + runs["applied"]}
    same_output = "no output" if "" in outputs else ("same" if len(outputs) == 1 else "DIFFERS")
    med = statistics.median
    gpu_o, gpu_a = (med(r[0] for r in runs[k]) for k in ("original", "applied"))
    wall_o, wall_a = (med(r[1] for r in runs[k]) for k in ("original", "applied"))
    return [name, kernel, f"{speedup:.3f}" if speedup else "-", how, runs["applied"][0][3],
            f"{gpu_o:.3f}", f"{gpu_a:.3f}", f"{gpu_o / gpu_a:.3f}",
            f"{gpu_o / gpu_a / speedup:.3f}" if speedup else "-",
            f"{med(r[1] for r in runs['plain']):.3f}", f"{wall_o:.3f}", f"{wall_a:.3f}",
            f"{wall_o / wall_a:.3f}", same_output, f"{tune_s:.0f}"]


def measure(args, name, kernel, results, app, app_args, tune_s, cwd=None):
    """One row of a CUDA application: plain, under `r3 apply --original` and applied."""
    # The output without the lines that report times (which differ from run to run): those that
    # name a time or a unit of it, and bare numbers (PolyBench prints its timings on a line of
    # their own).
    def result_lines(out):
        return "\n".join(l for l in out.splitlines()
                         if not re.search(r"time|elapsed|[0-9] ?m?s\b", l, re.I)
                         and not re.fullmatch(r"\s*[-+0-9.eE]+\s*", l))
    return interleaved_row(
        args, name, kernel, results, tune_s,
        plain=lambda: (float("nan"), run([app] + app_args, cwd=cwd)[1], "", ""),
        original=lambda: applied_run(args, results, app, app_args, True, cwd),
        applied=lambda: applied_run(args, results, app, app_args, False, cwd),
        result_lines=result_lines)


def corpus_rows(args):
    """The corpus programs: record, tune the longest kernel, measure (bench/realapps' steps)."""
    sys.path.insert(0, os.path.join(SOURCE, "bench", "realapps"))
    import realapps  # noqa: E402  (its record, inspect and tune steps)
    corpus = os.path.abspath(args.corpus)
    r3 = os.path.join(args.build, "bin", "r3")
    tune_args = argparse.Namespace(r3=os.path.join(args.build, "bin"), mpirun=args.mpirun,
                                   evaluations=args.evaluations, wall_time=args.wall_time)
    only = set(filter(None, args.only.split(",")))
    rows = []
    for prog in realapps.read_manifest(corpus):
        name = prog["program"]
        if only and name not in only:
            continue
        binary = os.path.join(corpus, prog["binary"])
        app_args = shlex.split(prog.get("arguments", ""))
        wd = os.path.abspath(os.path.join(args.out, "corpus", name))
        os.makedirs(wd, exist_ok=True)
        regex = "|".join(re.escape(k) for k in prog["kernels"].split(",") if k)
        capture = os.path.join(wd, name + ".h5")
        rec, _ = run([r3, "record", "-k", regex, "--launches", "1", "-o", capture, "--", binary]
                     + app_args, cwd=wd)
        kernels = realapps.inspect(r3, capture) if rec.returncode == 0 else []
        timed = [k for k in kernels if k["app_us"]]
        if not timed:
            rows.append([name, "-", "-", "not recorded"] + ["-"] * 11)
            continue
        longest = max(timed, key=lambda k: max(k["app_us"]))
        start = time.monotonic()
        shutil.rmtree(os.path.join(wd, "tune"), ignore_errors=True)  # never an earlier run's result
        realapps.tune(tune_args, capture, longest["index"], os.path.join(wd, "tune"))
        rows.append(measure(args, name, realapps.base_name(longest),
                            os.path.join(wd, "tune", "results"), binary, app_args,
                            time.monotonic() - start, cwd=wd))
    return rows


# The Kokkos examples: (program, label, recorded arguments, measured arguments, the line with
# the application's own fenced time of the label's launches, r3 apply's extra arguments).
# heat::step is an MDRange stencil whose tile the application asks the tool for through its own
# tuning variables; policies::matvec a TeamPolicy with Kokkos::AUTO team size and vector length,
# which Kokkos' own team-size tuner hands the tool (--kokkos-tune-internals).
# The last field: the lines of the output that must be the same (the label's results; under
# --kokkos-tune-internals Kokkos also hands the tool policies.cpp's MDRange kernels, whose
# reductions Kokkos 4.6 gets wrong once a tool sets their tile: recorder/kokkos/connector.cpp).
KOKKOS_EXAMPLES = [
    ("kokkos_heat", "heat::step", ["4096", "4"], ["4096", "200"],
     r"heat::step: \d+ steps in ([0-9.]+) ms", [], r"^heat after"),
    ("kokkos_policies", "policies::matvec", ["96", "3"], ["96", "200"],
     r"policies::matvec: \d+ launches in ([0-9.]+) ms", ["--kokkos-tune-internals"],
     r"^policies::matvec on"),
]


def kokkos_rows(args):
    """The Kokkos examples: record by label, tune what Kokkos can be given (the launch level),
    measure through Kokkos' tuning interface (the connector without values, then r3 apply),
    interleaved."""
    r3 = os.path.join(args.build, "bin", "r3")
    rows = []
    for program, label, recorded, measured, time_line, apply_args, same in KOKKOS_EXAMPLES:
        app = os.path.join(os.path.abspath(args.kokkos), program)
        wd = os.path.abspath(os.path.join(args.out, "kokkos", program))
        os.makedirs(wd, exist_ok=True)
        capture = os.path.join(wd, program + ".h5")
        p, _ = run([r3, "record", "--kokkos", "-k", label, "--launches", "1", "-o", capture,
                    "--", app] + recorded)
        if p.returncode != 0:
            sys.exit(f"app_speedup: recording {program} failed:\n{p.stderr}")
        results = os.path.join(wd, "results")
        shutil.rmtree(results, ignore_errors=True)
        yaml = os.path.join(wd, "tune.yaml")
        with open(yaml, "w") as f:
            f.write(f'capture: {capture}\nbackend: cuda\nkernels:\n  - name: "{label}"\n'
                    f"budget:\n  evaluations: {args.evaluations}\n  wall_time: {args.wall_time}\n"
                    f"output:\n  directory: {results}\n")
        tune_s = tune(args, yaml, f"the Kokkos example {program}", wd)

        def one(cmd, env=None, time_line=time_line):
            p, seconds = run(cmd, env=env)
            if p.returncode != 0:
                sys.exit(f"app_speedup: {' '.join(cmd)} failed:\n{p.stderr}")
            own = re.search(time_line, p.stdout)
            # Under r3 apply: the application's own run, without r3 apply's preparations.
            ran = re.search(r"the application ran for ([0-9.]+) s", p.stderr)
            return (float(own.group(1)) if own else float("nan"),
                    float(ran.group(1)) if ran else seconds, p.stdout, "-")

        rows.append(interleaved_row(
            args, program, label, results, tune_s,
            plain=lambda app=app: one([app] + measured),
            original=lambda app=app, results=results:
                one([r3, "apply", "--original", results, "--", app] + measured),
            applied=lambda app=app, results=results, apply_args=apply_args:
                one([r3, "apply", results, "--", app] + measured + apply_args),
            result_lines=lambda o, same=same: "\n".join(l for l in o.splitlines()
                                                        if re.search(same, l))))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build directory (bin/r3, examples/)")
    ap.add_argument("--out", default="app-speedup-out", help="captures and tuning runs go here")
    ap.add_argument("--results", default="", help="reuse the runs of an earlier --out")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--evaluations", type=int, default=80)
    ap.add_argument("--wall-time", default="2m")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--corpus", default="", help="OUTDIR of bench/realapps/build_corpus.sh")
    ap.add_argument("--only", default="", help="corpus programs (comma-separated)")
    ap.add_argument("--kokkos", default="",
                    help="OUTDIR/examples of examples/kokkos/build_kokkos.sh: the Kokkos rows")
    ap.add_argument("examples", nargs="*", default=None,
                    help="CUDA examples (default: all, or none with --corpus)")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    if args.examples is None or args.examples == []:
        args.examples = [] if args.corpus or args.kokkos else list(EXAMPLES)
    rows = []
    for example in args.examples:
        kernel, record_args, app_args = EXAMPLES[example]
        workdir = os.path.abspath(os.path.join(args.results or args.out, example))
        if args.results:
            results, tune_s = os.path.join(workdir, "results"), 0.0
        else:
            results, tune_s = record_and_tune(args, example, kernel, record_args, workdir)
        app = os.path.join(args.build, "examples", f"cuda_{example}")
        rows.append(measure(args, example, kernel, results, app, app_args, tune_s))
    if args.corpus:
        rows += corpus_rows(args)
    if args.kokkos:
        rows += kokkos_rows(args)
    header = ["example", "kernel", "confirmed", "result", "code", "gpu_ms_original", "gpu_ms_applied",
              "gpu_ratio", "ratio/confirmed", "wall_s_plain", "wall_s_original", "wall_s_applied",
              "end_to_end", "output", "tune_s"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print(f"# medians over {args.rounds} interleaved rounds; GPU times: the tuned kernel's "
          "launches summed (CUPTI; the Kokkos examples: their own fenced time of the label's "
          "launches), "
          "wall times: the application's own run")
    for r in [header] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))


if __name__ == "__main__":
    main()
