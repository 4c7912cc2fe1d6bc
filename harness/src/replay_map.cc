// The replay's memory map (replay.h WriteReplayHtmlMap): the placement of a
// replay drawn by the library's HTML map, with the reserved bytes as a line.
#include <ostream>
#include <string>

#include "harness/replay.h"
#include "tensormem/io.h"
#include "tensormem/lower_bounds.h"

namespace tensormem {

Status WriteReplayHtmlMap(std::ostream& out, const Trace& trace, const ReplayPlacement& placement,
                          const std::string& title) {
  const Problem problem = TraceToProblem(trace);
  if (placement.offsets.size() != problem.buffers.size())
    return InvalidArgument("replay placement has " + std::to_string(placement.offsets.size()) +
                           " offsets for " + std::to_string(problem.buffers.size()) + " allocations");
  OffsetsPlan plan;
  plan.offsets = placement.offsets;
  plan.total = placement.top;
  plan.strategy = placement.allocator;
  HtmlMapOptions options;
  options.title = title.empty() ? trace.source + " replayed through " + placement.allocator : title;
  options.lower_bound = PeakLiveBytes(problem);
  options.x_label = "event";
  options.reserved = placement.reserved;
  return WriteHtmlMap(out, problem, plan, options);
}

}  // namespace tensormem
