#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every GPU measurement of the vmm allocator and the PyTorch plug-in in one
# device call (about 6 minutes on an H200; each step has its own time cap so
# the later ones still run). Run scripts/gpu_prepare.sh here first and carry
# .gpu; logs go to $OUT (or out/):
#   main.log       everything below, with the elapsed seconds
#   build.log      configure and build (carried prefix, no ONNX, no benchmarks)
#   vmm_cuda.txt   every shared trace: vmm, bfc_compact, bfc on the device
#                  (cold and warm passes), then vmm with a handle per granule
#                  (the H200 baseline of 2026-11-27), with handles of up to 32
#                  granules and with growth slack 0.05
#   vmm_dynamic.txt  the dynamic traces of bench/traces (tune, heldout): vmm
#                  and bfc_compact on the device, then vmm with a small space
#                  (--vmm-small 1048576) and with --vmm-protect-refaulted
#                  (cold and warm passes)
#   e2e.jsonl      GPT-2 training (varying length) and generation with the
#                  plug-in, against default and expandable, one process each
#   san_*.log      the CUDA tests under compute-sanitizer memcheck
# PyTorch's caching allocator replays the same traces (default, expandable)
# into main.log. Usage: bench/gpu/run_all.sh
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
gcc --version | head -1; nvcc --version | tail -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
mkdir -p /tmp/traces
for t in .gpu/shared/traces/*.csv .gpu/shared/traces/*.csv.gz; do
  case "$t" in *.gz) zcat "$t" >"/tmp/traces/$(basename "$t" .gz)" ;; *) cp "$t" /tmp/traces/ ;; esac
done
# PyTorch's replay extension compiles beside our build (no traces: compile only).
(timeout 300 python3 .gpu/shared/gpu/torch_replay.py >/tmp/ext.log 2>&1; echo "extension rc $?" >>/tmp/ext.log) &
ext=$!
stamp configure and build
build_for_device
stamp CUDA tests
timeout 90 "$build/tests/allocators/allocators_test" --gtest_filter='Cuda*:*Vmm*:VirtualMemory*:*DeviceScenario*' 2>&1 |
  grep -vE "^\[ RUN|^$" | tail -40
timeout 60 "$build/tests/allocators/torch_plugin_test" 2>&1 | grep -vE "^\[ RUN|^$" | tail -10
timeout 60 python3 bench/gpu/record_stream_check.py "$build/plugins/torch/libtensormem_torch.so" 2>&1 | tail -3
stamp "our replays on cuda"
timeout 150 research/figures/vmm_figures.sh "$build" 3 cuda 2>&1 | tee "$out/vmm_cuda.txt"
for flags in "--vmm-max-handle 1" "--vmm-max-handle 32" "--vmm-growth-slack 0.05"; do
  echo "== vmm $flags" | tee -a "$out/vmm_cuda.txt"
  for t in /tmp/traces/*.csv; do
    timeout 60 "$build/tools/tensormem/tensormem" replay "$t" -a vmm -r 3 --device cuda $flags |
      grep -E "^vmm|warm pass" | tee -a "$out/vmm_cuda.txt"
  done
done
stamp "dynamic traces: vmm, default, --vmm-small 1048576 and --vmm-protect-refaulted"
for t in bench/traces/tune/*.csv.gz bench/traces/heldout/*.csv.gz; do
  for flags in "" "--vmm-small 1048576" "--vmm-protect-refaulted"; do
    echo "== $(basename "$(dirname "$t")")/$(basename "$t") vmm $flags" | tee -a "$out/vmm_dynamic.txt"
    # shellcheck disable=SC2086  # $flags is empty or one option with its value
    timeout 30 "$build/tools/tensormem/tensormem" replay "$t" -a vmm,bfc_compact -r 3 --device cuda $flags |
      grep -E "^vmm|^bfc_compact|warm pass" | tee -a "$out/vmm_dynamic.txt"
  done
done
wait $ext
tail -2 /tmp/ext.log
stamp "PyTorch replays"
timeout 90 python3 .gpu/shared/gpu/torch_replay.py /tmp/traces/*.csv 2>&1 | tail -12
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 90 python3 .gpu/shared/gpu/torch_replay.py /tmp/traces/*.csv \
  2>&1 | tail -12
stamp "end to end"
plugin=$build/plugins/torch/libtensormem_torch.so
for w in gpt2_train_varlen gpt2_medium_generate; do
  for a in default expandable tensormem; do
    timeout 80 python3 bench/gpu/plugin_e2e.py "$w" "$a" "$plugin" 2>&1 | tail -1 >>"$out/e2e.jsonl"
    stamp "$w $a"
  done
done
TENSORMEM_VMM_GROWTH_SLACK=0.05 timeout 80 python3 bench/gpu/plugin_e2e.py gpt2_train_varlen tensormem "$plugin" 2>&1 |
  tail -1 >>"$out/e2e.jsonl"
python3 - "$out/e2e.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        print("not JSON:", line[:300]); continue
    print("%-22s %-11s %-28s median step %.4f s, peak reserved %s, nvidia-smi %s MiB" % (
        r["workload"], r["allocator"], json.dumps(r.get("settings", {}))[:28], r["step_seconds_median"],
        r.get("peak_reserved"), r.get("nvidia_smi_used_mib")))
PY
stamp compute-sanitizer
for t in "allocators_test --gtest_filter=Cuda*" "torch_plugin_test"; do
  set -- $t
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/allocators/$1" "${@:2}" \
    >"$out/san_$1.log" 2>&1
  echo "memcheck $t: exit $?"
  grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/san_$1.log" | tail -3
done
stamp done
