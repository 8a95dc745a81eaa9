#!/usr/bin/env bash
# bench/gpu_scaling.sh: bench/tune_scaling on a GPU node, on the demo's CUDA capture (one
# 4096 x 4096 heat step, the "candidates of the demo's size" of DESIGN.md §9's scaling figure).
# Run it on the GPU host after `source .gpuhost/activate` (or with R3_BUILD pointing at a build
# with CUDA). Evaluator ranks bind GPUs by node-local rank (rank k takes GPU k mod GPUs), so with
# G GPUs, EVALS=G is one evaluator per GPU and EVALS=2G two per GPU.
#
#   EVALS   evaluator counts                        (default: 1,2)
#   PER     evaluations per evaluator               (default: 1000)
#   DELAY   the local LLM endpoint's answer delay   (default: 5 s)
#   EXTRA   further tune_scaling options, e.g. --no-llm or --llm-only
#   OUT     where the capture, the logs and the runs' results go (default: a temporary folder)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${R3_BUILD:-$here/build}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
[ -x "$build/examples/stencil_cuda_record" ] ||
  { echo "gpu_scaling: $build has no examples/stencil_cuda_record (a build with CUDA?)" >&2; exit 2; }
nvidia-smi --query-gpu=index,name,memory.total,clocks.max.sm --format=csv | tee "$out/gpus.csv"
capture=$out/demo-cuda.h5
[ -f "$capture" ] || "$build/examples/stencil_cuda_record" "$capture" 4096 >"$out/record.log" 2>&1 ||
  { cat "$out/record.log" >&2; exit 1; }
# shellcheck disable=SC2086
"$build/bench/tune_scaling" --capture "$capture" --kernel stencil2d \
  --source "$here/examples/demo/stencil.cu" --evaluators "${EVALS:-1,2}" \
  --per-evaluator "${PER:-1000}" --llm-delay "${DELAY:-5}" --keep "$out/runs" ${EXTRA:-} |
  tee "$out/tune_scaling.txt"
