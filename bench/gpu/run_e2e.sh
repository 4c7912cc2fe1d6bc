#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A shorter device call than run_all.sh: build, the CUDA tests, the plug-in
# end to end (GPT-2 training and generation, default beside tensormem, and
# tensormem at growth slack 0.05), record_stream through the plug-in, vmm replays of three traces on the device,
# and compute-sanitizer on the CUDA tests. Prepare with scripts/gpu_prepare.sh
# and carry .gpu; logs go to $OUT (or out/): main.log, e2e.jsonl, san_*.log.
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
build_for_device
timeout 90 "$build/tests/allocators/allocators_test" --gtest_filter='Cuda*:*Vmm*:VirtualMemory*:*DeviceScenario*' 2>&1 |
  grep -E "FAILED|PASSED|SKIPPED|Failure" | tail -12
timeout 60 "$build/tests/allocators/torch_plugin_test" 2>&1 | grep -E "FAILED|PASSED|Failure" | tail -4
timeout 60 python3 bench/gpu/record_stream_check.py "$build/plugins/torch/libtensormem_torch.so" 2>&1 | tail -3
stamp "end to end"
plugin=$build/plugins/torch/libtensormem_torch.so
for run in "gpt2_train_varlen default" "gpt2_train_varlen tensormem" "gpt2_train_varlen tensormem 0.05" \
  "gpt2_medium_generate default" "gpt2_medium_generate tensormem"; do
  set -- $run
  TENSORMEM_VMM_GROWTH_SLACK=${3:-0} timeout 90 python3 bench/gpu/plugin_e2e.py "$1" "$2" "$plugin" 2>&1 |
    tail -1 >>"$out/e2e.jsonl"
  stamp "$run"
done
python3 - "$out/e2e.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        print("not JSON:", line[:300]); continue
    t = r.get("tensormem") or {}
    print("%-22s %-10s median step %.4f s, peak reserved %s (%.4fx in use), syncs %s, fence waits %s" % (
        r["workload"], r["allocator"], r["step_seconds_median"], r.get("peak_reserved"),
        r["peak_reserved"] / r["peak_in_use"], t.get("synchronizations"), t.get("event_waits")))
PY
stamp "vmm replays"
for t in transformer_ctx128_fullstep.csv gpt2_train_varlen.csv.gz resnet50_train_b128.csv.gz; do
  timeout 60 "$build/tools/tensormem/tensormem" replay ".gpu/shared/traces/$t" -a vmm -r 1 --device cuda |
    grep -A1 -E "^vmm"
done
stamp compute-sanitizer
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/allocators/allocators_test" \
  --gtest_filter='Cuda*' >"$out/san_allocators_test.log" 2>&1
echo "memcheck: exit $?"; grep -E "ERROR SUMMARY" "$out/san_allocators_test.log"
stamp done
