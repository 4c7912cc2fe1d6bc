// SPDX-License-Identifier: Apache-2.0
#include "reader_fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tensormem;
  return fuzz::FuzzOne(
      data, size,
      [](std::istream& in, const ReadLimits& limits) { return ReadProblemCsv(in, "fuzz.csv", limits); },
      [](std::ostream& out, const Problem& p) { return WriteProblemCsv(out, p); });
}
