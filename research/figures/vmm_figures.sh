#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The vmm figures of docs/design/allocators.md: every shared trace (plain and
# .csv.gz) through vmm, bfc_compact and glibc malloc in one run each, on the
# host (or --device cuda where a GPU is: then malloc is left out).
# Usage: research/figures/vmm_figures.sh [build-dir] [repetitions] [device] [replay flags...]
# (e.g. --vmm-growth-slack 0.05, or --device-lag 200 for a host device that
# runs 200 trace events behind). The last column counts what a GPU pays
# for, in the cold pass and then the warm pass: handles created (and run
# handles moved whole instead), map calls, synchronisations, fence waits.
# TENSORMEM_FIGURE_RUNS=N replays each trace N times (default 1) and prints
# the fastest of the N per time column: this host's runs vary by up to 30 %
# from one minute to the next, and the fastest is the steadiest figure. The
# counts are exact and the same in every run.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
reps=${2:-3}
device=${3:-host}
shift $(( $# < 3 ? $# : 3 ))
cli="$build/tools/tensormem/tensormem"
traces=${TENSORMEM_SHARED_DIR:-../shared}/traces
allocators=vmm,bfc_compact,malloc
[ "$device" = host ] || allocators=vmm,bfc_compact,bfc
printf '%-36s %-12s %9s %10s %10s %10s %s\n' trace allocator reserved/use ns/op cpu_ns/op warm_ns/op vmm_device_calls
runs=${TENSORMEM_FIGURE_RUNS:-1}
for trace in "$traces"/*.csv "$traces"/*.csv.gz; do
  for ((k = 0; k < runs; k++)); do
    "$cli" replay "$trace" -a "$allocators" -r "$reps" --device "$device" "$@" --json | tr -d '\n'
    echo
  done |
    python3 -c '
import json, sys
runs = [json.loads(line) for line in sys.stdin if line.strip()]
j = runs[0]
name = j["trace"].split("/")[-1]
for r in j["results"]:
    # the fastest run of each time column (the first run gives the rest)
    same = [x for run in runs for x in run["results"] if x["allocator"] == r["allocator"]]
    for key in ("ns_per_op", "cpu_ns_per_op", "warm_ns_per_op"):
        values = [x[key] for x in same if x.get(key) is not None]
        if values: r[key] = min(values)
    v = r.get("vmm")
    w = r.get("vmm_warm")
    extra = "" if not v else ("handles %d (moved %d), maps %d, pages %d, re-stitched %d, syncs %d, fence waits %d; "
                              "warm: handles %d (moved %d), maps %d, syncs %d, fence waits %d") % (
        v["handles_created"], v["handles_moved"], v["map_calls"], v["pages_mapped"], v["pages_restitched"],
        v["synchronizations"], v["event_waits"], w["handles_created"], w["handles_moved"], w["map_calls"],
        w["synchronizations"], w["event_waits"])
    b = r.get("backend")
    if b: extra = "handles %d" % b["handles_created"]
    warm = r.get("warm_ns_per_op")
    # malloc has no ratio when it served the replay from memory held before it
    ratio = r["reserved_over_in_use"]
    print("%-36s %-12s %9s %10.1f %10.1f %10s %s" % (name, r["allocator"], "-" if ratio is None else "%.4f" % ratio,
          r["ns_per_op"], r["cpu_ns_per_op"], "-" if warm is None else "%.1f" % warm, extra))
'
done
