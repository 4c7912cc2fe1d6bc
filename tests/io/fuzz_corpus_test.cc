// SPDX-License-Identifier: Apache-2.0
// The fuzzers' checks (fuzz/reader_fuzz_common.h) over their seed corpus and
// every prefix of each seed, with whatever compiler builds the tests: the
// fuzzers themselves need clang's libFuzzer, so without this a change that
// breaks their checks (as item 17's power-of-two alignment once did) would
// only show in the next fuzzing session.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../../fuzz/reader_fuzz_common.h"
#include "../../fuzz/trace_fuzz_common.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Seeds(const std::string& kind) {
  std::vector<std::string> seeds;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(TENSORMEM_SOURCE_DIR) / "fuzz" / "corpus" / kind)) {
    std::ifstream in(e.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}

template <typename Read, typename Write>
void ReplayCorpus(const std::string& kind, Read read, Write write) {
  fuzz::on_check_failure = [](const char* what) { throw std::runtime_error(what); };
  const std::vector<std::string> seeds = Seeds(kind);
  ASSERT_FALSE(seeds.empty()) << "no seeds in fuzz/corpus/" << kind;
  std::size_t inputs = 0;
  for (const std::string& seed : seeds)
    for (std::size_t len = 0; len <= seed.size(); ++len, ++inputs) {
      const auto* data = reinterpret_cast<const std::uint8_t*>(seed.data());
      try {
        fuzz::FuzzOne(data, len, read, write);
      } catch (const std::runtime_error& e) {
        ADD_FAILURE() << "fuzz check failed: " << e.what() << " on " << testing::PrintToString(seed.substr(0, len));
      }
    }
  EXPECT_GT(inputs, seeds.size());
}

TEST(FuzzCorpus, CsvSeedsAndTheirPrefixesPassTheFuzzChecks) {
  ReplayCorpus(
      "csv",
      [](std::istream& in, const ReadLimits& limits) { return ReadProblemCsv(in, "fuzz.csv", limits); },
      [](std::ostream& out, const Problem& p) { return WriteProblemCsv(out, p); });
}

TEST(FuzzCorpus, JsonSeedsAndTheirPrefixesPassTheFuzzChecks) {
  ReplayCorpus(
      "json",
      [](std::istream& in, const ReadLimits& limits) { return ReadProblemJson(in, "fuzz.json", limits); },
      [](std::ostream& out, const Problem& p) { return WriteProblemJson(out, p); });
}

TEST(FuzzCorpus, TraceSeedsAndTheirPrefixesPassTheFuzzChecks) {
  fuzz::on_check_failure = [](const char* what) { throw std::runtime_error(what); };
  const std::vector<std::string> seeds = Seeds("trace");
  ASSERT_FALSE(seeds.empty()) << "no seeds in fuzz/corpus/trace";
  std::size_t inputs = 0, accepted = 0;
  for (const std::string& seed : seeds)
    for (std::size_t len = 0; len <= seed.size(); ++len, ++inputs) {
      const std::string prefix = seed.substr(0, len);
      std::istringstream in(prefix);
      accepted += ReadTrace(in, "t.csv").ok();
      try {
        fuzz::FuzzTraceOne(reinterpret_cast<const std::uint8_t*>(prefix.data()), prefix.size());
      } catch (const std::runtime_error& e) {
        ADD_FAILURE() << "fuzz check failed: " << e.what() << " on " << testing::PrintToString(prefix);
      }
    }
  EXPECT_GT(inputs, seeds.size());
  EXPECT_GT(accepted, seeds.size()) << "the seeds' prefixes should reach the replay, not only the errors";
}

}  // namespace
}  // namespace tensormem
