// SPDX-License-Identifier: Apache-2.0
// The CSV splitter every reader uses: fields are views into the line, or into
// the unescaped text for quoted fields holding "", so they must come out as a
// copying splitter would make them, and stay valid together.
#include <istream>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "io/text_util.h"

namespace tensormem::io {
namespace {

// The splitter written plainly, one std::string per field: the reference.
bool SplitCopying(std::string_view line, std::vector<std::string>* fields, std::string* error) {
  fields->clear();
  std::size_t i = 0;
  while (true) {
    std::string cur;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cur += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        cur += line[i++];
      }
      if (!closed) {
        *error = "unterminated quoted field";
        return false;
      }
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i < line.size() && line[i] != ',') {
        *error = "text after a closing quote";
        return false;
      }
    } else {
      const std::size_t start = i;
      while (i < line.size() && line[i] != ',') ++i;
      cur = std::string(Trim(line.substr(start, i - start)));
    }
    fields->push_back(cur);
    if (i >= line.size()) break;
    ++i;
  }
  return true;
}

std::vector<std::string> Split(std::string_view line, std::string* error = nullptr) {
  std::vector<std::string_view> views;
  std::string unescaped, why;
  if (!SplitCsv(line, &views, &unescaped, &why)) {
    if (error != nullptr) *error = why;
    return {"<error>"};
  }
  return {views.begin(), views.end()};
}

TEST(SplitCsv, FieldsAreTrimmedAndQuotedOnesKeepTheirText) {
  EXPECT_EQ(Split("a, b ,\tc\r"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(Split(""), (std::vector<std::string>{""}));
  EXPECT_EQ(Split("a,,"), (std::vector<std::string>{"a", "", ""}));
  EXPECT_EQ(Split("\"a,b\", \" c \" ,d"), (std::vector<std::string>{"a,b", " c ", "d"}));
  // Several escaped fields on one line: the views into the unescaped text
  // must all stay valid (it is reserved once, never reallocated).
  EXPECT_EQ(Split("\"x\"\"y\",\"\"\"\"\"\",plain,\"p\"\"q\"\"r\"\r"),
            (std::vector<std::string>{"x\"y", "\"\"", "plain", "p\"q\"r"}));
}

TEST(SplitCsv, MalformedLinesSayWhy) {
  std::string error;
  EXPECT_EQ(Split("a,\"b", &error), (std::vector<std::string>{"<error>"}));
  EXPECT_EQ(error, "unterminated quoted field");
  EXPECT_EQ(Split("\"b\"x,c", &error), (std::vector<std::string>{"<error>"}));
  EXPECT_EQ(error, "text after a closing quote");
}

TEST(SplitCsv, EqualsTheCopyingSplitterOnRandomLines) {
  std::mt19937_64 rng(20261129);
  const std::string alphabet = "ab\",,  \t\r\"";
  for (int n = 0; n < 20000; ++n) {
    std::string line(rng() % 24, ' ');
    for (char& c : line) c = alphabet[rng() % alphabet.size()];
    std::vector<std::string> expected;
    std::string expected_error, error;
    const bool ok = SplitCopying(line, &expected, &expected_error);
    const std::vector<std::string> got = Split(line, &error);
    if (ok) {
      ASSERT_EQ(got, expected) << "line: " << line;
    } else {
      ASSERT_EQ(got, std::vector<std::string>{"<error>"}) << "line: " << line;
      ASSERT_EQ(error, expected_error) << "line: " << line;
    }
  }
}

TEST(EqualsIgnoringCase, AsciiLettersOnly) {
  EXPECT_TRUE(EqualsIgnoringCase("Allocate", "aLLOCATE"));
  EXPECT_TRUE(EqualsIgnoringCase("", ""));
  EXPECT_FALSE(EqualsIgnoringCase("free", "fre"));
  EXPECT_FALSE(EqualsIgnoringCase("[", "{"));  // 0x5b and 0x7b differ by 0x20 but are no letters
  EXPECT_FALSE(EqualsIgnoringCase("@", "`"));
  EXPECT_FALSE(EqualsIgnoringCase("\xc9", "\xe9"));  // Latin-1 E/e acute: bytes, not letters
}

// Also: a byte-order mark is dropped from the first line only (Csv.* checks
// one elsewhere stays text).
TEST(CsvLines, QuotedLineBreaksJoinLinesAndErrorsNameTheFirst) {
  std::istringstream in("\xef\xbb\xbfh1,h2\n\n\"a\nb\",c\nd,\xef\xbb\xbf" "e\n\"open\n");
  CsvLines lines(in, "t.csv");
  std::vector<std::string_view> fields;
  ASSERT_TRUE(*lines.Next(&fields));
  EXPECT_EQ(fields, (std::vector<std::string_view>{"h1", "h2"}));
  ASSERT_TRUE(*lines.Next(&fields, 2));
  EXPECT_EQ(fields, (std::vector<std::string_view>{"a\nb", "c"}));
  EXPECT_EQ(lines.line(), 4u);
  ASSERT_TRUE(*lines.Next(&fields, 2));
  EXPECT_EQ(fields, (std::vector<std::string_view>{"d", "\xef\xbb\xbf" "e"}));
  Result<bool> bad = lines.Next(&fields, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "t.csv:6: unterminated quoted field: the quote opened on this line is never closed");
}

// An endless line of one byte: what a reader that held whole lines could
// never finish (or would run out of memory on).
class EndlessBytes final : public std::streambuf {
 public:
  explicit EndlessBytes(char c) : piece_(4096, c) { setg(piece_.data(), piece_.data(), piece_.data()); }

 protected:
  int_type underflow() override {
    setg(piece_.data(), piece_.data(), piece_.data() + piece_.size());
    return traits_type::to_int_type(piece_[0]);
  }

 private:
  std::string piece_;
};

TEST(CsvLines, AnEndlessLineStopsAtTheRecordLimit) {
  for (const char c : {'0', '\0'}) {
    EndlessBytes bytes(c);
    std::istream in(&bytes);
    CsvLines lines(in, "t.csv");
    std::vector<std::string_view> fields;
    Result<bool> r = lines.Next(&fields);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(), c == '0' ? "t.csv:1: line longer than 1048576 bytes (the longest CSV record)"
                                             : "t.csv:1: NUL byte: not a text (CSV) file");
  }
}

TEST(CsvLines, AQuoteNeverClosedIsNamedWhereItOpened) {
  // 200,000 lines after it: refused at the record limit (in linear time;
  // each line's quotes are counted once), naming line 3.
  std::string text = "h1,h2\na,b\n\"c,d\n";
  for (int i = 0; i < 200000; ++i) {
    text += 'e';
    text += std::to_string(i);
    text += ",f\n";
  }
  std::istringstream in(text);
  CsvLines lines(in, "t.csv");
  std::vector<std::string_view> fields;
  ASSERT_TRUE(*lines.Next(&fields));
  ASSERT_TRUE(*lines.Next(&fields, 2));
  Result<bool> r = lines.Next(&fields, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "t.csv:3: a quoted field opened on this line is not closed within 1048576 bytes (the longest CSV record)");
  // Within the limit: the end of the file names the line the last quote
  // left open opened on (line 3 here: line 2's closed there, another opened).
  std::istringstream short_in("h\n\"a\nb\" \"c\nd\ne\n");
  CsvLines short_lines(short_in, "t.csv");
  ASSERT_TRUE(*short_lines.Next(&fields));
  r = short_lines.Next(&fields);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "t.csv:3: unterminated quoted field: the quote opened on this line is never closed");
}

}  // namespace
}  // namespace tensormem::io

namespace tensormem::io {
namespace {

// Whatever an id holds, the markup is well-formed UTF-8 of XML characters.
TEST(MarkupEscape, BytesThatAreNoXmlCharacterBecomeTheReplacementCharacter) {
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(MarkupEscape("a<b>&\"\x01"), "a&lt;b&gt;&amp;&quot;?");
  EXPECT_EQ(MarkupEscape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(MarkupEscape("\xff"), r);
  EXPECT_EQ(MarkupEscape("\xef\xbf\xbe"), r + r + r);          // U+FFFE
  EXPECT_EQ(MarkupEscape("\xed\xa0\x80"), r + r + r);          // a surrogate
  EXPECT_EQ(MarkupEscape("\xc0\xaf"), r + r);                  // overlong '/'
  EXPECT_EQ(MarkupEscape("\xf4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
  EXPECT_EQ(MarkupEscape("a\xe2\x82"), "a" + r + r);           // cut short
}

}  // namespace
}  // namespace tensormem::io
