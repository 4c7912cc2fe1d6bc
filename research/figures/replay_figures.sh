#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replays every trace in the shared folder through every allocator (BFC with
# TensorFlow's defaults and with the compact preset) and prints one table per
# trace: the figures of docs/design/allocators.md.
# Usage: research/figures/replay_figures.sh [build-dir] [repetitions]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
reps=${2:-5}
cli="$build/tools/tensormem/tensormem"
traces=${TENSORMEM_SHARED_DIR:-../shared}/traces
for trace in "$traces"/*.csv; do
  "$cli" replay "$trace" -r "$reps"   # every allocator, bfc and bfc_compact included
  echo
done
