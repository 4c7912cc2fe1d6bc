#!/usr/bin/env bash
# Every GPU measurement of the vmm allocator and the PyTorch plug-in, in three
# phases that each fit one device call (10 minutes); logs go to $OUT (or out/).
# Run scripts/gpu_prepare.sh here first and carry .gpu. A phase builds first
# when build-gpu is missing (a fresh machine).
#   build:  configure (carried prefix, no ONNX, no benchmarks), build, ctest,
#           the CUDA tests under compute-sanitizer (memcheck, racecheck)
#   replay: every shared trace: vmm, bfc_compact, bfc on the device (cold and
#           warm passes) and PyTorch's caching allocator default and expandable
#   e2e:    GPT-2 training (varying length) and generation with the plug-in,
#           against default and expandable, one process each
set -uo pipefail
cd "$(dirname "$0")/../.."
phase=${1:?usage: bench/gpu/run_all.sh build|replay|e2e}
out=${OUT:-out}
mkdir -p "$out"
export TENSORMEM_SHARED_DIR=$PWD/.gpu/shared PYTHONUNBUFFERED=1
build=build-gpu
configure_and_build() {
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSORMEM_WERROR=ON \
    -DCMAKE_PREFIX_PATH="$PWD/.gpu/prefix" -DTENSORMEM_WITH_ONNX=OFF -DTENSORMEM_BUILD_BENCHMARKS=OFF \
    -DTENSORMEM_SHARED_DIR="$TENSORMEM_SHARED_DIR" &&
    cmake --build "$build" -j "$(nproc)"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [ ! -x "$build/tools/tensormem/tensormem" ]; then
  configure_and_build > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
fi
case "$phase" in
  build)
    ctest --test-dir "$build" -j 8 --output-on-failure > "$out/ctest.log" 2>&1
    tail -5 "$out/ctest.log"; grep -E "Skipped|Failed|\*\*\*" "$out/ctest.log" | head -20
    for t in "allocators_test --gtest_filter=Cuda*:*Vmm*" "torch_plugin_test"; do
      for tool in memcheck racecheck; do
        set -- $t
        echo "== compute-sanitizer --tool $tool $*" | tee -a "$out/sanitizer.log"
        compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/tests/allocators/$1" "${@:2}" \
          >> "$out/sanitizer.log" 2>&1
        echo "exit $?" | tee -a "$out/sanitizer.log"
        grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/sanitizer.log" | tail -3
      done
    done ;;
  replay)
    scripts/vmm_figures.sh "$build" 3 cuda 2>&1 | tee "$out/vmm_cuda.txt"
    mkdir -p /tmp/traces
    for t in .gpu/shared/traces/*.csv .gpu/shared/traces/*.csv.gz; do
      case "$t" in *.gz) zcat "$t" > "/tmp/traces/$(basename "$t" .gz)" ;; *) cp "$t" /tmp/traces/ ;; esac
    done
    python3 .gpu/shared/gpu/torch_replay.py /tmp/traces/*.csv 2>&1 | tee "$out/torch_default.txt"
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 .gpu/shared/gpu/torch_replay.py /tmp/traces/*.csv \
      2>&1 | tee "$out/torch_expandable.txt" ;;
  e2e)
    for w in gpt2_train_varlen gpt2_medium_generate; do
      for a in default expandable tensormem; do
        timeout 200 python3 bench/gpu/plugin_e2e.py "$w" "$a" "$build/plugins/torch/libtensormem_torch.so" 2>&1 |
          tail -3 | tee -a "$out/e2e.jsonl"
      done
    done ;;
  *) echo "unknown phase $phase (build|replay|e2e)"; exit 2 ;;
esac
