// SPDX-License-Identifier: Apache-2.0
// Shared body of the reader fuzzers: whatever the bytes, the reader returns a
// Problem or an error (never crashes, hangs or throws); an accepted problem
// plans to a plan the validator accepts, and writing it back and reading it
// again gives the same problem.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "tensormem/tensormem.h"

namespace tensormem::fuzz {

// What a failed check does: abort (libFuzzer records the input); the corpus
// replay test (tests/io/fuzz_corpus_test.cc) throws instead.
inline void (*on_check_failure)(const char* what) = [](const char* what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what);
  std::abort();
};

inline void Check(bool ok, const char* what) {
  if (!ok) on_check_failure(what);
}

template <typename Read, typename Write>
int FuzzOne(const std::uint8_t* data, std::size_t size, Read read, Write write) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  ReadLimits limits;
  limits.max_buffers = 2000;  // keep each run fast
  Result<Problem> problem = read(in, limits);
  if (!problem.ok()) {
    Check(!problem.status().message().empty(), "errors carry a message");
    return 0;
  }
  Check(CheckProblem(*problem).ok(), "accepted problems are well formed");
  PlanParams params;
  params.alignment = std::uint64_t{1} << (size % 7);  // a power of two (issue 12 item 17)
  Result<OffsetsPlan> plan = PlanOffsets(*problem, OffsetsStrategy::kGreedyBySize, params);
  if (plan.ok()) {
    Check(ValidateOffsetsPlan(*problem, *plan, params.alignment, false).ok(), "plans validate");
  } else {
    bool fixed = false;
    for (const Buffer& b : problem->buffers) fixed |= b.fixed_offset.has_value();
    Check(plan.status().code() == StatusCode::kOutOfRange ||
              (fixed && plan.status().code() == StatusCode::kInvalidArgument),
          "only overflow, or fixed offsets against the alignment, may stop planning");
  }
  // Round trip without offsets (fixed offsets stay fixed).
  std::ostringstream out;
  Check(write(out, *problem).ok(), "writing succeeds");
  std::istringstream again(out.str());
  Result<Problem> reread = read(again, limits);
  Check(reread.ok(), "what we write we can read");
  Check(reread->buffers == problem->buffers, "round trip keeps every buffer");
  return 0;
}

}  // namespace tensormem::fuzz
