// Small text helpers shared by the readers (internal).
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensormem::io {

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Shortened, printable copy of an offending value for error messages.
std::string Quote(std::string_view s);

// Parses a whole field as a decimal integer; nullopt + reason on failure.
struct IntParse {
  bool ok = false;
  std::uint64_t value = 0;
  std::string error;  // "not a number", "negative", "too large"
};
IntParse ParseUnsigned(std::string_view field);

// Splits one CSV line into trimmed fields. Fields may be double-quoted (""
// escapes a quote). False + reason on a malformed line.
bool SplitCsv(std::string_view line, std::vector<std::string>* fields, std::string* error);

}  // namespace tensormem::io
