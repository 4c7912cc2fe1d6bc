// SPDX-License-Identifier: Apache-2.0
// The solver's canonical buffer order: the buffers sorted by their own data
// (lifetime, size, alignment, fixed offset, gaps), never by their position
// in the input or their ids, so that the same problem gets the same answer
// whatever the order of its rows. Buffers equal in all of these are
// interchangeable: which of them gets which offset changes neither the
// status nor the height.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensormem/problem.h"
#include "tensormem/types.h"

namespace tensormem::solver {

// Position i of the canonical order holds the problem's buffer order[i].
std::vector<std::size_t> CanonicalBufferOrder(const Problem& problem);

// The problem's buffers in `order` (capacity kept).
Problem Reordered(const Problem& problem, std::span<const std::size_t> order);

// `offsets` per position of `order` (as the search returns them) as offsets
// per buffer of the problem.
std::vector<std::uint64_t> OffsetsInProblemOrder(std::span<const std::size_t> order,
                                                 const std::vector<std::uint64_t>& offsets);

// The name of the buffer at position `i` in an error or a reason, as the
// caller knows it: "buffer N (id 'X')", N the caller's index (`caller`
// maps positions to it; empty: the position itself).
std::string BufferName(const Problem& problem, std::size_t i, std::span<const std::size_t> caller);

}  // namespace tensormem::solver
