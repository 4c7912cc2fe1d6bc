#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds tests/install/subdirectory: a project that adds tensormem with
# add_subdirectory, configured with GoogleTest, Google Benchmark, CLI11 and
# pybind11 hidden from CMake (a consumer needs only a compiler, CMake, zlib
# and nlohmann-json), then runs its plan_example. Prints the configure and
# build times. Unoptimised (-O0) to keep the test short: it checks the build,
# not the code's speed.
set -euo pipefail
source=$1 compiler=${2:-} flags=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s.%N)
cmake -S "$source/tests/install/subdirectory" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DTENSORMEM_SOURCE_DIR="$source" \
  ${compiler:+-DCMAKE_CXX_COMPILER="$compiler"} -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON >"$work/configure.log" ||
  { cat "$work/configure.log"; exit 1; }
configured=$(date +%s.%N)
cmake --build "$work/build" --target plan_example -j "$(nproc 2>/dev/null || echo 2)" >"$work/build.log" ||
  { tail -50 "$work/build.log"; exit 1; }
built=$(date +%s.%N)
if grep -q -- "-Werror" "$work/build/build.ninja"; then
  echo "a consumer's build of tensormem compiles with -Werror" >&2
  exit 1
fi
"$work/build/plan_example"
awk -v a="$start" -v b="$configured" -v c="$built" \
  'BEGIN { printf "add_subdirectory consumer: configure %.1f s, build %.1f s\n", b - a, c - b }'
