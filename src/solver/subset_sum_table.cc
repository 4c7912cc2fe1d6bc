// SPDX-License-Identifier: Apache-2.0
#include "solver/subset_sum_table.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace tensormem::solver {

std::vector<std::uint64_t> SubsetSumStorage::Take() {
  if (spare_.empty()) return {};
  const auto widest = std::max_element(
      spare_.begin(), spare_.end(),
      [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
  std::vector<std::uint64_t> words = std::move(*widest);
  *widest = std::move(spare_.back());
  spare_.pop_back();
  return words;
}

void SubsetSumStorage::Give(std::vector<std::uint64_t>&& words) {
  if (words.capacity() == 0) return;
  words.clear();
  spare_.push_back(std::move(words));
  while (spare_.size() > kMaxSpare || spare_bytes() > kMaxSpareBytes) {
    const auto narrowest = std::min_element(
        spare_.begin(), spare_.end(),
        [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
    *narrowest = std::move(spare_.back());
    spare_.pop_back();
  }
}

std::size_t SubsetSumStorage::spare_bytes() const {
  std::size_t bytes = 0;
  for (const auto& words : spare_) bytes += words.capacity() * sizeof(std::uint64_t);
  return bytes;
}

SubsetSumTable::~SubsetSumTable() {
  if (storage_ != nullptr) storage_->Give(std::move(rows_));
}

bool SubsetSumTable::Build(const std::vector<std::uint64_t>& sizes, std::uint64_t max_sum) {
  rows_.clear();
  unit_ = 0;
  for (const std::uint64_t v : sizes) {
    if (v == 0) return false;
    unit_ = std::gcd(unit_, v);
  }
  if (unit_ == 0) unit_ = 1;  // no sizes: only the empty sum
  const std::uint64_t top = max_sum / unit_;
  // (top + 1) * (rows) without overflow: both factors are checked first.
  if (top >= kMaxBits || sizes.size() >= kMaxBits ||
      (top + 1) * (sizes.size() + 1) > kMaxBits)
    return false;
  words_ = static_cast<std::size_t>(top / 64 + 1);
  top_ = top;
  if (storage_ != nullptr && rows_.capacity() == 0) rows_ = storage_->Take();
  rows_.assign(words_ * (sizes.size() + 1), 0);
  Row(sizes.size())[0] = 1;
  for (std::size_t i = sizes.size(); i-- > 0;) {
    const std::uint64_t* from = Row(i + 1);
    std::uint64_t* to = Row(i);
    const std::uint64_t shift = sizes[i] / unit_;
    const std::uint64_t word_shift = shift / 64;
    const unsigned bit_shift = static_cast<unsigned>(shift % 64);
    for (std::size_t w = 0; w < words_; ++w) {
      std::uint64_t shifted = 0;
      if (w >= word_shift) {
        const std::size_t src = w - static_cast<std::size_t>(word_shift);
        shifted = from[src] << bit_shift;
        if (bit_shift != 0 && src > 0) shifted |= from[src - 1] >> (64 - bit_shift);
      }
      to[w] = from[w] | shifted;
    }
    // Sums past `top` in the last word stay: Reaches never asks for them.
  }
  return true;
}

bool SubsetSumTable::Reaches(std::size_t i, std::uint64_t sum) const {
  if (sum % unit_ != 0 || sum / unit_ > top_) return false;
  const std::uint64_t u = sum / unit_;
  return (rows_[i * words_ + static_cast<std::size_t>(u / 64)] >> (u % 64)) & 1;
}

}  // namespace tensormem::solver
