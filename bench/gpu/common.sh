# SPDX-License-Identifier: Apache-2.0
# Sourced by the device scripts (run_all.sh, run_e2e.sh): the output folder
# ($OUT, or out/), the carried prefix and traces (.gpu, from
# scripts/gpu_prepare.sh), elapsed-time stamps, everything printed also
# going to $out/main.log, and the build.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${OUT:-out}
mkdir -p "$out"
export TENSORMEM_SHARED_DIR=$PWD/.gpu/shared PYTHONUNBUFFERED=1
build=build-gpu
t0=$(date +%s)
stamp() { echo "[t=$(($(date +%s) - t0))s] $*"; }
exec > >(tee -a "$out/main.log") 2>&1

# Configures against the carried prefix (no ONNX, no benchmarks) and builds
# the CLI, the allocator tests and the plug-in into $build (log:
# $out/build.log); stops the script when that fails.
build_for_device() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSORMEM_WERROR=ON \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu/prefix" -DTENSORMEM_WITH_ONNX=OFF -DTENSORMEM_BUILD_BENCHMARKS=OFF \
    -DTENSORMEM_SHARED_DIR="$TENSORMEM_SHARED_DIR" >"$out/build.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target tensormem_cli allocators_test torch_plugin_test tensormem_torch \
      >>"$out/build.log" 2>&1
  local rc=$?
  stamp "build rc $rc"
  [ $rc = 0 ] || { tail -40 "$out/build.log"; exit 1; }
}
