#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds everything (warnings are errors) and runs every test with CTest;
# then the same with clang 16 and libc++ (which catches missing standard
# includes that GCC's headers forgive), without the ONNX importer and the
# benchmarks (their Debian libraries are built for libstdc++), with the
# research tools (research/, so that they cannot rot unnoticed) and without a
# second add_subdirectory consumer; and every source
# through clang 14 (Debian 12's default clang), syntax only.
# Usage: scripts/test.sh [build-dir]   (TENSORMEM_SANITIZE=address,undefined for a sanitizer build;
#        TENSORMEM_CLANG_BUILD=0 skips the clang build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} \
  -DTENSORMEM_WERROR=ON -DTENSORMEM_SANITIZE="${TENSORMEM_SANITIZE:-}" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
if [ "${TENSORMEM_CLANG_BUILD:-1}" = 1 ] && [ -z "${TENSORMEM_SANITIZE:-}" ]; then
  # Debian 12's default clang (14): every source, syntax only (about 2 min on 2 cores).
  python3 scripts/check_clang14.py "$build" --jobs "$jobs"
  if command -v clang++-16 >/dev/null && [ -d /usr/lib/llvm-16/include/c++/v1 ] && [ -d /usr/src/googletest ]; then
    cmake -S . -B "$build-clang" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++-16 \
      -DCMAKE_CXX_FLAGS=-stdlib=libc++ -DTENSORMEM_WERROR=ON -DTENSORMEM_WITH_ONNX=OFF \
      -DTENSORMEM_BUILD_BENCHMARKS=OFF -DTENSORMEM_GTEST_SOURCE=/usr/src/googletest \
      -DTENSORMEM_TEST_SUBDIRECTORY_CONSUMER=OFF -DTENSORMEM_BUILD_RESEARCH=ON
    cmake --build "$build-clang" -j "$jobs"
    ctest --test-dir "$build-clang" --output-on-failure -j "$jobs"
  else
    echo "tensormem: clang-16 / libc++-16 / GoogleTest sources not found: the clang build is skipped"
  fi
fi
