// SPDX-License-Identifier: Apache-2.0
#include "tensormem/types.h"

#include <cmath>
#include <limits>

#include "core/checked_math.h"

namespace tensormem {

Status ValidateAlignment(std::uint64_t alignment, std::string_view what, std::uint64_t max) {
  if (alignment != 0 && (alignment & (alignment - 1)) == 0 && alignment <= max) return Status::Ok();
  return InvalidArgument(std::string(what) + ": alignment " + std::to_string(alignment) +
                         " is not a power of two between 1 and " + std::to_string(max));
}

Extent::Extent(std::initializer_list<std::uint64_t> d) {
  for (std::uint64_t v : d) {
    if (rank == 4) break;
    dims[static_cast<std::size_t>(rank++)] = v;
  }
}

std::uint64_t Extent::Elements() const {
  if (rank == 0) return 0;
  std::uint64_t n = 1;
  for (int i = 0; i < rank; ++i) n = internal::SaturatingMul(n, (*this)[i]);
  return n;
}

bool Extent::Covers(const Extent& other) const {
  if (rank != other.rank) return false;
  for (int i = 0; i < rank; ++i)
    if ((*this)[i] < other[i]) return false;
  return true;
}

std::string Extent::ToString() const {
  std::string s;
  for (int i = 0; i < rank; ++i) {
    if (i) s += 'x';
    s += std::to_string((*this)[i]);
  }
  return s;
}

std::uint64_t TotalSize(const ObjectsPlan& plan) {
  std::uint64_t total = 0;
  for (std::uint64_t s : plan.object_sizes) total = internal::SaturatingAdd(total, s);
  return total;
}

std::uint64_t TotalElements(const ExtentObjectsPlan& plan) {
  std::uint64_t total = 0;
  for (const Extent& e : plan.object_sizes) total = internal::SaturatingAdd(total, e.Elements());
  return total;
}

double Ratio(std::uint64_t total, std::uint64_t lower_bound) {
  if (lower_bound == 0) return total == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return static_cast<double>(total) / static_cast<double>(lower_bound);
}

}  // namespace tensormem
