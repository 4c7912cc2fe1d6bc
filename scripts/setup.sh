#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command on a fresh Debian 12 machine (as root): installs what is
# missing, builds tensormem, and plans the bundled example network.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
example=examples/resnet18.onnx
[ -f "$example" ] || example=examples/five_buffers.csv
echo "+ build/tools/tensormem/tensormem plan $example --strategy all"
build/tools/tensormem/tensormem plan "$example" --strategy all
