// SPDX-License-Identifier: Apache-2.0
// std::stable_sort under a deadline: sorts of 10^6 elements and more take
// a large part of a second, longer than a planning call's time limit may
// allow, so the set-ups that sort read the limit too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/deadline.h"

namespace tensormem::internal {

// std::stable_sort(v, less) in runs of 2^14 elements, then merge passes,
// reading the deadline after each run and each merge (every few
// milliseconds on 10^6 elements): false, v in some order, when it passes.
template <typename T, typename Less>
bool StableSortUntil(std::vector<T>& v, Less less, Deadline* deadline) {
  constexpr std::size_t kRun = std::size_t{1} << 14;
  const std::size_t n = v.size();
  if (deadline == nullptr || n <= kRun) {
    std::stable_sort(v.begin(), v.end(), less);
    return deadline == nullptr || !deadline->Expired();
  }
  for (std::size_t lo = 0; lo < n; lo += kRun) {
    std::stable_sort(v.begin() + lo, v.begin() + std::min(n, lo + kRun), less);
    if (deadline->Expired()) return false;
  }
  std::vector<T> merged(n);
  for (std::size_t width = kRun; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      const std::size_t mid = std::min(n, lo + width), hi = std::min(n, lo + 2 * width);
      std::merge(v.begin() + lo, v.begin() + mid, v.begin() + mid, v.begin() + hi,
                 merged.begin() + lo, less);
      if (deadline->Expired()) return false;
    }
    v.swap(merged);
  }
  return true;
}

}  // namespace tensormem::internal
