#!/usr/bin/env bash
# Builds everything (warnings are errors) and runs every test with CTest.
# Usage: scripts/test.sh [build-dir]   (TENSORMEM_SANITIZE=address,undefined for a sanitizer build)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE:-Release} \
  -DTENSORMEM_WERROR=ON -DTENSORMEM_SANITIZE="${TENSORMEM_SANITIZE:-}"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs"
