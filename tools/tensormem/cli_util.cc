// SPDX-License-Identifier: Apache-2.0
#include "cli_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tensormem/io.h"

namespace tensormem::cli {

int ReportError(const Status& status) {
  std::cerr << "tensormem: error: " << CutLongWords(status.message()) << '\n';
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kNotFound:
    case StatusCode::kUnimplemented:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

std::string Table::ToString() const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const std::string pad(width[c] - cell.size(), ' ');
      out += (c == 0) ? cell + pad : "  " + pad + cell;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  line(header_);
  for (const auto& row : rows_) line(row);
  return out;
}

std::string FormatDouble(double v, int decimals) {
  if (std::isinf(v)) return "inf";
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string WithThousands(std::uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string DumpJson(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

std::string Shorten(const std::string& s) {
  return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

}  // namespace

Status WriteOutput(const std::string& path, const std::vector<std::string>& inputs,
                   const std::function<Status(std::ostream&)>& write) {
  // /dev/stdout too: opened again it is a second descriptor of the same
  // file, whose writes and std::cout's would overwrite each other there.
  if (path == "-" || path == "/dev/stdout") {
    TM_RETURN_IF_ERROR(write(std::cout));
    return FlushStdout();
  }
  TM_RETURN_IF_ERROR(CheckNotAnInput(path, inputs));
  Status st = WriteFileWhole(path, write);
  // The system refused the file (permission, a missing folder, a parent
  // that is a file): no bad input but an output that could not be written
  // (exit 1). A directory given as the output stays a bad argument (2).
  if (st.code() == StatusCode::kNotFound) return FailedPrecondition(st.message());
  return st;
}

Status CheckNotAnInput(const std::string& path, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  if (path.empty() || path == "-") return Status::Ok();
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (in != "-" && fs::equivalent(fs::path(path), fs::path(in), ec) && !ec)
      return InvalidArgument(path + ": is the input " + in + "; refusing to overwrite it");
  }
  return Status::Ok();
}

Status NotApplicable(std::string_view flag, std::string_view why) {
  return InvalidArgument(std::string(flag) + " " + std::string(why));
}

Status CheckDistinctOutputs(const std::vector<std::pair<std::string_view, std::string>>& outputs) {
  namespace fs = std::filesystem;
  auto same = [](const std::string& a, const std::string& b) {
    if (a == b) return true;
    std::error_code ec_a, ec_b;
    // (Not yet existing: the same path written two ways, "x" and "./x".)
    const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec_a), ec_a);
    const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec_b), ec_b);
    return !ec_a && !ec_b && pa == pb;
  };
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [name_a, a] = outputs[i];
      const auto& [name_b, b] = outputs[j];
      if (a.empty() || b.empty() || !same(a, b)) continue;
      if (a == "-" && b == "-") continue;  // standard output takes both, one after the other
      return InvalidArgument(std::string(name_a) + " and " + std::string(name_b) + " both name " + a +
                             ": give each output its own file");
    }
  return Status::Ok();
}

Status FlushStdout() {
  std::cout.flush();
  const bool failed = !std::cout || std::fflush(stdout) != 0 || std::ferror(stdout);
  if (failed) {
    std::cout.clear();
    return Internal(std::string("standard output: write failed") +
                    (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  }
  return Status::Ok();
}

CLI::Validator Unsigned64(std::uint64_t min, std::uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& s) -> std::string {
        if (s.empty()) return "empty: expected a non-negative integer";
        for (char c : s)
          if (c < '0' || c > '9')
            return "'" + Shorten(s) + "' is not a non-negative integer";
        std::uint64_t v = 0;
        for (char c : s) {
          const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
          if (v > (UINT64_MAX - d) / 10) return "'" + Shorten(s) + "' is too large for 64 bits";
          v = v * 10 + d;
        }
        if (v < min || v > max)
          return std::to_string(v) + " is outside [" + std::to_string(min) + ", " +
                 std::to_string(max) + "]";
        return std::string();
      },
      min == 0 ? "UINT" : "UINT>=" + std::to_string(min), "Unsigned64");
}

CLI::Validator PowerOfTwoAlign() {
  const CLI::Validator digits = Unsigned64(1, kMaxAlignOption);
  return CLI::Validator(
      [digits](std::string& s) -> std::string {
        std::string copy = s;
        std::string err = digits(copy);
        if (!err.empty()) return err;
        const std::uint64_t v = std::stoull(s);
        if ((v & (v - 1)) != 0) return std::to_string(v) + " is not a power of two";
        return std::string();
      },
      "POW2", "PowerOfTwoAlign");
}

CLI::Validator Seconds() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        // Decimal only (strtod alone would take hex and leading blanks).
        if (s.find_first_not_of("0123456789.eE+-") != std::string::npos)
          return "'" + Shorten(s) + "' is not a number of seconds in [0, 1e9]";
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v) ||
            v < 0 || v > 1e9)
          return "'" + Shorten(s) + "' is not a number of seconds in [0, 1e9]";
        return std::string();
      },
      "SECONDS", "Seconds");
}

}  // namespace tensormem::cli
