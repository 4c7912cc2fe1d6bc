// Which sums the suffixes of a list of sizes reach: row i holds the sums of
// the subsets of sizes[i..] (in units of their common divisor), so a search
// for the subsets with a given sum never enters a branch without one. The
// time sweep's pairing enumeration (time_sweep.cc) builds one per large
// side: there a side of 40 buffers has 2^40 subsets, most targets are
// reached by none, and the plain search spent its time in those dead ends.
#pragma once

#include <cstdint>
#include <vector>

namespace tensormem::solver {

class SubsetSumTable {
 public:
  // The table's size limit in bits (8 MiB: the sweep keeps one per level of
  // a pairing being built).
  static constexpr std::uint64_t kMaxBits = std::uint64_t{1} << 26;

  // Sums up to `max_sum` of the subsets of every suffix of `sizes`. False
  // (and no table) when the table would pass kMaxBits or a size is 0.
  bool Build(const std::vector<std::uint64_t>& sizes, std::uint64_t max_sum);
  // Whether some subset of sizes[i..] (i <= sizes.size()) sums to `sum`.
  // Only after a Build that returned true.
  bool Reaches(std::size_t i, std::uint64_t sum) const;
  // Words written by Build (the sweep counts them as enumeration work).
  std::uint64_t cost() const { return rows_.size(); }

 private:
  std::uint64_t* Row(std::size_t i) { return rows_.data() + i * words_; }
  std::uint64_t unit_ = 0, top_ = 0;
  std::size_t words_ = 0;
  std::vector<std::uint64_t> rows_;
};

}  // namespace tensormem::solver
