// SPDX-License-Identifier: Apache-2.0
// Enum from its name, for every enum with a Name() and a list of all its
// values: the error lists the known names from that same list, so adding a
// value cannot leave a stale message behind.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tensormem/status.h"

namespace tensormem::internal {

// "a, b, c": every name of the list, for errors and --help.
template <typename Enum>
std::string JoinNames(std::span<const Enum> all) {
  std::string out;
  for (Enum e : all) {
    if (!out.empty()) out += ", ";
    out += Name(e);
  }
  return out;
}

// `what`: the noun in the error, e.g. "offsets strategy".
template <typename Enum>
Result<Enum> ParseName(std::string_view name, std::span<const Enum> all, std::string_view what) {
  for (Enum e : all)
    if (Name(e) == name) return e;
  return InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) +
                         "' (known: " + JoinNames(all) + ")");
}

}  // namespace tensormem::internal
