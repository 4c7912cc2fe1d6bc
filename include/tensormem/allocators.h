// Umbrella header: the dynamic allocators, their backends and adaptors,
// allocation traces and their replay.
#pragma once

#include "tensormem/allocators/adaptors.h"
#include "tensormem/allocators/backend.h"
#include "tensormem/allocators/bfc_allocator.h"
#include "tensormem/allocators/buffer_pool.h"
#include "tensormem/allocators/replay.h"
#include "tensormem/allocators/resource.h"
#include "tensormem/allocators/system_allocator.h"
#include "tensormem/allocators/trace.h"
