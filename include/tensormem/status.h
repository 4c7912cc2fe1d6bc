// SPDX-License-Identifier: Apache-2.0
// Errors as values: the core library never throws, so runtimes built without
// exceptions can use it. A Status is a code and a message that names what and
// where; Result<T> is a value or a Status.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tensormem {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,    // malformed input, impossible sizes, unknown names
  kOutOfRange,         // arithmetic overflow, values beyond a limit
  kNotFound,           // missing file, unknown pointer
  kResourceExhausted,  // out of memory, capacity too small
  kFailedPrecondition, // call made in the wrong state (e.g. double free)
  kUnimplemented,      // feature not available in this build
  kDeadlineExceeded,   // time limit hit before an answer
  kInternal,           // a broken invariant inside the library (a bug)
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: model.csv:3: field 'size': not a number: 'x'"
  std::string ToString() const;

  // Prepends context ("while reading X: ") to the message; no-op when ok
  // or when the message already starts with "context: ".
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// `message` with every word (a run of non-spaces) over 256 bytes cut to its
// first 160 and last 80 bytes around "...(N bytes cut)...": an error that
// echoes a huge argument stays readable. The CLI and Python report every
// error through it.
std::string CutLongWords(std::string_view message);

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status OutOfRange(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

namespace detail {
[[noreturn]] void DieOnBadResultAccess(const Status& status);
}  // namespace detail

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Internal("Result constructed from an ok Status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & { Check(); return *value_; }
  const T& value() const& { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!value_) detail::DieOnBadResultAccess(status_);
  }
  std::optional<T> value_;
  Status status_;
};

}  // namespace tensormem

#define TM_CONCAT_INNER_(a, b) a##b
#define TM_CONCAT_(a, b) TM_CONCAT_INNER_(a, b)

#define TM_RETURN_IF_ERROR(expr)                      \
  do {                                                \
    ::tensormem::Status tm_status_ = (expr);          \
    if (!tm_status_.ok()) return tm_status_;          \
  } while (0)

#define TM_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// TM_ASSIGN_OR_RETURN(auto x, Compute()); returns the error from the caller.
#define TM_ASSIGN_OR_RETURN(lhs, expr) \
  TM_ASSIGN_OR_RETURN_IMPL_(TM_CONCAT_(tm_result_, __LINE__), lhs, expr)
