// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the CLI: exit codes, error reporting, tables.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include "tensormem/status.h"

namespace tensormem::cli {

// The largest --align any subcommand takes (2^32: alignments beyond are
// not alignments but mistakes, and would overflow offsets).
inline constexpr std::uint64_t kMaxAlignOption = std::uint64_t{1} << 32;

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

// JSON text for the console: bytes that are not UTF-8 (ids, paths) become
// U+FFFD instead of an exception.
std::string DumpJson(const nlohmann::json& j, int indent = -1);

// Writes an output file: "-" (or /dev/stdout) is standard output; otherwise
// WriteFileWhole (io.h: whole or not at all, so a failed run never leaves
// half a file). Refuses (InvalidArgument) an output that is one of `inputs`
// (same file, by inode). A file the system will not create or replace
// (permission denied, a missing folder) is FailedPrecondition (exit 1).
Status WriteOutput(const std::string& path, const std::vector<std::string>& inputs,
                   const std::function<Status(std::ostream&)>& write);

// InvalidArgument when `path` names one of `inputs` (same file, by inode):
// checked before any work so that nothing is printed for a refused run.
Status CheckNotAnInput(const std::string& path, const std::vector<std::string>& inputs);

// InvalidArgument "FLAG WHY": an option was given that would change
// nothing of what was asked for (`why` says what it applies to). Every
// subcommand refuses such options before any work, rather than ignore them.
Status NotApplicable(std::string_view flag, std::string_view why);

// InvalidArgument when two of `outputs` (option name, path; empty: not
// given) name one file, as one would overwrite the other: checked before any
// work. Standard output ("-") may take several.
Status CheckDistinctOutputs(const std::vector<std::pair<std::string_view, std::string>>& outputs);

// Flushes standard output; an error when anything written to it was lost
// (a full disk, a closed pipe).
Status FlushStdout();

// A validator for unsigned 64-bit options: digits only (no sign, no
// wrapping, no saturation), within [min, max]; the message quotes at most a
// few dozen characters of the value.
CLI::Validator Unsigned64(std::uint64_t min = 0, std::uint64_t max = UINT64_MAX);
// --align everywhere: one meaning, the byte alignment of every offset or
// address, a power of two in [1, kMaxAlignOption].
CLI::Validator PowerOfTwoAlign();
// Seconds: a finite number in [0, 10^9].
CLI::Validator Seconds();
std::string WithThousands(std::uint64_t v);

}  // namespace tensormem::cli
