#!/usr/bin/env python3
"""reliability: r3 as a hostile user and a hostile machine treat it, in one run (host backend).

Classes, each a number of cases run against the real binaries:
  tune-yaml    malformed tune files: keys dropped, values of the wrong type or out of range,
               random byte damage, special files (FIFO, /dev/zero, a directory, an empty file,
               two YAML documents) -- r3-mpi --dry-run
  capture      the demo capture with bytes flipped, spans zeroed/copied/deleted, truncated --
               r3 inspect --verify and r3 replay
  run-db       a finished run.h5 damaged the same way -- r3 inspect and r3 report
  kill-resume  a tuning job killed with SIGKILL at a random moment, then resumed
  disk-full    a job whose output directory is a small tmpfs (needs root), then resumed with room
  two-jobs     a second job started on the same run database while the first runs
  signals      SIGUSR1 to mpirun, SIGTERM and SIGINT to the ranks; then resumed

Per class it prints: cases, clean errors (non-zero exit with an `r3: error` message naming
what is wrong), crashes (a signal), hangs (past the time limit) and data lost (committed
candidates missing or changed after a resume; a first job's work gone). Exit status 1 when any
crash, hang or loss was seen.

Usage: reliability.py --build BUILD_DIR [--cases N] [--kills N] [--seed S] [--keep DIR]
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


class Tally:
    def __init__(self, name):
        self.name, self.cases, self.clean, self.ok, self.crashes, self.hangs, self.lost = name, 0, 0, 0, 0, 0, 0
        self.notes = []

    def result(self, rc, err, timed_out, expect_error=True, what=""):
        """Counts one process outcome; returns True when it was clean."""
        self.cases += 1
        if timed_out:
            self.hangs += 1
            self.notes.append("hang: " + what)
            return False
        if rc is not None and (rc < 0 or rc >= 128):
            self.crashes += 1
            self.notes.append(f"crash (status {rc}): {what}")
            return False
        if rc == 0:
            self.ok += 1
            if expect_error is True and what:
                self.notes.append("accepted: " + what)
            return True
        if "error" in err:
            self.clean += 1
            if expect_error is False:
                self.notes.append(f"failed ({what}): " + err.strip().splitlines()[-1][:300])
            return True
        self.notes.append(f"exit {rc} without an error message: {what}")
        return False


def run(argv, timeout=60, env=None, cwd=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
                           errors="replace")
        return p.returncode, p.stdout, p.stderr, False
    except subprocess.TimeoutExpired:
        return None, "", "", True


def damage(data, rng):
    d = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0:
        for _ in range(rng.randint(1, 4)):
            p = rng.randrange(len(d))
            d[p] ^= rng.randint(1, 255)
    elif kind == 1:
        d = d[: rng.randrange(len(d))]
    elif kind == 2:
        p = rng.randrange(len(d))
        d[p:p + rng.randint(1, 512)] = bytes(min(len(d) - p, 512))[: len(d[p:p + 512])]
    elif kind == 3:
        p, q, n = rng.randrange(len(d)), rng.randrange(len(d)), rng.randint(1, 64)
        chunk = data[q:q + n]
        d[p:p + len(chunk)] = chunk
    else:
        p = rng.randrange(len(d))
        del d[p:p + rng.randint(1, 64)]
    return bytes(d)


GOOD_TUNE = """capture: demo.h5
kernels:
  - name: stencil2d
search:
  batch_size: 4
budget:
  evaluations: {evaluations}
timing:
  repeats: 5
"""

BAD_VALUES = [
    ("budget:\n  evaluations: -3\n", "negative count"), ("budget:\n  evaluations: many\n", "text for a number"),
    ("timing:\n  repeats: 0\n", "zero repeats"), ("timing:\n  repeets: 5\n", "misspelt key"),
    ("search:\n  batch_size: [1, 2]\n", "list for a number"), ("search:\n  levels:\n    launch:\n      block_x: []\n", "empty list"),
    ("search:\n  levels:\n    compiler:\n      passes:\n        baseline: \"default<O9>\"\n", "bad pipeline"),
    ("kernels:\n  - name: nothing\n", "unknown kernel (second kernels key)"), ("capture: [a, b]\n", "list for a path"),
    ("budget:\n  wall_time: 3 fortnights\n", "bad duration"), ("output:\n  directory: /proc/self\n", "unwritable output"),
    ("llm:\n  endpoint: 17\n", "number for an URL"), ("verify:\n  regions:\n    out: {rtol: -1}\n", "negative tolerance"),
]


def tune_yaml_class(r3_mpi, work, rng, cases):
    t = Tally("tune-yaml")
    good = GOOD_TUNE.format(evaluations=8)
    special = []
    fifo = os.path.join(work, "fifo.yaml")
    os.mkfifo(fifo)
    special += [fifo, "/dev/zero", work, os.path.join(work, "empty.yaml")]
    open(os.path.join(work, "empty.yaml"), "w").close()
    with open(os.path.join(work, "twodocs.yaml"), "w") as f:
        f.write(good + "---\nbudget:\n  evaluations: 3\n")
    special.append(os.path.join(work, "twodocs.yaml"))
    for path in special:
        rc, _, err, to = run([r3_mpi, path, "--dry-run"], timeout=30, cwd=work)
        t.result(rc, err, to, what=path)
    for text, what in BAD_VALUES:
        path = os.path.join(work, "bad.yaml")
        with open(path, "w") as f:
            f.write(good + text)
        rc, _, err, to = run([r3_mpi, path, "--dry-run"], timeout=60, cwd=work)
        t.result(rc, err, to, what=what)
    for i in range(cases):
        path = os.path.join(work, "bad.yaml")
        with open(path, "wb") as f:
            f.write(damage(good.encode(), rng))
        rc, _, err, to = run([r3_mpi, path, "--dry-run"], timeout=60, cwd=work)
        t.result(rc, err, to, expect_error=None, what=f"damaged tune file {i}")
    return t


def file_fuzz_class(name, original, commands, rng, cases, work):
    t = Tally(name)
    with open(original, "rb") as f:
        data = f.read()
    path = os.path.join(work, "damaged.h5")
    for i in range(cases):
        with open(path, "wb") as f:
            f.write(damage(data, rng))
        for command in commands:
            rc, _, err, to = run([a.replace("@", path) for a in command], timeout=60, cwd=work)
            t.result(rc, err, to, expect_error=None, what=f"{' '.join(command[1:2])} on damaged input {i}")
    return t


def mpirun(r3_mpi, tune, extra=(), n=3):
    return ["mpirun", "-n", str(n), "--oversubscribe", r3_mpi, tune, *extra]


def read_candidates(r3, database):
    """The committed candidates as rows of candidates.csv, via r3 report (None: unreadable)."""
    out = tempfile.mkdtemp(prefix="r3-rel-report-")
    try:
        rc, _, _, _ = run([r3, "report", database, "-o", out], timeout=120)
        if rc != 0:
            return None
        with open(os.path.join(out, "candidates.csv")) as f:
            rows = f.read().splitlines()[1:]
        # run_seconds and the evaluator differ in nothing a resume may change; keep the rows whole.
        return rows
    finally:
        shutil.rmtree(out, ignore_errors=True)


def started(log, pattern, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(log) as f:
                if re.search(pattern, f.read()):
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    return False


def job_dir(base, demo, evaluations):
    d = tempfile.mkdtemp(prefix="r3-rel-job-", dir=base)
    shutil.copy(demo, os.path.join(d, "demo.h5"))
    with open(os.path.join(d, "tune.yaml"), "w") as f:
        f.write(GOOD_TUNE.format(evaluations=evaluations))
    return d


def kill_resume_class(r3, r3_mpi, demo, work, rng, kills):
    t = Tally("kill-resume")
    for i in range(kills):
        d = job_dir(work, demo, 40)
        tune, log = os.path.join(d, "tune.yaml"), os.path.join(d, "job.log")
        with open(log, "w") as out:
            p = subprocess.Popen(mpirun(r3_mpi, tune), stdout=out, stderr=subprocess.STDOUT, env=MPI_ENV,
                                 start_new_session=True)
            started(log, r"generation 0: evaluating")
            time.sleep(rng.uniform(0.0, 4.0))
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            # Every rank, wherever mpirun put it, is gone before the resume starts (a rank still
            # committing would be refused by the lock, as it should be, and count as a failure).
            subprocess.run(["pkill", "-9", "-f", tune])
            for _ in range(600):
                if subprocess.run(["pgrep", "-f", tune], capture_output=True).returncode != 0:
                    break
                time.sleep(0.05)
        database = os.path.join(d, "r3-results", "run.h5")
        before = read_candidates(r3, database) if os.path.exists(database) else []
        rc, _, err, to = run(mpirun(r3_mpi, tune, ["--resume"] if os.path.exists(database) else []),
                             timeout=300, env=MPI_ENV)
        t.result(rc, err, to, expect_error=False, what=f"resume after kill {i}")
        after = read_candidates(r3, database)
        if before is None or after is None or after[:len(before)] != before:
            t.lost += 1
            t.notes.append(f"kill {i}: committed candidates changed or unreadable after the resume")
        shutil.rmtree(d, ignore_errors=True)
    return t


def disk_full_class(r3, r3_mpi, demo, work):
    t = Tally("disk-full")
    if os.geteuid() != 0:
        t.notes.append("skipped: mounting a tmpfs needs root")
        return t
    for size in ["64k", "130k", "200k"]:
        d = job_dir(work, demo, 40)
        full = os.path.join(d, "full")
        os.mkdir(full)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", full]).returncode != 0:
            t.notes.append("skipped: cannot mount a tmpfs")
            return t
        try:
            tune = os.path.join(d, "tune.yaml")
            with open(tune, "a") as f:
                f.write(f"output:\n  directory: {full}/out\n")
            rc, _, err, to = run(mpirun(r3_mpi, tune), timeout=300, env=MPI_ENV)
            t.result(rc, err, to, expect_error=None, what=f"disk of {size}")
            database = os.path.join(full, "out", "run.h5")
            before = read_candidates(r3, database) if os.path.exists(database) else []
            subprocess.run(["mount", "-o", "remount,size=64m", full])
            if rc != 0:
                rc2, _, err2, to2 = run(mpirun(r3_mpi, tune, ["--resume"] if os.path.exists(database) else []),
                                        timeout=300, env=MPI_ENV)
                t.result(rc2, err2, to2, expect_error=False, what=f"resume after the disk of {size} was full")
            after = read_candidates(r3, database)
            if before is None or after is None or after[:len(before)] != before:
                t.lost += 1
                t.notes.append(f"disk of {size}: committed candidates lost")
        finally:
            subprocess.run(["umount", full])
            shutil.rmtree(d, ignore_errors=True)
    return t


def two_jobs_class(r3, r3_mpi, demo, work):
    t = Tally("two-jobs")
    d = job_dir(work, demo, 24)
    tune, log = os.path.join(d, "tune.yaml"), os.path.join(d, "first.log")
    with open(log, "w") as out:
        first = subprocess.Popen(mpirun(r3_mpi, tune), stdout=out, stderr=subprocess.STDOUT, env=MPI_ENV)
        started(log, r"generation 1: evaluating")
        for extra in ([], ["--resume"]):
            rc, _, err, to = run(mpirun(r3_mpi, tune, extra), timeout=120, env=MPI_ENV)
            if rc == 0:
                t.cases += 1
                t.lost += 1
                t.notes.append("a second job ran on the same run database")
            else:
                t.result(rc, err, to, what="second job " + " ".join(extra))
        first.wait()
    t.result(first.returncode, "", False, expect_error=False, what="first job")
    rows = read_candidates(r3, os.path.join(d, "r3-results", "run.h5"))
    if rows is None or len(rows) < 24:
        t.lost += 1
        t.notes.append("the first job's candidates are not all in run.h5")
    shutil.rmtree(d, ignore_errors=True)
    return t


def signals_class(r3, r3_mpi, demo, work):
    t = Tally("signals")
    for name in ["USR1", "TERM", "INT"]:
        d = job_dir(work, demo, 40)
        tune, log = os.path.join(d, "tune.yaml"), os.path.join(d, "job.log")
        with open(log, "w") as out:
            p = subprocess.Popen(mpirun(r3_mpi, tune), stdout=out, stderr=subprocess.STDOUT, env=MPI_ENV)
            started(log, r"generation 1: evaluating")
            if name == "USR1":
                p.send_signal(signal.SIGUSR1)  # mpirun forwards it
            else:  # to the ranks, as srun delivers it
                subprocess.run(["pkill", "-" + name, "-f", f"^{r3_mpi} {tune}"])
            try:
                p.wait(timeout=120)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                rc = None
        text = open(log).read()
        t.cases += 1
        if rc is None:
            t.hangs += 1
        elif rc == 4 and "--resume" in text:
            t.clean += 1
        else:
            t.notes.append(f"SIG{name}: exit {rc}, no resume hint")
        database = os.path.join(d, "r3-results", "run.h5")
        before = read_candidates(r3, database)
        rc, _, err, to = run(mpirun(r3_mpi, tune, ["--resume"]), timeout=300, env=MPI_ENV)
        t.result(rc, err, to, expect_error=False, what=f"resume after SIG{name}")
        after = read_candidates(r3, database)
        if before is None or after is None or after[:len(before)] != before:
            t.lost += 1
            t.notes.append(f"SIG{name}: committed candidates lost")
        leftover = [e for e in os.listdir(tempfile.gettempdir()) if e.startswith("r3-evaluator-")
                    and not os.path.exists(f"/proc/{e.split('-')[2]}")]
        if leftover:
            t.notes.append(f"SIG{name}: scratch copies left: {leftover}")
        shutil.rmtree(d, ignore_errors=True)
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--cases", type=int, default=300, help="damaged inputs per fuzzed class")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one, removed)")
    args = ap.parse_args()
    r3 = os.path.abspath(os.path.join(args.build, "bin", "r3"))
    r3_mpi = os.path.abspath(os.path.join(args.build, "bin", "r3-mpi"))
    stencil = os.path.abspath(os.path.join(args.build, "examples", "stencil"))
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="r3-reliability-")
    os.makedirs(work, exist_ok=True)
    demo = os.path.join(work, "demo.h5")
    rc, _, err, _ = run([r3, "record", "-k", "stencil2d", "-o", demo, "--launches", "2", "--", stencil, "512", "2"],
                        timeout=120)
    if rc != 0:
        sys.exit("cannot record the demo: " + err)
    start = time.time()
    tallies = [tune_yaml_class(r3_mpi, work, rng, args.cases)]
    shutil.copy(demo, os.path.join(work, "demo-copy.h5"))
    tallies.append(file_fuzz_class("capture", demo, [[r3, "inspect", "@", "--verify"], [r3, "replay", "@", "-n", "3"]],
                                   rng, args.cases, work))
    d = job_dir(work, demo, 12)
    run(mpirun(r3_mpi, os.path.join(d, "tune.yaml")), timeout=300, env=MPI_ENV)
    tallies.append(file_fuzz_class("run-db", os.path.join(d, "r3-results", "run.h5"),
                                   [[r3, "inspect", "@"], [r3, "report", "@", "-o", os.path.join(work, "rep")]],
                                   rng, args.cases, work))
    tallies.append(kill_resume_class(r3, r3_mpi, demo, work, rng, args.kills))
    tallies.append(disk_full_class(r3, r3_mpi, demo, work))
    tallies.append(two_jobs_class(r3, r3_mpi, demo, work))
    tallies.append(signals_class(r3, r3_mpi, demo, work))
    print(f"{'class':<12} {'cases':>6} {'ok':>6} {'clean errors':>13} {'crashes':>8} {'hangs':>6} {'data lost':>10}")
    for t in tallies:
        print(f"{t.name:<12} {t.cases:>6} {t.ok:>6} {t.clean:>13} {t.crashes:>8} {t.hangs:>6} {t.lost:>10}")
    for t in tallies:
        for note in t.notes[:10]:
            print(f"  {t.name}: {note}")
    bad = sum(t.crashes + t.hangs + t.lost for t in tallies)
    print(f"{sum(t.cases for t in tallies)} cases in {time.time() - start:.0f} s: "
          f"{sum(t.crashes for t in tallies)} crashes, {sum(t.hangs for t in tallies)} hangs, "
          f"{sum(t.lost for t in tallies)} data lost")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
