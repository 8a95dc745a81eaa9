#!/usr/bin/env bash
# build_kokkos.sh — build a tuning-enabled Kokkos for NVIDIA GPUs, and this folder's examples
# against it, for r3's Kokkos path on CUDA (docs/kokkos.md).
#
# Kokkos comes from its upstream source, fetched by whoever runs this script (never committed to
# r3), pinned by release: KOKKOS_VERSION below (4.6.01). It is configured with
#   Kokkos_ENABLE_CUDA, Kokkos_ENABLE_SERIAL, Kokkos_ENABLE_TUNING, Kokkos_ARCH_<ARCH> (HOPPER90)
# and built with its own bin/nvcc_wrapper as the C++ compiler, core and containers only.
#
# Kokkos 4.6 predates CUDA 13; with a CUDA 13 toolkit four edits are made to the copy this script
# builds (the source given is never changed):
#   bin/nvcc_wrapper                      default_arch sm_70 -> the ARCH's (sm_70 is below CUDA 13's
#                                         minimum; Kokkos passes its own -arch anyway)
#   core/src/Cuda/Kokkos_Cuda_Instance.hpp
#     cudaGraphAddDependencies(g, from, to, n)      -> (g, from, to, nullptr, n)
#                                         (CUDA 13 takes the edges' data before the count)
#     cudaMemPrefetchAsync(ptr, n, device, stream)  -> (ptr, n, LOCATION, 0, stream)
#     cudaMemAdvise(ptr, n, advice, device)         -> (ptr, n, advice, LOCATION)
#                                         (a cudaMemLocation, and flags; LOCATION: the device, or
#                                         the host for cudaCpuDeviceId)
#
# Usage: build_kokkos.sh OUTDIR [--src KOKKOS_SOURCE] [--arch HOPPER90] [--jobs N]
#   --src   a Kokkos source tree or git repository (checked out at KOKKOS_VERSION); without it
#           the release is cloned from https://github.com/kokkos/kokkos
# Outputs: OUTDIR/kokkos (the installed Kokkos: find_package(Kokkos) with
#          -DKokkos_ROOT=OUTDIR/kokkos), OUTDIR/examples/{kokkos_heat,kokkos_policies}.
set -euo pipefail

KOKKOS_VERSION=4.6.01
here=$(cd "$(dirname "$0")" && pwd)
out="" src="" arch=HOPPER90 jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "build_kokkos.sh: unknown option $1" >&2; exit 2 ;;
    *) out=$1; shift ;;
  esac
done
[ -n "$out" ] || { echo "usage: build_kokkos.sh OUTDIR [--src DIR] [--arch HOPPER90]" >&2; exit 2; }
mkdir -p "$out"; out=$(cd "$out" && pwd)
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "build_kokkos.sh: no nvcc (set CUDACXX or put it on PATH)" >&2; exit 1; }
cuda_major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
sm=$(case $arch in HOPPER90) echo sm_90 ;; AMPERE80) echo sm_80 ;; ADA89) echo sm_89 ;;
     BLACKWELL100) echo sm_100 ;; *) echo "" ;; esac)
[ -n "$sm" ] || { echo "build_kokkos.sh: --arch $arch: give HOPPER90, AMPERE80, ADA89 or BLACKWELL100" >&2; exit 2; }

# The source, at the pinned release, copied: the edits below are made to the copy only.
copy=$out/kokkos-src
rm -rf "$copy"
if [ -z "$src" ]; then
  git clone --quiet --depth 1 --branch "$KOKKOS_VERSION" https://github.com/kokkos/kokkos "$copy"
elif git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  mkdir -p "$copy"
  git -C "$src" archive "$KOKKOS_VERSION" | tar -x -C "$copy"
else
  cp -a "$src" "$copy"
fi
version=$(sed -n 's/^set(Kokkos_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))/\2/p' "$copy/CMakeLists.txt" | paste -sd.)
echo "build_kokkos.sh: Kokkos $version for $arch ($sm), CUDA $cuda_major"

sed -i "s/^default_arch=\"sm_70\"/default_arch=\"$sm\"/" "$copy/bin/nvcc_wrapper"
if [ "${cuda_major:-0}" -ge 13 ]; then
  instance=$copy/core/src/Cuda/Kokkos_Cuda_Instance.hpp
  # A device number as CUDA 13's cudaMemLocation (cudaCpuDeviceId: the host).
  location='(DEVICE == cudaCpuDeviceId ? cudaMemLocation{cudaMemLocationTypeHost, 0} : cudaMemLocation{cudaMemLocationTypeDevice, DEVICE})'
  sed -i 's/return cudaGraphAddDependencies(graph, from, to, numDependencies);/return cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies);/' "$instance"
  sed -i "s/return cudaMemPrefetchAsync(devPtr, count, dstDevice,\$/return cudaMemPrefetchAsync(devPtr, count, ${location//DEVICE/dstDevice}, 0,/" "$instance"
  sed -i "s/return cudaMemAdvise(devPtr, count, advice, device);/return cudaMemAdvise(devPtr, count, advice, ${location//DEVICE/device});/" "$instance"
  grep -q "nullptr, numDependencies" "$instance" && [ "$(grep -c cudaMemLocationTypeHost "$instance")" = 2 ] ||
    { echo "build_kokkos.sh: $instance is not Kokkos $KOKKOS_VERSION's: the CUDA 13 edits did not apply" >&2; exit 1; }
fi

export NVCC_WRAPPER_DEFAULT_COMPILER=${CXX:-g++}
cmake -S "$copy" -B "$out/kokkos-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$copy/bin/nvcc_wrapper" -DCMAKE_CXX_STANDARD=17 \
  -DCMAKE_INSTALL_PREFIX="$out/kokkos" -DBUILD_SHARED_LIBS=ON \
  -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_TUNING=ON \
  -DKokkos_ARCH_"$arch"=ON -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF \
  -DCMAKE_CUDA_COMPILER="$nvcc" > "$out/kokkos-configure.log"
cmake --build "$out/kokkos-build" -j "$jobs" > "$out/kokkos-build.log"
cmake --install "$out/kokkos-build" > /dev/null

# The examples, with the installed Kokkos (its nvcc_wrapper as their compiler).
cmake -S "$here" -B "$out/examples-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$out/kokkos/bin/nvcc_wrapper" -DKokkos_ROOT="$out/kokkos" -DCMAKE_CXX_EXTENSIONS=OFF \
  -DCMAKE_RUNTIME_OUTPUT_DIRECTORY="$out/examples" > "$out/examples-configure.log"
cmake --build "$out/examples-build" -j "$jobs" > "$out/examples-build.log"
echo "build_kokkos.sh: Kokkos in $out/kokkos; examples in $out/examples"
