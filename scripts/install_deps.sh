#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages tensormem needs that are missing (as root).
# Nothing is downloaded at build or run time beyond these packages.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config  # toolchain (pkg-config: the install test)
  libgtest-dev libbenchmark-dev               # tests, benchmarks
  libcli11-dev nlohmann-json3-dev             # CLI, JSON
  libonnx-dev libprotobuf-dev protobuf-compiler  # ONNX import
  libjemalloc-dev libmimalloc-dev             # allocator peers for trace replay
  pybind11-dev python3-dev python3-numpy python3-pytest  # the Python package and its tests
  chromium                                    # the HTML map's headless-browser check
  zlib1g-dev                                  # .csv.gz traces and problems
  clang-16 libc++-16-dev libc++abi-16-dev     # the second build of the test command
  clang-14                                    # Debian 12's default clang: the test command's syntax check
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "tensormem: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "tensormem: run as root (or install those packages) first" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
