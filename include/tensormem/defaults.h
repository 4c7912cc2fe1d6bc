// SPDX-License-Identifier: Apache-2.0
// The defaults every surface shares: the C++ parameter structs start from
// these values, the CLI's options and the Python functions read them, so the
// same question gets the same answer wherever it is asked.
//
// Alignment, in one sentence: planning and solving align offsets to 1 byte
// unless asked (a buffer's own alignment always applies on top), while what
// tensormem makes from tensors itself -- an ONNX model's usage records, a
// trace's replayed allocations -- is aligned to 64 bytes, as tensor
// allocators align.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tensormem::defaults {

// PlanParams, SolverParams; `plan` and `solve` on problem files, Python
// plan() and solve() on arrays and problems.
inline constexpr std::uint64_t kPlanAlignment = 1;
// GraphPlanParams (ONNX models' tensors), ReplayParams (a trace's
// allocations); `plan`/`records` on a model, `replay`, Python
// records_from_onnx(), load_problem() on a model, replay().
inline constexpr std::uint64_t kTensorAlignment = 64;
// Seconds a plan or a solve may take.
inline constexpr double kTimeLimitSeconds = 10.0;
// Offsets best's exact polish of its heuristic winner (PlanParams::polish_*;
// `plan -s best`, Python plan(strategy="best")): at most kPolishNodes search
// nodes, the same plan on every machine, and at most the smaller of
// kPolishSeconds and kPolishTimeShare of the time limit, a safety cap so
// that the polish stays a small part of what the caller allowed (at the
// default limit, 1 s; a slow machine then stops the polish before its nodes).
inline constexpr std::uint64_t kPolishNodes = 50'000;
inline constexpr double kPolishSeconds = 2.0;
inline constexpr double kPolishTimeShare = 0.1;
// The execution order of a model's nodes (ScheduleParams; `plan`/`records
// --order`, Python records_from_onnx() and plan() on a model): the file's.
inline constexpr std::string_view kOrder = "given";
// The exact order search's limits: seconds (the CLI passes --time-limit),
// search states, the bytes they may take, and the beam's width per level.
inline constexpr double kOrderTimeLimitSeconds = kTimeLimitSeconds;
inline constexpr std::size_t kOrderMaxStates = 20'000'000;
inline constexpr std::size_t kOrderMaxStateBytes = std::size_t{1} << 30;
inline constexpr std::size_t kOrderBeamWidth = 256;
// Timed passes of a replay (the median is reported).
inline constexpr int kReplayRepetitions = 3;
// Passes over the same allocator after a replay's cold one; the warm
// figures are the last one's.
inline constexpr int kReplayWarmPasses = 1;

}  // namespace tensormem::defaults
