#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a temporary prefix, then builds and runs
# examples/consumer against it twice: with find_package(tensormem), and with
# the flags of the installed pkg-config file (tensormem.pc).
set -euo pipefail
build=$1 source=$2
# The consumer is built with the same compiler and flags as the library.
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
flags=$(sed -n 's/^CMAKE_CXX_FLAGS:[A-Z]*=//p' "$build/CMakeCache.txt")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in include/tensormem/version.h share/doc/tensormem/LICENSE share/doc/tensormem/NOTICE; do
  [ -f "$work/prefix/$f" ] || { echo "the install has no $f" >&2; exit 1; }
done
cmake -S "$source/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  ${compiler:+-DCMAKE_CXX_COMPILER="$compiler"} -DCMAKE_CXX_FLAGS="$flags" >/dev/null
cmake --build "$work/consumer" >/dev/null
echo -n "find_package consumer: "
"$work/consumer/plan_example"
pc=$(find "$work/prefix" -name tensormem.pc | head -1)
[ -n "$pc" ] || { echo "the install has no tensormem.pc" >&2; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
# shellcheck disable=SC2046,SC2086  # pkg-config and the flags print several words on purpose
${compiler:-c++} $flags "$source/examples/consumer/plan_example.cc" -o "$work/pc_example" \
  $(pkg-config --cflags tensormem) $(pkg-config --libs --static tensormem)
echo -n "pkg-config consumer: "
"$work/pc_example"
