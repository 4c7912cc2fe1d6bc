// Relay chains: a buffer that starts at the task right after another of the
// same size (and alignment) ends often takes over its place in real
// programs (an activation overwritten by the next of its shape; MiniMalloc
// D has 25 such chains, J 58). Merging each such chain into one buffer is
// a restriction (every plan of the merged problem is one of the original,
// with each buffer at its chain's offset, not the reverse), with the same
// live bytes at every task, so the same peak. Its plans are upper bounds
// only: its proofs say nothing of the original. On MiniMalloc D (213
// buffers, 174 chains) the merged problem is solved at D's peak in 0.33 M
// nodes, where the search of D itself ends 0.1-2 % above it at 60 s.
//
// Only plain buffers chain (no gaps, no fixed offset, size > 0). Chains are
// grown greedily in order of first task (ties by index): each buffer takes
// the lowest-indexed unclaimed successor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensormem/problem.h"

namespace tensormem::solver {

struct RelayChains {
  Problem merged;  // one buffer per chain; ids "relay<k>" (k: its first buffer)
  std::vector<std::size_t> chain_of;  // per original buffer: its merged buffer
};

RelayChains MergeRelays(const Problem& problem);

// The original problem's offsets from the merged problem's (each buffer at
// its chain's offset).
std::vector<std::uint64_t> SplitRelays(const RelayChains& chains,
                                       const std::vector<std::uint64_t>& merged_offsets);

}  // namespace tensormem::solver
