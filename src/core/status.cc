// SPDX-License-Identifier: Apache-2.0
#include "tensormem/status.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace tensormem {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kUnimplemented: return "unimplemented";
    case StatusCode::kDeadlineExceeded: return "deadline exceeded";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  // Already said: "min_cost_flow: min_cost_flow: ..." reads as a stutter.
  if (message_.size() > context.size() + 1 && message_.starts_with(context) &&
      message_.compare(context.size(), 2, ": ") == 0)
    return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return {code_, std::move(m)};
}

namespace detail {
void DieOnBadResultAccess(const Status& status) {
  std::fprintf(stderr, "tensormem: value() called on a Result holding an error: %s\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace detail

std::string CutLongWords(std::string_view message) {
  constexpr std::size_t kLongest = 256, kHead = 160, kTail = 80;
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    const std::size_t space = std::min(message.find(' ', i), message.size());
    const std::string_view word = message.substr(i, space - i);
    if (word.size() <= kLongest) {
      out += word;
    } else {
      out += word.substr(0, kHead);
      out += "...(" + std::to_string(word.size() - kHead - kTail) + " bytes cut)...";
      out += word.substr(word.size() - kTail);
    }
    if (space < message.size()) out += ' ';
    i = space + 1;
  }
  return out;
}

}  // namespace tensormem
