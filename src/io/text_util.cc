// SPDX-License-Identifier: Apache-2.0
#include "io/text_util.h"

#include <algorithm>

namespace tensormem::io {

std::string Quote(std::string_view s) {
  std::string out = "'";
  std::size_t n = 0;
  for (char c : s) {
    if (++n > 40) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

IntParse ParseUnsigned(std::string_view field) {
  IntParse r;
  field = Trim(field);
  if (field.empty()) {
    r.error = "empty";
    return r;
  }
  if (field.front() == '+') field.remove_prefix(1);
  if (!field.empty() && field.front() == '-') {
    // A negative number is "negative"; anything else starting with '-' is not a number.
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    const bool number = p == field.data() + field.size() &&
                        (ec == std::errc() || ec == std::errc::result_out_of_range);
    r.error = number ? (v == 0 && ec == std::errc() ? "" : "negative") : "not a number";
    if (number && v == 0 && ec == std::errc()) {
      r.ok = true;
      r.value = 0;
    }
    return r;
  }
  auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), r.value);
  if (ec == std::errc::result_out_of_range) {
    r.error = "too large for 64 bits";
    return r;
  }
  if (ec != std::errc() || p != field.data() + field.size()) {
    r.error = "not a number";
    return r;
  }
  r.ok = true;
  return r;
}

namespace {

// The quoted field opening at line[i] ('"'); i ends after the field and the
// blanks behind it. A field with "" escapes is unescaped into *unescaped
// (reserved once, to the line's length: the views into it stay valid).
bool SplitQuotedField(std::string_view line, std::size_t& i, std::vector<std::string_view>* fields,
                      std::string* unescaped, bool& reserved, std::string* error) {
  const std::size_t start = ++i;
  std::size_t escaped_start = std::string::npos;  // where this field starts in *unescaped
  bool closed = false;
  while (i < line.size()) {
    if (line[i] == '"') {
      if (i + 1 < line.size() && line[i + 1] == '"') {
        if (escaped_start == std::string::npos) {
          if (!reserved) unescaped->reserve(line.size());
          reserved = true;
          escaped_start = unescaped->size();
          unescaped->append(line.substr(start, i - start));
        }
        *unescaped += '"';
        i += 2;
        continue;
      }
      closed = true;
      break;
    }
    if (escaped_start != std::string::npos) *unescaped += line[i];
    ++i;
  }
  if (!closed) {
    *error = "unterminated quoted field";
    return false;
  }
  if (escaped_start == std::string::npos)
    fields->push_back(line.substr(start, i - start));
  else
    fields->push_back(std::string_view(*unescaped).substr(escaped_start));
  ++i;  // the closing quote
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  if (i < line.size() && line[i] != ',') {
    *error = "text after a closing quote";
    return false;
  }
  return true;
}

}  // namespace

// Splits one CSV line. Fields may be double-quoted ("" escapes a quote).
bool SplitCsv(std::string_view line, std::vector<std::string_view>* fields, std::string* unescaped,
              std::string* error) {
  fields->clear();
  unescaped->clear();
  bool reserved = false;  // *unescaped reserved to the line's length
  std::size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      if (!SplitQuotedField(line, i, fields, unescaped, reserved, error)) return false;
    } else {
      const std::size_t start = i;
      const std::size_t comma = line.find(',', i);
      i = comma == std::string_view::npos ? line.size() : comma;
      fields->push_back(io::Trim(line.substr(start, i - start)));
    }
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return true;
}

CsvLines::LineEnd CsvLines::AppendLine() {
  // istream::getline into a fixed piece: a line longer than the record
  // limit is never held whole (std::getline would grow without bound).
  char piece[1 << 16];
  bool any = false;
  while (true) {
    in_.getline(piece, sizeof piece);
    const auto got = static_cast<std::size_t>(in_.gcount());
    if (in_.bad()) return LineEnd::kReadError;
    const bool ended = !in_.fail() && !in_.eof();  // the '\n' was read (and counted in gcount)
    text_.append(piece, ended ? got - 1 : got);
    any = any || got > 0;
    if (text_.size() > kMaxCsvRecordBytes) return LineEnd::kTooLong;
    if (ended) return LineEnd::kLine;
    if (in_.eof()) return any ? LineEnd::kLine : LineEnd::kEnd;
    in_.clear();  // the piece filled up: the line goes on
  }
}

namespace {

// Follows the quotes of `s` from state `open` (a quoted field is open): a
// quote opens or closes a field, "" inside one is an escaped quote.
// `opened` is set to `line` where a field opens.
void FollowQuotes(std::string_view s, std::size_t line, bool* open, std::size_t* opened) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '"') continue;
    if (*open && i + 1 < s.size() && s[i + 1] == '"') {
      ++i;
      continue;
    }
    *open = !*open;
    if (*open) *opened = line;
  }
}

}  // namespace

Status CsvLines::JoinQuotedLines(std::size_t first_line) {
  // A quoted field may hold a line break (an id with a newline, as the
  // writer quotes it): while a quote is open the record goes on. Each
  // line's quotes are followed once (linear in the record).
  bool open = false;
  std::size_t opened = first_line;
  FollowQuotes(text_, first_line, &open, &opened);
  auto at = [&](std::size_t line, const std::string& what) {
    line_ = line;
    return Error(what);
  };
  while (open) {
    const std::size_t from = text_.size();
    text_ += '\n';
    switch (AppendLine()) {
      case LineEnd::kLine: break;
      case LineEnd::kEnd:
        text_.resize(from);
        return at(opened, "unterminated quoted field: the quote opened on this line is never closed");
      case LineEnd::kTooLong:
        return at(opened, "a quoted field opened on this line is not closed within " +
                              std::to_string(kMaxCsvRecordBytes) + " bytes (the longest CSV record)");
      case LineEnd::kReadError: return Error("read error");
    }
    ++line_;
    FollowQuotes(std::string_view(text_).substr(from + 1), line_, &open, &opened);
  }
  return Status::Ok();
}

Result<bool> CsvLines::Next(std::vector<std::string_view>* fields, std::size_t expected_fields) {
  while (true) {
    text_.clear();
    const LineEnd end = AppendLine();
    if (end == LineEnd::kEnd) return false;
    ++line_;  // (a read error names the line it was reading)
    if (end == LineEnd::kReadError) return Error("read error");
    if (text_.find('\0') != std::string::npos) return Error("NUL byte: not a text (CSV) file");
    if (end == LineEnd::kTooLong)
      return Error("line longer than " + std::to_string(kMaxCsvRecordBytes) + " bytes (the longest CSV record)");
    if (line_ == 1 && text_.starts_with("\xef\xbb\xbf")) text_.erase(0, 3);  // a BOM
    if (Trim(text_).empty()) continue;
    const std::size_t first_line = line_;
    TM_RETURN_IF_ERROR(JoinQuotedLines(first_line));
    if (text_.find('\0') != std::string::npos) {
      line_ = first_line;
      return Error("NUL byte: not a text (CSV) file");
    }
    if (!SplitCsv(text_, fields, &unescaped_, &error_)) return Error(error_);
    if (expected_fields > 0 && fields->size() != expected_fields)
      return Error("expected " + std::to_string(expected_fields) +
                   " fields (as in the header), found " + std::to_string(fields->size()));
    return true;
  }
}

Status CsvLines::Error(const std::string& what) const {
  return InvalidArgument(std::string(source_) + ":" + std::to_string(line_) + ": " + what);
}

namespace {

// The length of the UTF-8 sequence at s[i] when it is well-formed (no
// overlong form, no surrogate, at most U+10FFFF) and its code point is a
// character XML allows; 0 otherwise.
std::size_t XmlCharLength(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  auto continuation = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return byte(k) >= lo && byte(k) <= hi;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf) return continuation(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const unsigned lo = b0 == 0xe0 ? 0xa0 : 0x80, hi = b0 == 0xed ? 0x9f : 0xbf;  // overlong, surrogates
    if (!continuation(1, lo, hi) || !continuation(2)) return 0;
    // U+FFFE and U+FFFF are no XML characters.
    return b0 == 0xef && byte(1) == 0xbf && byte(2) >= 0xbe ? 0 : 3;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const unsigned lo = b0 == 0xf0 ? 0x90 : 0x80, hi = b0 == 0xf4 ? 0x8f : 0xbf;  // overlong, > U+10FFFF
    return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string MarkupEscape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += '?';
          break;
        }
        if (const std::size_t n = XmlCharLength(s, i); n > 0) {
          out.append(s.substr(i, n));
          i += n;
          continue;
        }
        out += "\xef\xbf\xbd";  // U+FFFD for each byte that is not one of a character
    }
    ++i;
  }
  return out;
}

}  // namespace tensormem::io
