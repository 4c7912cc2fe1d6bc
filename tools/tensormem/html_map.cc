#include "html_map.h"

#include <fstream>

namespace tensormem::cli {

Status WriteReplayMap(const std::string& path, const Trace& trace,
                      const std::vector<ReplayAllocator>& allocators, const ReplayParams& params) {
  for (ReplayAllocator a : allocators) {
    if (IsMallocPeer(a)) continue;
    TM_ASSIGN_OR_RETURN(ReplayPlacement placement, ReplayPlacements(trace, a, params));
    std::ofstream f(path, std::ios::binary);
    if (!f) return NotFound(path + ": cannot open for writing");
    TM_RETURN_IF_ERROR(WriteReplayHtmlMap(f, trace, placement));
    f.close();
    if (!f) return Internal(path + ": write failed");
    return Status::Ok();
  }
  return InvalidArgument("--html: the map needs one of our allocators (bfc, bfc_compact, pool, "
                         "system, ...), not only malloc peers");
}

}  // namespace tensormem::cli
