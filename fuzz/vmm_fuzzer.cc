// SPDX-License-Identifier: Apache-2.0
#include "vmm_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tensormem::fuzz::FuzzVmmOne(data, size);
  return 0;
}
