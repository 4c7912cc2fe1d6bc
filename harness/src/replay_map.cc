// SPDX-License-Identifier: Apache-2.0
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
  // Refused part way: the events before the refusal, blocks freed later
  // live to its end.
  if (placement.replayed < trace.events.size()) {
    Trace prefix;
    prefix.source = trace.source;
    prefix.events.assign(trace.events.begin(),
                         trace.events.begin() + static_cast<std::ptrdiff_t>(placement.replayed));
    for (TraceEvent& e : prefix.events) {
      if (e.action != TraceAction::kAllocate) continue;
      ++prefix.num_allocations;
      if (e.partner != kNoTraceEvent && e.partner >= placement.replayed) e.partner = kNoTraceEvent;
    }
    ReplayPlacement rest = placement;
    rest.replayed = prefix.events.size();
    const std::string line = std::to_string(trace.events[placement.replayed].line);
    return WriteReplayHtmlMap(out, prefix, rest,
                              title.empty() ? trace.source + " replayed through " + placement.allocator +
                                                  " up to line " + line + ", where it ran out of memory"
                                            : title);
  }
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
