#!/usr/bin/env bash
# Installs the build into a fresh prefix, then configures, builds and runs a consumer project
# that finds r3 with find_package(r3).
#   run_install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR
set -euo pipefail
build=$1 source=$2 work=$3 generator=$4
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
for f in bin/r3 bin/r3-mpi include/r3/capture.hpp include/r3/config.hpp lib/cmake/r3/r3Config.cmake; do
  if [ ! -e "$work/prefix/$f" ] && [ ! -e "$work/prefix/${f/lib\//lib64/}" ]; then
    echo "install is missing $f" >&2; exit 1
  fi
done
"$work/prefix/bin/r3" --version | head -1
cmake -S "$source/tests/install/consumer" -B "$work/consumer" -G "$generator" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/consumer-configure.log"
cmake --build "$work/consumer" >"$work/consumer-build.log"
"$work/consumer/consumer" "$work/consumer.h5"
