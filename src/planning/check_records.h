// SPDX-License-Identifier: Apache-2.0
// The lifetime check of the record-based entry points (PlanObjects, and
// PlanOffsets above the solver), shared so both report it in one way.
#pragma once

#include <span>
#include <string>

#include "tensormem/status.h"
#include "tensormem/types.h"

namespace tensormem::planning {

template <typename Record>
Status CheckRecords(std::span<const Record> records) {
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (r.first_task < 0 || r.last_task < r.first_task || r.last_task > kMaxTaskIndex)
      return InvalidArgument("tensor " + std::to_string(i) + ": lifetime [" +
                             std::to_string(r.first_task) + ", " + std::to_string(r.last_task) +
                             "] is not a valid inclusive task range in [0, 2^62]");
  }
  return Status::Ok();
}

}  // namespace tensormem::planning
