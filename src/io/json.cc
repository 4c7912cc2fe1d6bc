// SPDX-License-Identifier: Apache-2.0
// JSON problems and plans. Parsing never throws: errors come back as a
// Status naming the byte offset or the buffer and field.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <iterator>
#include <ostream>
#include <streambuf>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/text_util.h"
#include "tensormem/io.h"

namespace tensormem {
namespace {

using nlohmann::json;

// The longest string (key or value) and the most values held outside the
// buffers array a JSON problem may have: the parser holds a whole string,
// and values outside the buffers stay in its DOM, so these bound its memory
// whatever the input (a valid problem comes nowhere near them).
constexpr std::size_t kMaxJsonStringBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxJsonHeldValues = std::size_t{1} << 20;

// Builds a DOM without exceptions and remembers the first syntax error.
// The elements of the buffers array (the root array, or the root object's
// "buffers") are handed to `on_buffer` as each one ends and then dropped, so
// the DOM never holds more than one buffer: memory is bounded by the
// buffers read, not by the text (2*10^7 empty objects used to take GBs
// before the first was refused).
class NoThrowDom : public nlohmann::json_sax<json> {
 public:
  using OnBuffer = std::function<Status(const json&)>;
  NoThrowDom(json& root, OnBuffer on_buffer)
      : root_(root), dom_(root, /*allow_exceptions=*/false), on_buffer_(std::move(on_buffer)) {}
  bool null() override { return Scalar() && Held() && dom_.null(); }
  bool boolean(bool v) override { return Scalar() && Held() && dom_.boolean(v); }
  bool number_integer(number_integer_t v) override { return Scalar() && Held() && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return Scalar() && Held() && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override {
    return Scalar() && Held() && dom_.number_float(v, s);
  }
  bool string(string_t& v) override { return Scalar() && Held() && dom_.string(v); }
  bool binary(binary_t& v) override { return Scalar() && Held() && dom_.binary(v); }
  bool start_object(std::size_t n) override {
    if (depth_ == 0) root_is_array_ = false;
    if (depth_ == 1 && root_key_ == "buffers") buffers_is_array_ = false;
    return Held() && Depth() && dom_.start_object(n);
  }
  bool key(string_t& v) override {
    if (depth_ == 1) root_key_ = v;
    return dom_.key(v);
  }
  bool end_object() override {
    --depth_;
    if (!dom_.end_object()) return false;
    return depth_ == BufferLevel() ? Hand() : true;
  }
  bool start_array(std::size_t n) override {
    if (depth_ == 0) root_is_array_ = true;
    if (depth_ == 1 && !root_is_array_ && root_key_ == "buffers") buffers_is_array_ = true;
    if (depth_ == BufferLevel() && InBuffers())
      return Fail("buffer " + std::to_string(count_) + " is not an object");
    return Held() && Depth() && dom_.start_array(n);
  }
  bool end_array() override { --depth_; return dom_.end_array(); }
  const Status& status() const { return status_; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    if (error_.empty()) error_ = "byte " + std::to_string(position) + ": " + ex.what();
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  // Depth of the buffers array itself: 1 under a root array, 2 under the
  // root object's "buffers".
  int BufferLevel() const { return root_is_array_ ? 1 : 2; }
  bool InBuffers() const {
    if (depth_ < 1) return false;
    return root_is_array_ || (root_key_ == "buffers" && buffers_is_array_);
  }
  bool Scalar() {
    if (depth_ == BufferLevel() && InBuffers())
      return Fail("buffer " + std::to_string(count_) + " is not an object");
    return true;
  }
  bool Fail(const std::string& what) {
    if (status_.ok()) status_ = InvalidArgument(what);
    if (error_.empty()) error_ = what;
    return false;
  }
  // The element just ended: read it, then drop it from the DOM.
  bool Hand() {
    if (!InBuffers()) return true;
    json* array = root_is_array_ ? &root_ : &root_["buffers"];
    if (!array->is_array() || array->empty()) return true;
    Status st = on_buffer_(array->back());
    ++count_;
    held_in_buffer_ = 0;
    array->erase(array->size() - 1);
    if (!st.ok()) {
      status_ = st;
      if (error_.empty()) error_ = st.message();
      return false;
    }
    return true;
  }
  json& root_;
  // The values the DOM holds at once: one buffer's (dropped when it ends),
  // and those outside the buffers array.
  bool Held() {
    const bool in_buffer = InBuffers() && depth_ >= BufferLevel();
    std::size_t& held = in_buffer ? held_in_buffer_ : held_outside_;
    if (++held <= kMaxJsonHeldValues) return true;
    return Fail(std::string("more than ") + std::to_string(kMaxJsonHeldValues) + " values " +
                (in_buffer ? "in buffer " + std::to_string(count_) : std::string("outside the buffers")));
  }
  // Bounded nesting keeps hostile input from exhausting the stack later.
  bool Depth() {
    if (++depth_ <= 64) return true;
    if (error_.empty()) error_ = "nesting deeper than 64 levels";
    return false;
  }
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  OnBuffer on_buffer_;
  Status status_;
  std::string error_;
  std::string root_key_;
  std::size_t count_ = 0;
  std::size_t held_in_buffer_ = 0, held_outside_ = 0;
  int depth_ = 0;
  bool root_is_array_ = false;
  bool buffers_is_array_ = false;
};

// Passes the JSON text through, ending it where a string, number or literal
// grows longer than kMaxJsonStringBytes (nlohmann's lexer would hold it
// whole): error() then says so, naming the byte where it began.
class StringLimitBuffer final : public std::streambuf {
 public:
  explicit StringLimitBuffer(std::streambuf* source) : source_(source), piece_(std::size_t{1} << 16) {}
  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!error_.empty()) return traits_type::eof();
    const std::streamsize n = source_->sgetn(piece_.data(), static_cast<std::streamsize>(piece_.size()));
    if (n <= 0) return traits_type::eof();
    const std::size_t passed = Scan(static_cast<std::size_t>(n));
    offset_ += passed;
    if (passed == 0) return traits_type::eof();
    setg(piece_.data(), piece_.data(), piece_.data() + passed);
    return traits_type::to_int_type(*gptr());
  }

 private:
  // The bytes of piece_[0, n) that pass: all, or those before the byte
  // that makes a string, number or literal too long.
  std::size_t Scan(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const char c = piece_[i];
      if (!in_string_) {
        if (c == '"') {
          in_string_ = true;
          length_ = 0;
          opened_ = offset_ + i;
          continue;
        }
        // A number or a literal: as long as its bytes run.
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' || c == '[' || c == ']' ||
            c == '{' || c == '}') {
          length_ = 0;
          continue;
        }
        if (length_++ == 0) opened_ = offset_ + i;
        if (length_ > kMaxJsonStringBytes) return TooLong(i, "value");
        continue;
      }
      if (escaped_) escaped_ = false;
      else if (c == '\\') escaped_ = true;
      else if (c == '"') {
        in_string_ = false;
        length_ = 0;
        continue;
      }
      if (++length_ > kMaxJsonStringBytes) return TooLong(i, "string");
    }
    return n;
  }

  std::size_t TooLong(std::size_t i, const char* what) {
    error_ = "byte " + std::to_string(opened_) + ": a " + what + " longer than " +
             std::to_string(kMaxJsonStringBytes) + " bytes (the longest JSON token)";
    return i;
  }

  std::streambuf* source_;
  std::vector<char> piece_;
  std::string error_;
  std::uint64_t offset_ = 0;  // of piece_[0] in the text
  std::uint64_t opened_ = 0;
  std::size_t length_ = 0;
  bool in_string_ = false;  // else length_ counts the bytes of a number or literal
  bool escaped_ = false;
};

class JsonReader {
 public:
  JsonReader(std::string_view source, const ReadLimits& limits) : source_(source), limits_(limits) {}

  Result<Problem> Read(std::istream& in) {
    json root;
    Problem streamed;
    std::unordered_set<std::string> ids;
    NoThrowDom sax(root, [&](const json& element) -> Status {
      const std::size_t i = streamed.buffers.size();
      if (i >= limits_.max_buffers)
        return InvalidArgument(std::string(source_) + ": more than " +
                               std::to_string(limits_.max_buffers) + " buffers");
      TM_ASSIGN_OR_RETURN(Buffer b, ReadBuffer(element, i));
      if (!ids.insert(b.id).second) return Error(i, "id", "duplicate id " + io::Quote(b.id));
      streamed.buffers.push_back(std::move(b));
      return Status::Ok();
    });
    StringLimitBuffer limited(in.rdbuf());
    std::istream limited_in(&limited);
    const bool ok = json::sax_parse(limited_in, &sax, nlohmann::detail::input_format_t::json,
                                    /*strict=*/true, /*ignore_comments=*/false);
    if (!limited.error().empty())
      return InvalidArgument(std::string(source_) + ": " + limited.error());
    if (!sax.status().ok()) {
      // A buffer refused while streaming: its own message.
      const std::string& m = sax.status().message();
      if (m.rfind(std::string(source_) + ":", 0) == 0) return sax.status();
      return InvalidArgument(std::string(source_) + ": " + m);
    }
    if (!ok || !sax.error().empty())
      return InvalidArgument(std::string(source_) + ": invalid JSON at " +
                             (sax.error().empty() ? std::string("end of input") : sax.error()));
    const json* buffers = &root;
    Problem problem;
    if (root.is_object()) {
      auto it = root.find("buffers");
      if (it == root.end())
        return InvalidArgument(std::string(source_) + ": missing \"buffers\" (an array of buffers)");
      buffers = &*it;
      if (auto cap = root.find("capacity"); cap != root.end() && !cap->is_null()) {
        TM_ASSIGN_OR_RETURN(std::uint64_t c, Unsigned(*cap, "capacity", nullptr));
        problem.capacity = c;
      }
    }
    if (!buffers->is_array())
      return InvalidArgument(std::string(source_) + ": \"buffers\" must be an array");
    if (buffers->size() > limits_.max_buffers)
      return InvalidArgument(std::string(source_) + ": more than " +
                             std::to_string(limits_.max_buffers) + " buffers");
    // Every element was read (and dropped) as it ended.
    problem.buffers = std::move(streamed.buffers);
    // Problem-wide checks (fixed offsets that conflict) are bad input here too.
    if (Status st = CheckProblem(problem); !st.ok())
      return InvalidArgument(std::string(source_) + ": " + st.message());
    return problem;
  }

 private:
  Status Error(std::size_t i, std::string_view field, const std::string& what) const {
    return InvalidArgument(std::string(source_) + ": buffer " + std::to_string(i) + ": field '" +
                           std::string(field) + "': " + what);
  }

  // `index` null for top-level fields.
  Result<std::uint64_t> Unsigned(const json& v, std::string_view field, const std::size_t* index) const {
    auto err = [&](const std::string& what) -> Status {
      if (index) return Error(*index, field, what);
      return InvalidArgument(std::string(source_) + ": field '" + std::string(field) + "': " + what);
    };
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer()) return err("negative: " + v.dump());
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d >= 0 && d == std::floor(d) && d < 18446744073709551616.0)
        return static_cast<std::uint64_t>(d);
      return err("not a non-negative integer: " + v.dump());
    }
    if (v.is_string()) {
      io::IntParse p = io::ParseUnsigned(v.get<std::string>());
      if (p.ok) return p.value;
      return err(p.error + ": " + io::Quote(v.get<std::string>()));
    }
    return err("expected a number, got " + std::string(v.type_name()));
  }

  Result<TaskIndex> Task(const json& v, std::string_view field, std::size_t i) const {
    TM_ASSIGN_OR_RETURN(std::uint64_t t, Unsigned(v, field, &i));
    if (t > static_cast<std::uint64_t>(kMaxTaskIndex) + 1)
      return Error(i, field, "task beyond the supported range (2^62)");
    return static_cast<TaskIndex>(t);
  }

  // Buffer i of the "buffers" array: its fields, each checked in turn.
  Result<Buffer> ReadBuffer(const json& j, std::size_t i) const {
    if (!j.is_object()) return InvalidArgument(std::string(source_) + ": buffer " + std::to_string(i) + " is not an object");
    TM_RETURN_IF_ERROR(CheckFieldsKnown(j, i));
    Buffer b;
    TM_RETURN_IF_ERROR(ReadId(j, i, b));
    const json* size = Field(j, "size");
    if (!size) return Error(i, "size", "missing");
    TM_ASSIGN_OR_RETURN(b.size, Unsigned(*size, "size", &i));
    TM_RETURN_IF_ERROR(ReadSpan(j, i, b));
    TM_RETURN_IF_ERROR(ReadAlignmentAndOffset(j, i, b));
    if (auto it = j.find("gaps"); it != j.end() && !it->is_null()) {
      if (!it->is_array()) return Error(i, "gaps", "expected an array");
      for (std::size_t k = 0; k < it->size(); ++k) TM_RETURN_IF_ERROR(ReadGap((*it)[k], k, i, b));
    }
    return b;
  }

  // The field `name` of j, else `alt`'s (if any); null when neither is there.
  static const json* Field(const json& j, const char* name, const char* alt = nullptr) {
    if (auto it = j.find(name); it != j.end()) return &*it;
    if (alt)
      if (auto it = j.find(alt); it != j.end()) return &*it;
    return nullptr;
  }

  Status CheckFieldsKnown(const json& j, std::size_t i) const {
    static const std::unordered_set<std::string> known = {
        "id", "lower", "begin", "upper", "end", "size", "alignment", "offset", "gaps"};
    for (auto it = j.begin(); it != j.end(); ++it)
      if (!known.count(it.key()))
        return Error(i, it.key(), "unknown field (known: id, lower or begin, upper or end, size, "
                                  "alignment, offset, gaps)");
    return Status::Ok();
  }

  // A string or an integer; the buffer's index when absent.
  Status ReadId(const json& j, std::size_t i, Buffer& b) const {
    auto it = j.find("id");
    if (it == j.end()) {
      b.id = std::to_string(i);
      return Status::Ok();
    }
    if (it->is_string()) b.id = it->get<std::string>();
    else if (it->is_number_integer()) b.id = it->dump();
    else return Error(i, "id", "expected a string or an integer");
    if (b.id.empty()) return Error(i, "id", "empty id");
    // As in CSV (where a NUL byte is refused): an id every output can
    // carry, and the CSV written from it reads back.
    if (b.id.find('\0') != std::string::npos) return Error(i, "id", "holds a NUL character (\\u0000)");
    return Status::Ok();
  }

  // lower (or begin), then upper (half-open) or end (inclusive).
  Status ReadSpan(const json& j, std::size_t i, Buffer& b) const {
    if (j.contains("lower") && j.contains("begin")) return Error(i, "begin", "give 'lower' or 'begin', not both");
    const json* lower = Field(j, "lower", "begin");
    if (!lower) return Error(i, "lower", "missing");
    TM_ASSIGN_OR_RETURN(b.first_task, Task(*lower, "lower", i));
    const json* upper = Field(j, "upper");
    const json* end = Field(j, "end");
    if (upper && end) return Error(i, "end", "give 'upper' (half-open) or 'end' (inclusive), not both");
    if (upper) {
      TM_ASSIGN_OR_RETURN(TaskIndex u, Task(*upper, "upper", i));
      if (u <= b.first_task)
        return Error(i, "upper", "must be greater than lower: spans are half-open [lower, upper)");
      b.last_task = u - 1;
    } else if (end) {
      TM_ASSIGN_OR_RETURN(TaskIndex e, Task(*end, "end", i));
      if (e < b.first_task) return Error(i, "end", "is before lower ('end' is inclusive)");
      if (e > kMaxTaskIndex) return Error(i, "end", "task beyond the supported range (2^62)");
      b.last_task = e;
    } else {
      return Error(i, "upper", "missing (or give an inclusive 'end')");
    }
    return Status::Ok();
  }

  Status ReadAlignmentAndOffset(const json& j, std::size_t i, Buffer& b) const {
    if (auto it = j.find("alignment"); it != j.end() && !it->is_null()) {
      TM_ASSIGN_OR_RETURN(b.alignment, Unsigned(*it, "alignment", &i));
      if (!ValidateAlignment(b.alignment, "").ok())
        return Error(i, "alignment", "must be a power of two (1, 2, 4, ...) up to 2^62");
    }
    if (auto it = j.find("offset"); it != j.end() && !it->is_null()) {
      TM_ASSIGN_OR_RETURN(std::uint64_t off, Unsigned(*it, "offset", &i));
      if (off + b.size < off) return Error(i, "offset", "offset + size overflows 64 bits");
      if (off % b.alignment != 0) return Error(i, "offset", "not a multiple of the alignment");
      b.fixed_offset = off;
    }
    return Status::Ok();
  }

  // gaps[k] of buffer i: {lower, upper} (half-open) within the lifetime,
  // after the previous gap, with an optional window [lo, hi].
  Status ReadGap(const json& g, std::size_t k, std::size_t i, Buffer& b) const {
    const std::string f = "gaps[" + std::to_string(k) + "]";
    if (!g.is_object() || !g.contains("lower") || !g.contains("upper"))
      return Error(i, f, "expected {\"lower\": L, \"upper\": U} (half-open), optional \"window\": [lo, hi]");
    TM_ASSIGN_OR_RETURN(TaskIndex gl, Task(g["lower"], f + ".lower", i));
    TM_ASSIGN_OR_RETURN(TaskIndex gu, Task(g["upper"], f + ".upper", i));
    if (gu <= gl) return Error(i, f, "upper must be greater than lower");
    Gap gap{gl, gu - 1, false, 0, 0};
    if (gap.first_task < b.first_task || gap.last_task > b.last_task)
      return Error(i, f, "outside the buffer's lifetime");
    if (!b.gaps.empty() && gap.first_task <= b.gaps.back().last_task)
      return Error(i, f, "overlaps or precedes the previous gap");
    if (auto w = g.find("window"); w != g.end() && !w->is_null()) {
      if (!w->is_array() || w->size() != 2) return Error(i, f + ".window", "expected [lo, hi]");
      TM_ASSIGN_OR_RETURN(gap.window_lo, Unsigned((*w)[0], f + ".window", &i));
      TM_ASSIGN_OR_RETURN(gap.window_hi, Unsigned((*w)[1], f + ".window", &i));
      if (gap.window_lo > gap.window_hi || gap.window_hi > b.size)
        return Error(i, f + ".window", "must satisfy lo <= hi <= size");
      gap.has_window = true;
    }
    b.gaps.push_back(gap);
    return Status::Ok();
  }

  std::string_view source_;
  ReadLimits limits_;
};

}  // namespace

Result<Problem> ReadProblemJson(std::istream& in, std::string_view source, const ReadLimits& limits) {
  return JsonReader(source, limits).Read(in);
}

Status WriteProblemJson(std::ostream& out, const Problem& problem, const OffsetsPlan* plan) {
  if (plan && plan->offsets.size() != problem.buffers.size())
    return InvalidArgument("plan has " + std::to_string(plan->offsets.size()) + " offsets for " +
                           std::to_string(problem.buffers.size()) + " buffers");
  json root = json::object();
  json buffers = json::array();
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    json j = {{"id", b.id}, {"lower", b.first_task}, {"upper", b.last_task + 1}, {"size", b.size}};
    if (b.alignment != 1) j["alignment"] = b.alignment;
    if (!b.gaps.empty()) {
      json gaps = json::array();
      for (const Gap& g : b.gaps) {
        json jg = {{"lower", g.first_task}, {"upper", g.last_task + 1}};
        if (g.has_window) jg["window"] = {g.window_lo, g.window_hi};
        gaps.push_back(jg);
      }
      j["gaps"] = gaps;
    }
    if (plan) j["offset"] = plan->offsets[i];
    else if (b.fixed_offset) j["offset"] = *b.fixed_offset;
    buffers.push_back(std::move(j));
  }
  if (problem.capacity) root["capacity"] = *problem.capacity;
  if (plan) {
    root["plan"] = {{"strategy", plan->strategy},
                    {"total", plan->total},
                    {"lower_bound", plan->lower_bound},
                    {"ratio", Ratio(plan->total, plan->lower_bound)},
                    {"seconds", plan->seconds}};
  }
  root["buffers"] = std::move(buffers);
  out << root.dump(1) << '\n';
  if (!out) return Internal("write failed");
  return Status::Ok();
}

}  // namespace tensormem
