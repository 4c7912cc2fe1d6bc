// Shared pieces of the CLI: exit codes, error reporting, tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensormem/status.h"

namespace tensormem::cli {

// Exit codes of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;   // internal error, or a negative answer (see command)
inline constexpr int kExitBadInput = 2;  // malformed input or arguments

// Prints "tensormem: error: ..." and returns the exit code for the status.
int ReportError(const Status& status);

// A plain-text table with right-aligned numeric columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string ToString() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string FormatDouble(double v, int decimals);
std::string WithThousands(std::uint64_t v);

}  // namespace tensormem::cli
