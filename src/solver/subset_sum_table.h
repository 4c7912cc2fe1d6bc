// SPDX-License-Identifier: Apache-2.0
// Which sums the suffixes of a list of sizes reach: row i holds the sums of
// the subsets of sizes[i..] (in units of their common divisor), so a search
// for the subsets with a given sum never enters a branch without one. The
// time sweep's pairing enumeration (time_sweep.cc) builds one per large
// side: there a side of 40 buffers has 2^40 subsets, most targets are
// reached by none, and the plain search spent its time in those dead ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tensormem::solver {

// Storage that tables give back when they go and take when built, so that
// the megabytes of a table are allocated once per solve, not per
// enumeration: freed, blocks above glibc's mmap threshold go back to the
// system and are faulted in again (a 1,000-buffer perfect packing built 60
// tables of 4.5 MB: 66,000 page faults, 1.07 s against 0.25 s). Keeps the
// widest vectors, at most kMaxSpare of them and kMaxSpareBytes together
// (two of the largest tables); single-threaded, like the searches that
// share it.
class SubsetSumStorage {
 public:
  static constexpr std::size_t kMaxSpare = 4;
  static constexpr std::size_t kMaxSpareBytes = std::size_t{16} << 20;
  // A vector with the largest capacity kept (empty), or a new one.
  std::vector<std::uint64_t> Take();
  void Give(std::vector<std::uint64_t>&& words);
  std::size_t spare() const { return spare_.size(); }
  std::size_t spare_bytes() const;

 private:
  std::vector<std::vector<std::uint64_t>> spare_;
};

class SubsetSumTable {
 public:
  // `storage` (may be null: the table allocates its own) must outlive the table.
  explicit SubsetSumTable(SubsetSumStorage* storage = nullptr) : storage_(storage) {}
  ~SubsetSumTable();
  SubsetSumTable(const SubsetSumTable&) = delete;
  SubsetSumTable& operator=(const SubsetSumTable&) = delete;

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
  SubsetSumStorage* storage_;
  std::uint64_t unit_ = 0, top_ = 0;
  std::size_t words_ = 0;
  std::vector<std::uint64_t> rows_;
};

}  // namespace tensormem::solver
