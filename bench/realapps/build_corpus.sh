#!/usr/bin/env bash
# build_corpus.sh — build a corpus of public, unmodified CUDA programs for recording with r3.
#
# The programs come from two public suites, fetched by whoever runs this script (never committed to
# the r3 repository) and pinned by commit:
#
#   rodinia    https://github.com/yuhc/gpu-rodinia   (GitHub mirror of Rodinia 3.1: cuda/, opencl/, openmp/)
#   polybench  https://github.com/sgrauerg/polybenchGpu   (PolyBench/GPU 1.0, Grauer-Gray et al.)
#
# Every program is compiled with nvcc -O3 -arch=sm_90 (static CUDA runtime, nvcc's default), from
# the upstream source files as they are: nothing is patched. The upstream Makefiles are not used,
# because they hard-code architectures CUDA 13 no longer accepts (sm_13, sm_20, sm_35); instead each
# program's nvcc line below lists the same source files and the same defines as its Makefile.
#
# One compatibility define is added on the command line (--no-compat drops it):
#   -DcudaThreadSynchronize=cudaDeviceSynchronize
# cudaThreadSynchronize() was deprecated in CUDA 4.0 as an exact alias of cudaDeviceSynchronize()
# and removed from the CUDA 13 headers; every program below except nw, pathfinder and lavaMD calls
# it on the host side. The define changes no kernel.
#
# Left out (they do not build or cannot run from the pinned repositories alone):
#   rodinia/gaussian      uses cudaDeviceProp::clockRate and ::deviceOverlap, removed in CUDA 13
#                         (host code; no command-line define can bring a struct member back).
#   rodinia/kmeans, hybridsort, leukocyte, mummergpu
#                         use texture references (texture<...>, tex1Dfetch on them), removed in CUDA 12.
#   rodinia/hotspot, hotspot3D, bfs, b+tree, cfd, nn, srad_v1, myocyte, heartwall, dwt2d, huffman
#                         read input files from rodinia's data/ directory, which is not in the
#                         repository (Rodinia ships it as a separate download) and has no generator
#                         in the repository.
#   polybench/3DCONV      one launch per i-plane: 254 launches of ~2 us on an H100.
#   polybench/CORR, COVAR, GRAMSCHM, FDTD-2D, LU, GEMVER, ADI, DOITGEN, JACOBI1D, JACOBI2D
#                         not tried on a GPU. Every PolyBench program also runs its CPU reference
#                         (RUN_ON_CPU is #defined in the source); at their default size (2048) the
#                         O(n^3) references of CORR, COVAR, GRAMSCHM and LU would take far longer than
#                         a few seconds (2MM at 1024 already takes ~12 s), and FDTD-2D, ADI, JACOBI*
#                         launch hundreds to thousands of short kernels. They build; they can be
#                         added to the table with a size (-DN= -DM=... / -DNI=...) if wanted.
#
# Outputs (OUTDIR):
#   bin/NAME            the executables
#   src/SUITE/...       a copy of the upstream files each program is built from, at the same paths
#                       as in the upstream repository (the kernels' sources, for tune.yaml source:)
#   manifest.tsv        program, binary, arguments, kernels, note
#   kernels.tsv         program, mangled, demangled, base, translation unit, defining file,
#                       template, in_header, nvcc flags of the translation unit
#   build.tsv           program, suite, commit, nvcc command line
#   .work/              clones and nvcc's intermediate files (-keep); can be deleted
set -euo pipefail

RODINIA_URL=${R3_REALAPPS_RODINIA_URL:-https://github.com/yuhc/gpu-rodinia.git}
RODINIA_COMMIT=9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4
POLYBENCH_URL=${R3_REALAPPS_POLYBENCH_URL:-https://github.com/sgrauerg/polybenchGpu.git}
POLYBENCH_COMMIT=5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c


usage() {
    cat <<'EOF'
Usage: build_corpus.sh OUTDIR [options]

Builds public, unmodified CUDA programs (Rodinia 3.1, PolyBench/GPU) for recording with r3, and
writes OUTDIR/manifest.tsv (program, binary, arguments, kernels, note).

Options:
  --src-rodinia DIR     use an existing checkout of github.com/yuhc/gpu-rodinia
                        (env R3_REALAPPS_SRC_RODINIA); it must be at the pinned commit
  --src-polybench DIR   use an existing checkout of github.com/sgrauerg/polybenchGpu
                        (env R3_REALAPPS_SRC_POLYBENCH); it must be at the pinned commit
                        Without these, the script clones the repositories into OUTDIR/.work/ and
                        checks out the pinned commits (needs network access; the URLs can be
                        replaced with env R3_REALAPPS_RODINIA_URL / R3_REALAPPS_POLYBENCH_URL,
                        e.g. a local mirror).
  --only LIST           build only these programs (comma-separated names, see --list)
  --list                print the programs, their suites and arguments, and exit
  --arch ARCH           GPU architecture (default sm_90)
  --nvcc PATH           nvcc to use (default: $NVCC, else $CUDA_HOME/bin/nvcc, else nvcc on PATH,
                        else /usr/local/cuda/bin/nvcc)
  --no-compat           do not add -DcudaThreadSynchronize=cudaDeviceSynchronize (most programs
                        then fail to build with CUDA >= 13)
  --no-verify           accept a checkout that is not at the pinned commit, or not a git checkout
  --strict              exit non-zero if any program fails to build
  -h, --help            show this help

The pinned commits:
  rodinia    9c10d3ea16ddba2ba057cc3951a9efc4c2cc18a4
  polybench  5584aaa7d0be810ff5eb0b61c49fb64ecc81ba4c
EOF
}

die() { printf 'build_corpus.sh: %s\n' "$*" >&2; exit 1; }
log() { printf '[build_corpus] %s\n' "$*" >&2; }

# ---------------------------------------------------------------------------------------------
# The programs. def NAME SUITE DIR "SOURCES" "FLAGS" "ARGS" "NOTE"
#   DIR      the program's directory in the upstream repository
#   SOURCES  the files its Makefile compiles, relative to DIR
#   FLAGS    the program-specific flags of its Makefile (defines, include dirs relative to the
#            repository root as {ROOT}/..., fast math); -O3 -arch are added to all
#   ARGS     command line (the programs generate their inputs)
# ---------------------------------------------------------------------------------------------
NAMES=()
declare -A P_SUITE P_DIR P_SRCS P_FLAGS P_ARGS P_NOTE
def() {
    NAMES+=("$1"); P_SUITE[$1]=$2; P_DIR[$1]=$3; P_SRCS[$1]=$4; P_FLAGS[$1]=$5; P_ARGS[$1]=$6
    P_NOTE[$1]=$7
}

# --- Rodinia 3.1 (cuda/) ---
def backprop rodinia cuda/backprop "backprop.c facetrain.c imagenet.c backprop_cuda.cu" "" \
    "1000000" \
    "Rodinia backprop: one training step of a 2-layer net (N inputs, 16 hidden; N/16 <= 65535 blocks); random input; no self-check; H100: both kernels ~0.11 ms, 1 launch each"
def lud rodinia cuda/lud "cuda/lud.cu cuda/lud_kernel.cu common/common.c" \
    "-I{ROOT}/cuda/lud/common -DGPU_TIMER -use_fast_math" \
    "-s 8192" \
    "Rodinia lud: blocked LU of a random 8192x8192 matrix, 512 steps x 3 kernels; -v would verify on the CPU (O(n^3), too slow at this size); H100: lud_internal up to 0.50 ms (mean 0.17), diagonal/perimeter ~0.01 ms"
def nw rodinia cuda/nw "needle.cu" "" \
    "8192 10" \
    "Rodinia nw: Needleman-Wunsch, 2x512 wavefront launches of up to 512 blocks of 16 threads; no self-check; H100: only ~5 us per launch (wavefront), record a few launches"
def pathfinder rodinia cuda/pathfinder "pathfinder.cu" "" \
    "500000 257 64" \
    "Rodinia pathfinder: dynamic programming over a random grid (cols rows pyramid_height); no self-check; H100: 4 launches of 0.14 ms; ~4 s wall (host init)"
def srad_v2 rodinia cuda/srad/srad_v2 "srad.cu" "" \
    "4096 4096 0 127 0 127 0.5 4" \
    "Rodinia srad_v2: speckle-reducing diffusion on a random 4096x4096 image, 4 iterations x 2 kernels; no self-check; H100: 0.22 ms per launch. srad_cuda_1 reads outside its arrays (compute-sanitizer memcheck: 22261 invalid global reads); alone it never faulted, recorded it faulted in 1 of 12 runs (ILLEGAL_ADDRESS): the layout decides"
def lavaMD rodinia cuda/lavaMD "main.c kernel/kernel_gpu_cuda_wrapper.cu util/num/num.c util/timer/timer.c util/device/device.cu" "" \
    "-boxes1d 16" \
    "Rodinia lavaMD: particle potentials in 16^3 boxes (double precision); no self-check; H100: one launch of 3.7 ms"
def streamcluster rodinia cuda/streamcluster "streamcluster_cuda_cpu.cpp streamcluster_cuda.cu streamcluster_header.cu" "" \
    "10 20 256 65536 65536 1000 none /dev/null 1" \
    "Rodinia streamcluster: online k-median clustering of random points (k1 k2 dim n chunk clustersize infile outfile nproc); no self-check; H100: 1611 launches of ~0.033 ms; ~5 s wall (CPU part)"
def particlefilter rodinia cuda/particlefilter "ex_particle_CUDA_float_seq.cu" "-use_fast_math" \
    "-x 128 -y 128 -z 10 -np 65536" \
    "Rodinia particlefilter (float_seq): tracks an object in a generated 128x128x10 video with 65536 particles; prints the estimated position (XE, YE) and its distance from the truth; H100 per launch: find_index 5.4 ms, normalize_weights 3.9 ms, likelihood 0.16 ms, sum 0.004 ms (9 each)"

# --- PolyBench/GPU 1.0 (CUDA/). Sizes are compile-time macros; the default (STANDARD_DATASET) is
#     used except where noted. PolyBench's own override: "-DN= -DNI=..." (its headers skip their
#     size table when N is defined; N is defined empty because cuda.h uses N as a parameter name).
#     Each program runs a CPU reference and prints the number of mismatching outputs. They take no
#     arguments (empty arguments column). Times in the notes: kernel durations measured on an H100
#     (CUPTI, as r3 record reports them), driver 580, this build. ---
PB_NOTE="compares with its CPU reference and prints 'Non-Matching CPU-GPU Outputs Beyond Error Threshold of T Percent: N' (N must be 0)"
def pb_2dconv polybench CUDA/2DCONV "2DConvolution.cu" "-DN= -DNI=8192 -DNJ=8192" "" "PolyBench 2DCONV 8192x8192 (size set with -D, default 4096); H100: 0.29 ms, ~4 s wall; $PB_NOTE"
def pb_gemm polybench CUDA/GEMM "gemm.cu" "" "" "PolyBench GEMM 512x512x512; H100: 0.18 ms; $PB_NOTE"
def pb_2mm polybench CUDA/2MM "2mm.cu" "-DN= -DNI=768 -DNJ=768 -DNK=768 -DNL=768" "" "PolyBench 2MM 768^3, two chained GEMMs (size set with -D, default 1024, whose CPU reference takes ~12 s); H100: 0.57 ms each; $PB_NOTE"
def pb_3mm polybench CUDA/3MM "3mm.cu" "" "" "PolyBench 3MM 512^3 (three GEMMs); H100: 0.18 ms each; $PB_NOTE"
def pb_atax polybench CUDA/ATAX "atax.cu" "" "" "PolyBench ATAX 4096x4096 (A^T A x); H100: 0.70 and 1.56 ms; $PB_NOTE"
def pb_bicg polybench CUDA/BICG "bicg.cu" "" "" "PolyBench BICG 4096x4096; H100: 1.54 and 0.63 ms; $PB_NOTE"
def pb_mvt polybench CUDA/MVT "mvt.cu" "" "" "PolyBench MVT 4096x4096; H100: 0.69 and 1.57 ms; $PB_NOTE"
def pb_gesummv polybench CUDA/GESUMMV "gesummv.cu" "" "" "PolyBench GESUMMV 4096; H100: 1.37 ms; $PB_NOTE"
def pb_syrk polybench CUDA/SYRK "syrk.cu" "" "" "PolyBench SYRK 1024; H100: 4.7 ms; $PB_NOTE"
def pb_syr2k polybench CUDA/SYR2K "syr2k.cu" "" "" "PolyBench SYR2K 1024; H100: 9.2 ms; $PB_NOTE"

# Extra upstream files copied to OUTDIR/src (headers included by relative path, licences).
# shellcheck disable=SC2034  # read through ${!copy_var}
COPY_rodinia="LICENSE README cuda/util common/make.config"
# shellcheck disable=SC2034
COPY_polybench="README.md README.txt common"

COMPAT_FLAGS="-DcudaThreadSynchronize=cudaDeviceSynchronize"

# ---------------------------------------------------------------------------------------------
OUTDIR=""
SRC_rodinia="${R3_REALAPPS_SRC_RODINIA:-}"
SRC_polybench="${R3_REALAPPS_SRC_POLYBENCH:-}"
ONLY=""
ARCH=sm_90
NVCC_BIN="${NVCC:-}"
VERIFY=1
STRICT=0
LIST=0

while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --src-rodinia) [ $# -ge 2 ] || die "$1 needs a directory"; SRC_rodinia=$2; shift 2 ;;
        --src-rodinia=*) SRC_rodinia=${1#*=}; shift ;;
        --src-polybench) [ $# -ge 2 ] || die "$1 needs a directory"; SRC_polybench=$2; shift 2 ;;
        --src-polybench=*) SRC_polybench=${1#*=}; shift ;;
        --only) [ $# -ge 2 ] || die "$1 needs a list"; ONLY=$2; shift 2 ;;
        --only=*) ONLY=${1#*=}; shift ;;
        --arch) [ $# -ge 2 ] || die "$1 needs a value"; ARCH=$2; shift 2 ;;
        --arch=*) ARCH=${1#*=}; shift ;;
        --nvcc) [ $# -ge 2 ] || die "$1 needs a path"; NVCC_BIN=$2; shift 2 ;;
        --nvcc=*) NVCC_BIN=${1#*=}; shift ;;
        --no-compat) COMPAT_FLAGS=""; shift ;;
        --no-verify) VERIFY=0; shift ;;
        --strict) STRICT=1; shift ;;
        --list) LIST=1; shift ;;
        -*) die "unknown option '$1' (see --help)" ;;
        *) [ -z "$OUTDIR" ] || die "more than one OUTDIR given ('$OUTDIR', '$1')"; OUTDIR=$1; shift ;;
    esac
done

if [ "$LIST" = 1 ]; then
    for n in "${NAMES[@]}"; do printf '%s\t%s\t%s\t%s\n' "$n" "${P_SUITE[$n]}" "${P_DIR[$n]}" "${P_ARGS[$n]}"; done
    exit 0
fi
[ -n "$OUTDIR" ] || { usage >&2; exit 2; }

SELECTED=()
if [ -n "$ONLY" ]; then
    IFS=',' read -r -a want <<<"$ONLY"
    for w in "${want[@]}"; do
        [ -n "${P_SUITE[$w]+x}" ] || die "unknown program '$w' (see --list)"
        SELECTED+=("$w")
    done
else
    SELECTED=("${NAMES[@]}")
fi

if [ -z "$NVCC_BIN" ]; then
    if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then NVCC_BIN=$CUDA_HOME/bin/nvcc
    elif command -v nvcc >/dev/null 2>&1; then NVCC_BIN=$(command -v nvcc)
    elif [ -x /usr/local/cuda/bin/nvcc ]; then NVCC_BIN=/usr/local/cuda/bin/nvcc
    else die "nvcc not found: pass --nvcc PATH or set CUDA_HOME"; fi
fi
[ -x "$NVCC_BIN" ] || die "nvcc '$NVCC_BIN' is not executable"
command -v readelf >/dev/null 2>&1 || die "readelf (binutils) is needed to list the kernels"
DEMANGLE=""
for d in "$(dirname "$NVCC_BIN")/cu++filt" cu++filt c++filt; do
    if command -v "$d" >/dev/null 2>&1; then DEMANGLE=$(command -v "$d"); break; fi
done
[ -n "$DEMANGLE" ] || die "neither cu++filt nor c++filt found, needed to demangle kernel names"
CUOBJDUMP=""
for d in "$(dirname "$NVCC_BIN")/cuobjdump" cuobjdump; do
    if command -v "$d" >/dev/null 2>&1; then CUOBJDUMP=$(command -v "$d"); break; fi
done

mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
WORK=$OUTDIR/.work
mkdir -p "$WORK" "$OUTDIR/bin" "$OUTDIR/src"

# ---------------------------------------------------------------------------------------------
# Sources: a given checkout (verified) or a clone at the pinned commit.
# ---------------------------------------------------------------------------------------------
declare -A ROOT
prepare_suite() {
    local suite=$1 url commit given dir head
    case $suite in
        rodinia) url=$RODINIA_URL; commit=$RODINIA_COMMIT; given=$SRC_rodinia ;;
        polybench) url=$POLYBENCH_URL; commit=$POLYBENCH_COMMIT; given=$SRC_polybench ;;
        *) die "internal: unknown suite $suite" ;;
    esac
    if [ -n "$given" ]; then
        [ -d "$given" ] || die "--src-$suite: '$given' is not a directory"
        dir=$(cd "$given" && pwd)
        if head=$(git -C "$dir" rev-parse HEAD 2>/dev/null); then
            if [ "$head" != "$commit" ]; then
                [ "$VERIFY" = 0 ] || die "--src-$suite: $dir is at $head, not at the pinned $commit (git -C $dir checkout $commit, or --no-verify)"
                log "warning: $suite checkout $dir is at $head, not at the pinned $commit (--no-verify)"
            fi
        else
            [ "$VERIFY" = 0 ] || die "--src-$suite: $dir is not a git checkout; cannot verify the pinned commit $commit (--no-verify to accept it)"
            log "warning: $suite source $dir is not a git checkout; commit not verified (--no-verify)"
        fi
    else
        dir=$WORK/upstream/$suite
        if [ ! -d "$dir/.git" ]; then
            log "cloning $url into $dir"
            mkdir -p "$WORK/upstream"
            git clone --quiet --no-checkout "$url" "$dir"
        fi
        if ! git -C "$dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
            git -C "$dir" fetch --quiet origin || die "cannot fetch $url"
        fi
        # Check out only what the selected programs use (their directories and COPY_suite).
        local sparse=() rel n copy_var=COPY_$suite
        for rel in ${!copy_var}; do sparse+=("/$rel"); done
        for n in "${SELECTED[@]}"; do [ "${P_SUITE[$n]}" = "$suite" ] && sparse+=("/${P_DIR[$n]}/"); done
        git -C "$dir" sparse-checkout set --no-cone "${sparse[@]}" 2>/dev/null \
            || log "git sparse-checkout unavailable; checking out the whole repository"
        git -C "$dir" -c advice.detachedHead=false checkout --quiet --force --detach "$commit" \
            || die "cannot check out $commit in $dir"
        head=$(git -C "$dir" rev-parse HEAD)
        [ "$head" = "$commit" ] || die "$dir: HEAD is $head after checking out $commit"
    fi
    ROOT[$suite]=$dir
}

# Refuse program directories whose tracked files differ from the pinned commit (unmodified sources).
check_unmodified() {
    local root=$1 path=$2
    git -C "$root" rev-parse HEAD >/dev/null 2>&1 || return 0
    if ! git -C "$root" diff --quiet --diff-filter=MT HEAD -- "$path"; then
        log "$path in $root has local modifications:"
        git -C "$root" diff --stat --diff-filter=MT HEAD -- "$path" >&2 || true
        return 1
    fi
}

# Copy a file or directory of the upstream tree into OUTDIR/src/SUITE at the same relative path.
copy_upstream() {
    local suite=$1 rel=$2 src dst
    src=${ROOT[$suite]}/$rel
    dst=$OUTDIR/src/$suite/$rel
    [ -e "$src" ] || return 0
    mkdir -p "$(dirname "$dst")"
    rm -rf "$dst"
    cp -R "$src" "$dst"
}

declare -A NEED_SUITE
for n in "${SELECTED[@]}"; do NEED_SUITE[${P_SUITE[$n]}]=1; done
declare -A COMMIT_OF
for s in "${!NEED_SUITE[@]}"; do
    prepare_suite "$s"
    COMMIT_OF[$s]=$(git -C "${ROOT[$s]}" rev-parse HEAD 2>/dev/null || echo unknown)
    copy_var=COPY_$s
    for rel in ${!copy_var}; do copy_upstream "$s" "$rel"; done
done

# ---------------------------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------------------------
tsv_clean() { tr '\t\n' '  '; }

# The kernels of a program: entry functions (STO_CUDA_ENTRY, st_other 0x10) of the cubins nvcc
# kept; prints "cubin<TAB>mangled" lines. cuobjdump -symbols on the binary gives the same list.
list_kernels() {
    local keep=$1 c
    for c in "$keep"/*.cubin; do
        [ -e "$c" ] || continue
        readelf -Ws --wide "$c" | awk -v cubin="$(basename "$c")" \
            '$4 == "FUNC" && /\[<other>: 10\]/ { print cubin "\t" $NF }'
    done
}

# The file (relative to the suite root) that defines __global__ kernel BASE, searched in the
# program's directory: the first line of the definition names __global__ and, on the same or one
# of the next two lines, BASE followed by '('.
find_definition() {
    local root=$1 dir=$2 base=$3 f
    while IFS= read -r f; do
        if awk -v b="$base" '
            /__global__/ { pending = 3 }
            pending > 0 { if (match($0, "(^|[^A-Za-z0-9_])" b "[ \t]*(<[^(]*>)?[ \t]*\\(")) { found = 1; exit } ; pending-- }
            END { exit !found }' "$f"; then
            printf '%s\n' "${f#"$root"/}"
            return 0
        fi
    done < <(find "$root/$dir" -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.c' -o -name '*.cpp' \) | LC_ALL=C sort)
    printf '?\n'
}

MANIFEST=$OUTDIR/manifest.tsv
KERNELS=$OUTDIR/kernels.tsv
BUILDTSV=$OUTDIR/build.tsv
printf 'program\tbinary\targuments\tkernels\tnote\n' >"$MANIFEST.tmp"
printf 'program\tmangled\tdemangled\tbase\ttranslation_unit\tdefined_in\ttemplate\tin_header\tnvcc_flags\n' >"$KERNELS.tmp"
printf 'program\tsuite\tcommit\tnvcc_command\n' >"$BUILDTSV.tmp"

BUILT=()
FAILED=()
NKERNELS=0
for n in "${SELECTED[@]}"; do
    suite=${P_SUITE[$n]}
    dir=${P_DIR[$n]}
    if ! check_unmodified "${ROOT[$suite]}" "$dir"; then
        log "$n: skipped, its sources are modified"
        FAILED+=("$n(modified)")
        continue
    fi
    copy_upstream "$suite" "$dir"
    sroot=$OUTDIR/src/$suite
    pdir=$sroot/$dir
    keep=$WORK/build/$n
    rm -rf "$keep"
    mkdir -p "$keep"
    flags=${P_FLAGS[$n]//\{ROOT\}/$sroot}
    srcs=()
    for s in ${P_SRCS[$n]}; do srcs+=("$pdir/$s"); done
    # shellcheck disable=SC2206
    cmd=("$NVCC_BIN" -O3 "-arch=$ARCH" $COMPAT_FLAGS $flags -keep -keep-dir "$keep" "${srcs[@]}" -o "$OUTDIR/bin/$n")
    log "$n: building"
    if ! (cd "$keep" && "${cmd[@]}") >"$keep/build.log" 2>&1; then
        log "$n: FAILED to build; the last lines of $keep/build.log:"
        tail -n 15 "$keep/build.log" >&2
        FAILED+=("$n")
        rm -f "$OUTDIR/bin/$n"
        continue
    fi
    mapfile -t klines < <(list_kernels "$keep" | LC_ALL=C sort -t "$(printf '\t')" -k2,2)
    if [ "${#klines[@]}" = 0 ]; then
        log "$n: FAILED: no kernels found in the cubins nvcc kept in $keep"
        FAILED+=("$n")
        continue
    fi
    if [ -n "$CUOBJDUMP" ]; then
        # Cross-check with cuobjdump on the binary when the toolkit has it.
        a=$(printf '%s\n' "${klines[@]}" | cut -f2 | LC_ALL=C sort -u)
        b=$("$CUOBJDUMP" -symbols "$OUTDIR/bin/$n" 2>/dev/null | awk '/STT_FUNC/ && /STO_ENTRY/ { print $NF }' | LC_ALL=C sort -u || true)
        [ "$a" = "$b" ] || log "$n: warning: cuobjdump -symbols lists other kernels than the kept cubins: $(printf '%s' "$b" | tr '\n' ' ')"
    fi
    bases=()
    declare -A seen=()
    for kl in "${klines[@]}"; do
        cubin=${kl%%$'\t'*}
        mangled=${kl#*$'\t'}
        demangled=$(printf '%s\n' "$mangled" | "$DEMANGLE")
        # Base name: drop the parameter list, a return type (templates) and template arguments.
        base=${demangled%%(*}
        base=${base##* }
        base=$(printf '%s' "$base" | sed -e ':a' -e 's/<[^<>]*>//g' -e 'ta')
        case $demangled in *'<'*'>('*) tmpl=yes ;; *) tmpl=no ;; esac
        tu_stem=${cubin%.sm_*}
        tu="?"
        for s in "${srcs[@]}"; do
            sb=$(basename "$s"); sb=${sb%.*}
            if [ "$sb" = "$tu_stem" ]; then tu=${s#"$sroot"/}; break; fi
        done
        def_in=$(find_definition "$sroot" "$dir" "$base")
        if [ "$def_in" = "$tu" ]; then hdr=no; elif [ "$def_in" = "?" ]; then hdr="?"; else hdr="yes (included by $tu)"; fi
        tuflags=$(printf '%s' "-O3 -arch=$ARCH $COMPAT_FLAGS ${P_FLAGS[$n]}" | sed -e "s#{ROOT}/#<$suite>/#g" -e 's/  */ /g')
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$mangled" "$(printf '%s' "$demangled" | tsv_clean)" \
            "$base" "$tu" "$def_in" "$tmpl" "$hdr" "$tuflags" >>"$KERNELS.tmp"
        if [ -z "${seen[$base]+x}" ]; then seen[$base]=1; bases+=("$base"); fi
        NKERNELS=$((NKERNELS + 1))
    done
    unset seen
    klist=$(IFS=,; printf '%s' "${bases[*]}")
    printf '%s\t%s\t%s\t%s\t%s\n' "$n" "bin/$n" "${P_ARGS[$n]}" "$klist" "$(printf '%s' "${P_NOTE[$n]}" | tsv_clean)" >>"$MANIFEST.tmp"
    printf '%s\t%s\t%s\t%s\n' "$n" "$suite" "${COMMIT_OF[$suite]}" "$(printf '%q ' "${cmd[@]}" | sed "s#$OUTDIR/#<OUTDIR>/#g" | tsv_clean)" >>"$BUILDTSV.tmp"
    BUILT+=("$n")
    log "$n: ok ($klist)"
done

mv "$MANIFEST.tmp" "$MANIFEST"
mv "$KERNELS.tmp" "$KERNELS"
mv "$BUILDTSV.tmp" "$BUILDTSV"

log "built ${#BUILT[@]} program(s) with $NKERNELS kernel(s) into $OUTDIR: ${BUILT[*]:-none}"
if [ "${#FAILED[@]}" -gt 0 ]; then
    log "failed: ${FAILED[*]}"
    [ "$STRICT" = 0 ] || exit 1
fi
[ "${#BUILT[@]}" -gt 0 ] || exit 1
exit 0
