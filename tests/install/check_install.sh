#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds/runs examples/consumer
# against it with find_package(tensormem): the exported package works.
set -euo pipefail
build=$1 source=$2
# The consumer is built with the same compiler and flags as the library.
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
flags=$(sed -n 's/^CMAKE_CXX_FLAGS:[A-Z]*=//p' "$build/CMakeCache.txt")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  ${compiler:+-DCMAKE_CXX_COMPILER="$compiler"} -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/plan_example"
