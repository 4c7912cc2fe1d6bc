// SPDX-License-Identifier: Apache-2.0
// Umbrella header: the dynamic allocators, their backends and adaptors, and
// the physical memory (host granules, CUDA) the vmm allocator stitches.
// (Allocation traces are read by tensormem/trace.h; replaying them through
// the allocators is the benchmark harness's work, not the library's.)
#pragma once

#include "tensormem/allocators/adaptors.h"
#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "tensormem/allocators/physical_memory.h"
#include "tensormem/allocators/resource.h"
#include "tensormem/allocators/system_allocator.h"
#include "tensormem/allocators/vmm_allocator.h"
