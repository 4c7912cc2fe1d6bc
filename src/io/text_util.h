// SPDX-License-Identifier: Apache-2.0
// Small text helpers shared by the readers (internal).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <istream>
#include <vector>

#include "tensormem/status.h"

namespace tensormem::io {

inline std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// ASCII case-insensitive equality, without a copy (the readers match header
// names and trace actions with it, the latter once per line).
inline bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Shortened, printable copy of an offending value for error messages.
std::string Quote(std::string_view s);
// Text for SVG/HTML: <, >, &, " as entities; control bytes as '?'; a byte
// that is not part of well-formed UTF-8 for a character XML allows (bad
// bytes, overlong forms, surrogates, U+FFFE, U+FFFF) as U+FFFD, so the SVG
// stays well-formed XML whatever the ids hold.
std::string MarkupEscape(std::string_view s);

// Parses a whole field as a decimal integer; nullopt + reason on failure.
struct IntParse {
  bool ok = false;
  std::uint64_t value = 0;
  std::string error;  // "not a number", "negative", "too large"
};
IntParse ParseUnsigned(std::string_view field);

// Splits one CSV line into trimmed fields. Fields may be double-quoted (""
// escapes a quote). The fields view `line`, or `unescaped` for a quoted field
// that holds "" (so both must outlive them); no copy otherwise, as this runs
// once per line of files with millions of lines. False + reason on a
// malformed line.
bool SplitCsv(std::string_view line, std::vector<std::string_view>* fields, std::string* unescaped,
              std::string* error);

// The longest CSV record the readers take, quoted line breaks included:
// memory stays bounded by it whatever the input (a line of gigabytes, a
// quote never closed), and no field of a valid file comes near it.
inline constexpr std::size_t kMaxCsvRecordBytes = std::size_t{1} << 20;

// Reads a CSV stream line by line: drops a UTF-8 byte-order mark at the
// start of the file, skips blank lines, splits fields, and (when told how
// many the header had) checks each line has that many. Errors name the
// source and the line (for a quote never closed, the line it opened on).
class CsvLines {
 public:
  CsvLines(std::istream& in, std::string_view source) : in_(in), source_(source) {}
  // The next non-blank line's fields: true, false at the end, or an error.
  // The fields view this reader's line: valid until the next call.
  Result<bool> Next(std::vector<std::string_view>* fields, std::size_t expected_fields = 0);
  std::size_t line() const { return line_; }
  Status Error(const std::string& what) const;  // "source:line: what"

 private:
  enum class LineEnd { kLine, kEnd, kTooLong, kReadError };
  // Appends the next physical line (without its '\n') to text_, reading no
  // further than kMaxCsvRecordBytes into the record.
  LineEnd AppendLine();
  // Continues text_ (the record starting on `first_line`) over the lines a
  // quoted field spans; an error names the line where a quote never closed
  // opened.
  Status JoinQuotedLines(std::size_t first_line);

  std::istream& in_;
  std::string_view source_;
  std::string text_, unescaped_, error_;
  std::size_t line_ = 0;
};

}  // namespace tensormem::io
