#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gathers what the lent GPU machine lacks into .gpu/ (ignored by git), to be
# named in the device tool's `carry`: the headers, static libraries and CMake
# config files of GoogleTest, nlohmann-json and CLI11 and zlib's header (that
# machine runs Ubuntu without our Debian packages and has no network), and the
# shared traces and GPU scripts (../shared does not travel with the tree).
# Then on the device: bench/gpu/run_all.sh, in one call (see its header).
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${TENSORMEM_SHARED_DIR:-../shared}
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
rm -rf .gpu
p=.gpu/prefix
mkdir -p "$p/include" "$p/lib/$multiarch/cmake" "$p/share/cmake" .gpu/shared
cp -r /usr/include/gtest /usr/include/gmock /usr/include/nlohmann /usr/include/CLI "$p/include/"
cp /usr/include/zlib.h /usr/include/zconf.h "$p/include/"
cp /usr/lib/"$multiarch"/libgtest*.a /usr/lib/"$multiarch"/libgmock*.a "$p/lib/$multiarch/"
# The real file under the linker's name: its SONAME (libz.so.1) is what runs there.
cp -L /usr/lib/"$multiarch"/libz.so "$p/lib/$multiarch/libz.so"
cp -r /usr/lib/"$multiarch"/cmake/GTest "$p/lib/$multiarch/cmake/"
cp -r /usr/share/cmake/nlohmann_json /usr/share/cmake/CLI11 "$p/share/cmake/"
cp -r "$shared/traces" "$shared/gpu" .gpu/shared/
du -sh .gpu
echo "carry: [\".gpu\"]; on the device: bench/gpu/run_all.sh (one call)"
