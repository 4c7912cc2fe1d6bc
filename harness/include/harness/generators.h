// SPDX-License-Identifier: Apache-2.0
// Synthetic usage records for tests and benchmarks (internal, not installed).
#pragma once

#include <cstdint>
#include <vector>

#include "tensormem/types.h"

namespace tensormem::internal {

// A deep-network-like sequence: task t writes tensor t, read by task t + 1
// and, with some probability, by a later task (a skip connection, up to
// `max_skip` tasks ahead); a few tensors live for the whole run (inputs,
// state); sizes are log-uniform between 256 bytes and 8 MiB, rounded to 64.
// Deterministic for a seed. Records come sorted by first task.
std::vector<UsageRecord> GenerateNetworkRecords(std::size_t n, std::uint64_t seed,
                                                int max_skip = 40, double skip_probability = 0.3);

// A chain: n tensors of `size` bytes, tensor i live at tasks i and i + 1
// (each with the next). greedy_by_size reaches the lower bound (two slots);
// for tests of what happens at the bound.
std::vector<UsageRecord> GenerateChainRecords(std::size_t n, std::uint64_t size);

// Uniformly random lifetimes within [0, num_tasks) and sizes in [1, max_size]
// (a few zero-byte ones when `zeros`): the adversarial case for tests.
std::vector<UsageRecord> GenerateRandomRecords(std::size_t n, std::uint64_t seed,
                                               TaskIndex num_tasks, std::uint64_t max_size,
                                               bool zeros = false);

// Grow-and-copy, the shape of autoregressive generation traces
// (gpt2_medium_generate): `weights` tensors are loaded (the first 256 KiB,
// the others 8-64 KiB), then each is converted, one event at a time, into a
// copy of half its size that lives to the end before the original is freed;
// then `rounds` generation loops of `steps` steps, each allocating an
// activation, a KV cache `growth` x 4 KiB larger than the last, and freeing
// the old cache and the activation. One event per task, as a trace replayed
// as a problem (inclusive lifetimes). Deterministic.
std::vector<UsageRecord> GenerateGrowAndCopyRecords(int weights, int steps, int growth, int rounds);

}  // namespace tensormem::internal
