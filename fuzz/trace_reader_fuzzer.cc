// SPDX-License-Identifier: Apache-2.0
#include "trace_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return tensormem::fuzz::FuzzTraceOne(data, size);
}
