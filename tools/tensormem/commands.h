// SPDX-License-Identifier: Apache-2.0
// Each subcommand registers itself on the app; its callback stores the exit
// code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>

namespace tensormem::cli {

void AddPlanCommand(CLI::App& app, int* exit_code);
void AddReplayCommand(CLI::App& app, int* exit_code);
void AddRecordsCommand(CLI::App& app, int* exit_code);
void AddSolveCommand(CLI::App& app, int* exit_code);

}  // namespace tensormem::cli
