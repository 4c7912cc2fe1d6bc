// SPDX-License-Identifier: Apache-2.0
#include "allocator_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tensormem::fuzz::FuzzAllocatorOne(data, size);
  return 0;
}
