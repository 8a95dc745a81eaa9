#!/usr/bin/env bash
# Installs r3 into a fresh prefix, then configures, builds and runs a consumer project that finds
# it with find_package(r3).
#   run_install_test.sh shared BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR
#       installs the existing (shared) build
#   run_install_test.sh static BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR
#       first builds r3 again, static, with every optional dependency off, with the other of
#       Ninja and Unix Makefiles than GENERATOR (the main build's): every test run builds r3
#       with both (Unix Makefiles is what Spack's CMakePackage uses by default). This build is
#       not optimised and has no debug information (half the compile time: it was the longest
#       test): what it checks is that r3 builds, installs and links so; the main build runs the
#       optimised code.
set -euo pipefail
mode=$1 build=$2 source=$3 work=$4 generator=$5
rm -rf "$work"
mkdir -p "$work"
if [ "$mode" = static ]; then
  build=$work/build
  other="Unix Makefiles"
  if [ "$generator" = "Unix Makefiles" ]; then
    if command -v ninja >/dev/null; then other=Ninja; else other=$generator; fi
  fi
  echo "building r3 static with $other"
  cmake -S "$source" -B "$build" -G "$other" -DBUILD_SHARED_LIBS=OFF -DR3_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0 \
    -DR3_ENABLE_CUDA=OFF -DR3_ENABLE_LLVM=OFF -DR3_ENABLE_KOKKOS=OFF -DR3_ENABLE_MPI=OFF -DR3_ENABLE_SECCOMP=OFF \
    >"$work/configure.log"
  cmake --build "$build" -j 2 >"$work/build.log"
fi
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
for f in bin/r3 bin/r3-mpi libexec/r3/r3-sandbox include/r3/capture.hpp include/r3/config.hpp include/r3/record/call.hpp \
  share/r3/prompts share/r3/examples/smoke.h5 share/r3/examples/demo/tune.yaml \
  share/r3/examples/demo/stencil.cpp share/r3/jobs/README.md share/r3/jobs/slurm/tune.sbatch; do
  [ -e "$work/prefix/$f" ] || { echo "install is missing $f" >&2; exit 1; }
done
# The r3 driver's own headers (r3 record and r3 apply) are no library's interface.
for f in include/r3/record/record_command.hpp include/r3/record/apply_command.hpp include/r3/record/application.hpp; do
  [ ! -e "$work/prefix/$f" ] || { echo "install has $f, which is the r3 driver's own" >&2; exit 1; }
done
[ -n "$(find "$work/prefix" -name r3Config.cmake)" ] || { echo "install is missing r3Config.cmake" >&2; exit 1; }
"$work/prefix/bin/r3" --version | head -1
[ -x "$work/prefix/share/r3/jobs/slurm/tune.sbatch" ] || { echo "installed job scripts are not executable" >&2; exit 1; }
"$work/prefix/bin/r3" inspect "$work/prefix/share/r3/examples/smoke.h5" >"$work/inspect.log"
# The installed tools replay the installed capture where they can compile (the shared build has LLVM).
version=$("$work/prefix/bin/r3" --version)
if grep -q 'LLVM/Clang: yes' <<<"$version"; then
  "$work/prefix/bin/r3" replay "$work/prefix/share/r3/examples/smoke.h5" >"$work/replay.log" ||
    { cat "$work/replay.log" >&2; echo "the installed r3 cannot replay share/r3/examples/smoke.h5" >&2; exit 1; }
fi
# With Kokkos, the installed r3 finds its installed connector (`true` is no Kokkos application:
# this checks the lookup and the result, not the tuning, which tests/integration/test_kokkos does).
if grep -q 'Kokkos: yes' <<<"$version"; then
  "$work/prefix/bin/r3" apply "$work/prefix/share/r3/examples/kokkos/best.yaml" -- true \
    >"$work/apply.log" 2>&1 ||
    { cat "$work/apply.log" >&2; echo "the installed r3 apply cannot find its connector" >&2; exit 1; }
fi
cmake -S "$source/tests/install/consumer" -B "$work/consumer" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/consumer-configure.log"
cmake --build "$work/consumer" >"$work/consumer-build.log"
"$work/consumer/consumer" "$work/consumer.h5"
