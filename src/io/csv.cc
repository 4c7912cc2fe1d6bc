// SPDX-License-Identifier: Apache-2.0
// MiniMalloc CSV, read and written. Half-open [lower, upper) spans become
// inclusive [lower, upper - 1] here and nowhere else.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/text_util.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {

enum Column { kId, kLower, kUpper, kEnd, kSize, kAlignment, kOffset, kGaps, kNumColumns };

constexpr std::array<std::string_view, kNumColumns> kColumnNames = {
    "id", "lower", "upper", "end", "size", "alignment", "offset", "gaps"};

class CsvReader {
 public:
  CsvReader(std::string_view source, const ReadLimits& limits) : source_(source), limits_(limits) {}

  Result<Problem> Read(std::istream& in) {
    io::CsvLines lines(in, source_);
    std::vector<std::string_view> fields;
    bool have_header = false;
    Problem problem;
    // Lines of the rows; duplicates are found by sorting after the read
    // (no second copy of every id in a hash map: 10^7 rows fit in memory).
    std::vector<std::size_t> row_line;
    while (true) {
      TM_ASSIGN_OR_RETURN(const bool more, lines.Next(&fields, header_.size()));
      if (!more) break;
      line_no_ = lines.line();
      if (!have_header) {
        TM_RETURN_IF_ERROR(ReadHeader(fields));
        have_header = true;
        continue;
      }
      if (problem.buffers.size() >= limits_.max_buffers)
        return Error("more than " + std::to_string(limits_.max_buffers) + " buffers");
      TM_ASSIGN_OR_RETURN(Buffer b, ReadRow(fields));
      problem.buffers.push_back(std::move(b));
      row_line.push_back(line_no_);
    }
    if (!have_header)
      return InvalidArgument(std::string(source_) +
                             ": empty file: expected a header such as id,lower,upper,size");
    TM_RETURN_IF_ERROR(CheckDuplicates(problem, row_line));
    // Problem-wide checks (fixed offsets that conflict) are bad input here too.
    if (Status st = CheckProblem(problem); !st.ok())
      return InvalidArgument(std::string(source_) + ": " + st.message());
    return problem;
  }

  // The first row (in file order) whose id an earlier row has, as the
  // reader meeting the rows one by one would report it. Rows sorted by (id's
  // hash, id, row): equal ids end up next to each other in file order, and
  // the strings are compared only where hashes tie (a sort by the strings
  // themselves was 15 % of reading 10^6 rows).
  Status CheckDuplicates(const Problem& problem, const std::vector<std::size_t>& row_line) {
    const auto& bufs = problem.buffers;
    if (bufs.size() > UINT32_MAX) return Error("more than 2^32 rows");
    struct Key {
      std::size_t hash;
      std::uint32_t row;
    };
    std::vector<Key> keys(bufs.size());
    const std::hash<std::string_view> hash;
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = {hash(bufs[i].id), static_cast<std::uint32_t>(i)};
    std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
      if (a.hash != b.hash) return a.hash < b.hash;
      const int c = bufs[a.row].id.compare(bufs[b.row].id);
      return c != 0 ? c < 0 : a.row < b.row;
    });
    // The earliest row that repeats the row before it: the second of its
    // id's run (later ones come after it), and the one before it the first.
    std::size_t worst = bufs.size(), first = 0;
    for (std::size_t k = 1; k < keys.size(); ++k)
      if (keys[k].hash == keys[k - 1].hash && keys[k].row < worst &&
          bufs[keys[k].row].id == bufs[keys[k - 1].row].id) {
        worst = keys[k].row;
        first = keys[k - 1].row;
      }
    if (worst == bufs.size()) return Status::Ok();
    line_no_ = row_line[worst];
    return Error("field 'id': duplicate id " + io::Quote(bufs[worst].id) + " (first on line " +
                 std::to_string(row_line[first]) + ")");
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(std::string(source_) + ":" + std::to_string(line_no_) + ": " + what);
  }
  Status FieldError(Column c, const std::string& what) const {
    return Error("field '" + std::string(kColumnNames[c]) + "': " + what);
  }

  Status ReadHeader(const std::vector<std::string_view>& fields) {
    where_.fill(-1);
    header_.clear();
    for (std::size_t k = 0; k < fields.size(); ++k) {
      const std::string_view name =
          io::EqualsIgnoringCase(fields[k], "begin") ? std::string_view("lower") : fields[k];
      int col = -1;
      for (int c = 0; c < kNumColumns; ++c)
        if (io::EqualsIgnoringCase(kColumnNames[static_cast<std::size_t>(c)], name)) col = c;
      if (col < 0)
        return Error("unknown column " + io::Quote(fields[k]) +
                     " (known: id, lower or begin, upper or end, size, alignment, offset, gaps)");
      if (where_[static_cast<std::size_t>(col)] >= 0)
        return Error("column " + io::Quote(fields[k]) + " appears twice");
      where_[static_cast<std::size_t>(col)] = static_cast<int>(k);
      header_.push_back(static_cast<Column>(col));
    }
    for (Column c : {kId, kLower, kSize})
      if (where_[c] < 0)
        return Error("missing column '" + std::string(kColumnNames[c]) +
                     "' (the header needs id, lower, upper or end, size)");
    if (where_[kUpper] < 0 && where_[kEnd] < 0)
      return Error("missing column 'upper' (or an inclusive 'end')");
    if (where_[kUpper] >= 0 && where_[kEnd] >= 0)
      return Error("columns 'upper' and 'end' both given; use one");
    return Status::Ok();
  }

  Result<std::uint64_t> Number(const std::vector<std::string_view>& f, Column c) const {
    const std::string_view s = f[static_cast<std::size_t>(where_[c])];
    io::IntParse p = io::ParseUnsigned(s);
    if (!p.ok) return FieldError(c, p.error + ": " + io::Quote(s));
    return p.value;
  }

  Result<TaskIndex> Task(const std::vector<std::string_view>& f, Column c) const {
    TM_ASSIGN_OR_RETURN(std::uint64_t v, Number(f, c));
    if (v > static_cast<std::uint64_t>(kMaxTaskIndex) + 1)
      return FieldError(c, "task " + std::to_string(v) + " is beyond the supported range (2^62)");
    return static_cast<TaskIndex>(v);
  }

  bool Present(const std::vector<std::string_view>& f, Column c) const {
    return where_[c] >= 0 && !f[static_cast<std::size_t>(where_[c])].empty();
  }

  Result<Buffer> ReadRow(const std::vector<std::string_view>& f) const {
    Buffer b;
    b.id = std::string(f[static_cast<std::size_t>(where_[kId])]);
    if (b.id.empty()) return FieldError(kId, "empty id");
    TM_ASSIGN_OR_RETURN(b.size, Number(f, kSize));
    TM_ASSIGN_OR_RETURN(TaskIndex lower, Task(f, kLower));
    b.first_task = lower;
    if (where_[kUpper] >= 0) {
      TM_ASSIGN_OR_RETURN(TaskIndex upper, Task(f, kUpper));
      if (upper <= lower)
        return FieldError(kUpper, "upper (" + std::to_string(upper) + ") must be greater than lower (" +
                                      std::to_string(lower) + "): spans are half-open [lower, upper)");
      b.last_task = upper - 1;
    } else {
      TM_ASSIGN_OR_RETURN(TaskIndex end, Task(f, kEnd));
      if (end < lower)
        return FieldError(kEnd, "end (" + std::to_string(end) + ") is before lower (" +
                                    std::to_string(lower) + "); 'end' is inclusive");
      if (end > kMaxTaskIndex) return FieldError(kEnd, "task beyond the supported range (2^62)");
      b.last_task = end;
    }
    if (Present(f, kAlignment)) {
      TM_ASSIGN_OR_RETURN(b.alignment, Number(f, kAlignment));
      if (!ValidateAlignment(b.alignment, "").ok())
        return FieldError(kAlignment, "must be a power of two (1, 2, 4, ...) up to 2^62");
    }
    if (Present(f, kOffset)) {
      TM_ASSIGN_OR_RETURN(std::uint64_t off, Number(f, kOffset));
      if (off + b.size < off) return FieldError(kOffset, "offset + size overflows 64 bits");
      if (off % b.alignment != 0)
        return FieldError(kOffset, "fixed offset " + std::to_string(off) +
                                       " is not a multiple of the alignment " +
                                       std::to_string(b.alignment));
      b.fixed_offset = off;
    }
    if (Present(f, kGaps)) TM_RETURN_IF_ERROR(ReadGaps(f[static_cast<std::size_t>(where_[kGaps])], &b));
    return b;
  }

  // "L-U" or "L-U@lo:hi", space separated, half-open, sorted and disjoint.
  Status ReadGaps(std::string_view text, Buffer* b) const {
    std::size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      std::size_t j = i;
      while (j < text.size() && text[j] != ' ') ++j;
      if (j == i) break;
      const std::string_view tok = text.substr(i, j - i);
      i = j;
      auto bad = [&](const std::string& why) {
        return FieldError(kGaps, "gap " + io::Quote(tok) + ": " + why +
                                     " (expected L-U or L-U@lo:hi, half-open)");
      };
      const std::size_t at = tok.find('@');
      const std::string_view span = tok.substr(0, at);
      const std::size_t dash = span.find('-');
      if (dash == std::string_view::npos) return bad("no '-'");
      io::IntParse l = io::ParseUnsigned(span.substr(0, dash));
      io::IntParse u = io::ParseUnsigned(span.substr(dash + 1));
      if (!l.ok || !u.ok) return bad("bounds " + (l.ok ? u.error : l.error));
      if (u.value <= l.value) return bad("upper must be greater than lower");
      Gap g;
      // Both bounds: an upper of 2^64-1 used to wrap to a negative task.
      if (l.value > static_cast<std::uint64_t>(kMaxTaskIndex) ||
          u.value > static_cast<std::uint64_t>(kMaxTaskIndex) + 1)
        return bad("beyond the task range (2^62)");
      g.first_task = static_cast<TaskIndex>(l.value);
      g.last_task = static_cast<TaskIndex>(u.value - 1);
      if (g.first_task < b->first_task || g.last_task > b->last_task)
        return bad("outside the buffer's lifetime [" + std::to_string(b->first_task) + ", " +
                   std::to_string(b->last_task + 1) + ")");
      if (!b->gaps.empty() && g.first_task <= b->gaps.back().last_task)
        return bad("overlaps or precedes the previous gap");
      if (at != std::string_view::npos) {
        const std::string_view win = tok.substr(at + 1);
        const std::size_t colon = win.find(':');
        if (colon == std::string_view::npos) return bad("window needs lo:hi");
        io::IntParse lo = io::ParseUnsigned(win.substr(0, colon));
        io::IntParse hi = io::ParseUnsigned(win.substr(colon + 1));
        if (!lo.ok || !hi.ok) return bad("window " + (lo.ok ? hi.error : lo.error));
        if (lo.value > hi.value || hi.value > b->size)
          return bad("window must satisfy lo <= hi <= size (" + std::to_string(b->size) + ")");
        g.has_window = true;
        g.window_lo = lo.value;
        g.window_hi = hi.value;
      }
      b->gaps.push_back(g);
    }
    return Status::Ok();
  }

  std::string_view source_;
  ReadLimits limits_;
  std::size_t line_no_ = 0;
  std::array<int, kNumColumns> where_{};
  std::vector<Column> header_;
};

void WriteId(std::ostream& out, const std::string& id) {
  if (id.find_first_of(",\"\n\r") == std::string::npos && io::Trim(id) == id) {
    out << id;
    return;
  }
  out << '"';
  for (char c : id) {
    if (c == '"') out << '"';
    out << c;
  }
  out << '"';
}

void WriteGaps(std::ostream& out, const Buffer& b) {
  bool first = true;
  for (const Gap& g : b.gaps) {
    if (!first) out << ' ';
    first = false;
    out << g.first_task << '-' << (g.last_task + 1);
    if (g.has_window) out << '@' << g.window_lo << ':' << g.window_hi;
  }
}

struct Columns {
  bool alignment = false, gaps = false;
};

Columns Optional(const Problem& p) {
  Columns c;
  for (const Buffer& b : p.buffers) {
    c.alignment |= b.alignment != 1;
    c.gaps |= !b.gaps.empty();
  }
  return c;
}

void WriteRowPrefix(std::ostream& out, const Buffer& b, const Columns& c) {
  WriteId(out, b.id);
  out << ',' << b.first_task << ',' << (b.last_task + 1) << ',' << b.size;
  if (c.alignment) out << ',' << b.alignment;
  if (c.gaps) {
    out << ',';
    WriteGaps(out, b);
  }
}

}  // namespace

Result<Problem> ReadProblemCsv(std::istream& in, std::string_view source, const ReadLimits& limits) {
  return CsvReader(source, limits).Read(in);
}

Status WriteProblemCsv(std::ostream& out, const Problem& problem, const OffsetsPlan* plan) {
  if (plan && plan->offsets.size() != problem.buffers.size())
    return InvalidArgument("plan has " + std::to_string(plan->offsets.size()) + " offsets for " +
                           std::to_string(problem.buffers.size()) + " buffers");
  const Columns c = Optional(problem);
  bool any_fixed = false;
  for (const Buffer& b : problem.buffers) any_fixed |= b.fixed_offset.has_value();
  const bool offsets = plan != nullptr || any_fixed;
  out << "id,lower,upper,size" << (c.alignment ? ",alignment" : "") << (c.gaps ? ",gaps" : "")
      << (offsets ? ",offset" : "") << '\n';
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    WriteRowPrefix(out, b, c);
    if (plan)
      out << ',' << plan->offsets[i];
    else if (offsets) {
      out << ',';
      if (b.fixed_offset) out << *b.fixed_offset;
    }
    out << '\n';
  }
  if (!out) return Internal("write failed");
  return Status::Ok();
}

Status WriteObjectsCsv(std::ostream& out, const Problem& problem, const ObjectsPlan& plan) {
  if (plan.object_of.size() != problem.buffers.size())
    return InvalidArgument("plan has " + std::to_string(plan.object_of.size()) +
                           " object ids for " + std::to_string(problem.buffers.size()) +
                           " buffers");
  const Columns c = Optional(problem);
  out << "id,lower,upper,size" << (c.alignment ? ",alignment" : "") << (c.gaps ? ",gaps" : "")
      << ",object,object_size\n";
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    WriteRowPrefix(out, problem.buffers[i], c);
    const std::size_t obj = plan.object_of[i];
    out << ',' << obj << ',' << (obj < plan.object_sizes.size() ? plan.object_sizes[obj] : 0)
        << '\n';
  }
  if (!out) return Internal("write failed");
  return Status::Ok();
}

}  // namespace tensormem
