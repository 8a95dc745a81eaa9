#!/usr/bin/env bash
# bench/sweeps/corpus_tables.sh: the real-program tables of bench/data (gpu_<program>_<gpu>.csv),
# exhaustive sweeps of recorded kernels of PolyBench/GPU programs built unmodified by
# bench/realapps/build_corpus.sh, measured by corpus_sweep.py with r3 replay. Run on the GPU host
# after `source .gpuhost/activate` (or with R3_BUILD pointing at a build with CUDA).
#
#   POLYBENCH  a polybenchGpu checkout (github.com/sgrauerg/polybenchGpu, fetched by whoever
#              runs this, never committed; the GPU host cannot fetch: carry it)      (required)
#   PROGRAMS   corpus programs and their kernel, program:kernel-regex,...
#              (default: pb_syrk:syrk_kernel,pb_gemm:gemm_kernel; bench/data also has
#              pb_syr2k:syr2k_kernel and pb_2mm:mm2_kernel1, made with this PROGRAMS)
#   GPUS       GPU indices to spread each sweep over (default: every GPU nvidia-smi lists)
#   OUT        where the programs, captures, logs and tables go (default: a temporary folder);
#              a table is OUT/<program without pb_>.csv, kept in bench/data as
#              gpu_<program>_<gpu>.csv
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${R3_BUILD:-$here/build}
out=${OUT:-$(mktemp -d)}
programs=${PROGRAMS:-pb_syrk:syrk_kernel,pb_gemm:gemm_kernel}
[ -n "${POLYBENCH:-}" ] && [ -d "$POLYBENCH/CUDA" ] ||
  { echo "corpus_tables: POLYBENCH must name a polybenchGpu checkout (it has no CUDA/)" >&2; exit 2; }
[ -x "$build/bin/r3" ] || { echo "corpus_tables: $build has no bin/r3" >&2; exit 2; }
gpus=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)}
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv | tee "$out/gpus.csv"
only=$(echo "$programs" | tr ',' '\n' | cut -d: -f1 | paste -sd, -)
corpus=$out/corpus
bash "$here/bench/realapps/build_corpus.sh" "$corpus" --src-polybench "$POLYBENCH" \
  --only "$only" --no-verify >"$out/build.log" 2>&1 || { tail -20 "$out/build.log" >&2; exit 1; }
for entry in ${programs//,/ }; do
  program=${entry%%:*} kernel=${entry#*:}
  capture=$out/$program.h5
  (cd "$out" && "$build/bin/r3" record -k "$kernel" --launches 1 -o "$capture" \
    -- "$corpus/bin/$program" >"$out/$program.record.log" 2>&1) ||
    { tail -20 "$out/$program.record.log" >&2; exit 1; }
  "$build/bin/r3" inspect "$capture" >"$out/$program.inspect.txt" 2>&1 || true
  python3 "$here/bench/sweeps/corpus_sweep.py" --r3 "$build/bin/r3" --capture "$capture" \
    --kernel '#0' --gpus "$gpus" --out "$out/${program#pb_}.csv" \
    --title "PolyBench/GPU ${program#pb_} ($kernel, recorded from the unmodified program) on $gpu_name" |
    tee "$out/$program.sweep.txt"
done
