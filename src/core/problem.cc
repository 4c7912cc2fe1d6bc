// SPDX-License-Identifier: Apache-2.0
#include "tensormem/problem.h"
#include "tensormem/validator.h"

#include <algorithm>
#include <string>

#include "core/checked_math.h"

namespace tensormem {

std::vector<Segment> Occupancy(const Buffer& b) {
  std::vector<Segment> out;
  if (b.size == 0) return out;
  TaskIndex next = b.first_task;
  for (const Gap& g : b.gaps) {
    if (g.first_task > next) out.push_back({next, g.first_task - 1, 0, b.size});
    if (g.has_window && g.window_hi > g.window_lo)
      out.push_back({g.first_task, g.last_task, g.window_lo, g.window_hi});
    next = g.last_task + 1;
  }
  if (next <= b.last_task) out.push_back({next, b.last_task, 0, b.size});
  return out;
}

static std::string Where(std::size_t i, const Buffer& b) {
  // Ids are shortened: a hostile one may be megabytes long.
  const std::string id = b.id.size() <= 40 ? b.id : b.id.substr(0, 37) + "...";
  return "buffer " + std::to_string(i) + " (id '" + id + "')";
}

Status CheckProblem(const Problem& problem) {
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    if (b.first_task < 0) return InvalidArgument(Where(i, b) + ": negative first task");
    if (b.last_task > kMaxTaskIndex)
      return OutOfRange(Where(i, b) + ": last task " + std::to_string(b.last_task) +
                        " is beyond the largest supported task index 2^62");
    if (b.last_task < b.first_task)
      return InvalidArgument(Where(i, b) + ": lifetime ends (" + std::to_string(b.last_task) +
                             ") before it starts (" + std::to_string(b.first_task) + ")");
    // Where() only on failure: a string per buffer was 5 % of reading 10^6.
    if (!ValidateAlignment(b.alignment, "").ok()) return ValidateAlignment(b.alignment, Where(i, b));
    if (b.fixed_offset) {
      std::uint64_t end;
      if (!internal::CheckedAdd(*b.fixed_offset, b.size, &end))
        return OutOfRange(Where(i, b) + ": fixed offset + size overflows 64 bits");
      if (*b.fixed_offset % b.alignment != 0)
        return InvalidArgument(Where(i, b) + ": fixed offset " + std::to_string(*b.fixed_offset) +
                               " is not a multiple of its alignment " +
                               std::to_string(b.alignment));
    }
    TaskIndex prev_last = b.first_task - 1;
    for (std::size_t k = 0; k < b.gaps.size(); ++k) {
      const Gap& g = b.gaps[k];
      auto gw = [&] { return Where(i, b) + ": gap " + std::to_string(k); };
      if (g.last_task < g.first_task) return InvalidArgument(gw() + ": ends before it starts");
      if (g.first_task < b.first_task || g.last_task > b.last_task)
        return InvalidArgument(gw() + ": lies outside the buffer's lifetime");
      if (g.first_task <= prev_last)
        return InvalidArgument(gw() + ": overlaps or precedes the previous gap (gaps must be sorted "
                                    "and disjoint)");
      if (g.has_window && (g.window_lo > g.window_hi || g.window_hi > b.size))
        return InvalidArgument(gw() + ": window [" + std::to_string(g.window_lo) + ", " +
                               std::to_string(g.window_hi) + ") is not inside the buffer's " +
                               std::to_string(b.size) + " bytes");
      prev_last = g.last_task;
    }
  }
  return Status::Ok();
}

Status CheckFixedOffsets(const Problem& problem) {
  // Pinned buffers that share a task and a byte can never be planned: the
  // heuristics say so (bad input), not later as an invalid plan; the
  // exact solver answers "infeasible" instead.
  Problem pinned;
  OffsetsPlan at;
  for (const Buffer& b : problem.buffers)
    if (b.fixed_offset) {
      pinned.buffers.push_back(b);
      at.offsets.push_back(*b.fixed_offset);
      at.total = std::max(at.total, *b.fixed_offset + b.size);
    }
  if (pinned.buffers.size() > 1)
    if (Status st = ValidateOffsetsPlan(pinned, at, 1, /*enforce_capacity=*/false); !st.ok())
      return InvalidArgument("fixed offsets conflict: " + st.message());
  return Status::Ok();
}

std::vector<UsageRecord> ToRecords(const Problem& problem) {
  std::vector<UsageRecord> out;
  out.reserve(problem.buffers.size());
  for (const Buffer& b : problem.buffers) out.push_back({b.size, b.first_task, b.last_task});
  return out;
}

Problem FromRecords(std::span<const UsageRecord> records) {
  Problem p;
  p.buffers.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.size = records[i].size;
    b.first_task = records[i].first_task;
    b.last_task = records[i].last_task;
    p.buffers.push_back(std::move(b));
  }
  return p;
}

bool HasExtendedFeatures(const Problem& problem) {
  for (const Buffer& b : problem.buffers)
    if (!b.gaps.empty() || b.fixed_offset || b.alignment > 1) return true;
  return false;
}

}  // namespace tensormem
