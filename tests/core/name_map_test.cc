// SPDX-License-Identifier: Apache-2.0
// internal::NameMap against std::unordered_map: the same values for the
// same inserts, lookups and assignments, through growth and collisions.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "core/name_map.h"

namespace tensormem::internal {
namespace {

// "t" and the number (appended: GCC 12 warns falsely on "t" + std::to_string).
std::string Name(std::uint64_t k) {
  std::string s = "t";
  s += std::to_string(k);
  return s;
}

TEST(NameMap, AgreesWithUnorderedMap) {
  std::mt19937_64 rng(11);
  // Few distinct short names: many repeats; empty names too.
  std::vector<std::string> names;
  for (int i = 0; i < 5000; ++i) names.push_back(i % 97 == 0 ? std::string() : Name(rng() % 3000));
  NameMap<int> map;
  std::unordered_map<std::string_view, int> expected;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string_view name = names[i];
    if (i % 3 == 0) {
      map.Assign(name, static_cast<int>(i));
      expected[name] = static_cast<int>(i);
    } else {
      const auto [value, inserted] = map.TryEmplace(name, static_cast<int>(i));
      const auto [it, was_inserted] = expected.try_emplace(name, static_cast<int>(i));
      ASSERT_EQ(inserted, was_inserted) << name;
      ASSERT_EQ(*value, it->second) << name;
    }
    ASSERT_EQ(map.size(), expected.size());
  }
  for (int k = 0; k < 4000; ++k) {
    const std::string name = Name(static_cast<std::uint64_t>(k));
    const int* value = map.Find(name);
    const auto it = expected.find(name);
    ASSERT_EQ(value != nullptr, it != expected.end()) << name;
    if (value) {
      EXPECT_EQ(*value, it->second) << name;
    }
  }
}

TEST(NameMap, ReserveKeepsEntriesAndClearEmpties) {
  NameMap<int> map;
  map.Assign("a", 1);
  map.Reserve(1000);
  map.Assign("b", 2);
  ASSERT_NE(map.Find("a"), nullptr);
  EXPECT_EQ(*map.Find("a"), 1);
  EXPECT_EQ(*map.Find("b"), 2);
  EXPECT_EQ(map.Find("c"), nullptr);
  map.Clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.Find("a"), nullptr);
}

}  // namespace
}  // namespace tensormem::internal
