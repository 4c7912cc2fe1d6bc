// SPDX-License-Identifier: Apache-2.0
#include "planner_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tensormem::fuzz::FuzzPlannerOne(data, size);
  return 0;
}
