#!/usr/bin/env bash
# bench/corpus_scaling.sh: bench/tune_scaling on a capture of a public, unmodified program with
# several kernels of different costs, tuned together from the program's own source file (the
# "real-program corpus" row of the scaling figure, DESIGN.md §9). The program is PolyBench/GPU's
# ATAX (two kernels over a 4096 x 4096 matrix, ~0.7 and ~1.6 ms on an H100), built by
# bench/realapps/build_corpus.sh from a checkout of github.com/sgrauerg/polybenchGpu that whoever
# runs this fetched (never committed here; the GPU host cannot fetch: carry it there).
# Run it on the GPU host after `source .gpuhost/activate` (or with R3_BUILD pointing at a build
# with CUDA).
#
#   POLYBENCH  the polybenchGpu checkout                      (required)
#   EVALS      evaluator counts                               (default: 1,2)
#   PER        evaluations per evaluator                      (default: 500)
#   DELAY      the local LLM endpoint's answer delay          (default: 5 s)
#   EXTRA      further tune_scaling options, e.g. --no-llm or --llm-only
#   OUT        where the program, the capture, the logs and the runs' results go (default: a
#              temporary folder)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${R3_BUILD:-$here/build}
out=${OUT:-$(mktemp -d)}
[ -n "${POLYBENCH:-}" ] && [ -d "$POLYBENCH/CUDA/ATAX" ] ||
  { echo "corpus_scaling: POLYBENCH must name a polybenchGpu checkout (it has no CUDA/ATAX)" >&2; exit 2; }
[ -x "$build/bin/r3" ] && [ -x "$build/bench/tune_scaling" ] ||
  { echo "corpus_scaling: $build has no bin/r3 or bench/tune_scaling" >&2; exit 2; }
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm --format=csv | tee "$out/gpus.csv"
corpus=$out/corpus
# --no-verify: an export of the pinned commit is not a git checkout of its own.
[ -x "$corpus/bin/pb_atax" ] ||
  bash "$here/bench/realapps/build_corpus.sh" "$corpus" --src-polybench "$POLYBENCH" \
    --only pb_atax --no-verify >"$out/build.log" 2>&1 || { cat "$out/build.log" >&2; exit 1; }
capture=$out/atax.h5
[ -f "$capture" ] || (cd "$out" && "$build/bin/r3" record -k 'atax_kernel' -o "$capture" \
  -- "$corpus/bin/pb_atax" >"$out/record.log" 2>&1) || { cat "$out/record.log" >&2; exit 1; }
"$build/bin/r3" inspect "$capture" >"$out/inspect.txt" 2>&1 || true
# The capture's kernels by index ('#0', '#1'), each tuned from ATAX's own file.
# shellcheck disable=SC2086
"$build/bench/tune_scaling" --capture "$capture" --kernel '#0,#1' \
  --source "$corpus/src/polybench/CUDA/ATAX/atax.cu" --evaluators "${EVALS:-1,2}" \
  --per-evaluator "${PER:-500}" --llm-delay "${DELAY:-5}" --keep "$out/runs" ${EXTRA:-} |
  tee "$out/tune_scaling.txt"
