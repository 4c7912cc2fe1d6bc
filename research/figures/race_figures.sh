#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The racing searches' figures of docs/design/solver.md ("Racing searches"): the
# MiniMalloc challenging instances minimised with each thread count, one
# run at a time (a race needs the machine's cores to itself).
# Usage: research/figures/race_figures.sh [build-dir] [seconds] [thread counts...]
# e.g. research/figures/race_figures.sh build 60 1 2        (this 2-core host)
#      research/figures/race_figures.sh build 60 1 4 8 16   (a 16-core machine)
# TENSORMEM_RACE_INSTANCES="D J" limits the instances (default: A to K).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
seconds=${2:-60}
shift $(( $# < 2 ? $# : 2 ))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2)
cli="$build/tools/tensormem/tensormem"
dir=${TENSORMEM_SHARED_DIR:-../shared}/benchmarks/minimalloc
printf '%-5s %7s %-9s %12s %12s %7s %8s %12s\n' inst threads status height bound gap% seconds nodes
for x in ${TENSORMEM_RACE_INSTANCES:-A B C D E F G H I J K}; do
  for t in "${counts[@]}"; do
    "$cli" solve "$dir/$x.1048576.csv" --time-limit "$seconds" --threads "$t" --json |
      python3 -c '
import json, sys
j = json.load(sys.stdin)
print("%-5s %7d %-9s %12s %12d %7.2f %8.2f %12d" % (sys.argv[1], j["threads"], j["status"], j["height"],
      j["lower_bound"], 100 * (j["gap"] or 0), j["seconds"], j["nodes"]))
' "$x"
  done
done
