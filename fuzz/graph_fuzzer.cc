// SPDX-License-Identifier: Apache-2.0
#include "graph_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tensormem::fuzz::FuzzGraphOne(data, size);
  return 0;
}
