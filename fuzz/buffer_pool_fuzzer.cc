// SPDX-License-Identifier: Apache-2.0
#include "buffer_pool_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tensormem::fuzz::FuzzBufferPoolOne(data, size);
  return 0;
}
