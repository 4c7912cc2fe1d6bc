// SPDX-License-Identifier: Apache-2.0
#include "html_map.h"

#include <ostream>

#include "cli_util.h"

namespace tensormem::cli {

Status WriteReplayMap(const std::string& path, const Trace& trace,
                      const std::vector<ReplayAllocator>& allocators, const ReplayParams& params) {
  for (ReplayAllocator a : allocators) {
    if (IsMallocPeer(a)) continue;
    TM_ASSIGN_OR_RETURN(ReplayPlacement placement, ReplayPlacements(trace, a, params));
    // Never the trace itself; written to a temporary file renamed into place.
    return WriteOutput(path, {trace.source}, [&](std::ostream& f) { return WriteReplayHtmlMap(f, trace, placement); });
  }
  return InvalidArgument("--html: the map needs one of our allocators (bfc, bfc_compact, pool, "
                         "system, ...), not only malloc peers");
}

}  // namespace tensormem::cli
