// SPDX-License-Identifier: Apache-2.0
// tensormem replay --html: the memory map of a replay.
#pragma once

#include <string>
#include <vector>

#include "harness/replay.h"

namespace tensormem::cli {

// Replays the trace once more (untimed) through the first of `allocators`
// that is one of ours and writes its interactive memory map to `path`.
Status WriteReplayMap(const std::string& path, const Trace& trace,
                      const std::vector<ReplayAllocator>& allocators, const ReplayParams& params);

}  // namespace tensormem::cli
