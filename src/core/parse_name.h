// Enum from its name, for every enum with a Name() and a list of all its
// values: the error lists the known names from that same list, so adding a
// value cannot leave a stale message behind.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "tensormem/status.h"

namespace tensormem::internal {

// `what`: the noun in the error, e.g. "offsets strategy".
template <typename Enum>
Result<Enum> ParseName(std::string_view name, std::span<const Enum> all, std::string_view what) {
  std::string known;
  for (Enum e : all) {
    if (Name(e) == name) return e;
    if (!known.empty()) known += ", ";
    known += Name(e);
  }
  return InvalidArgument("unknown " + std::string(what) + " '" + std::string(name) +
                         "' (known: " + known + ")");
}

}  // namespace tensormem::internal
