// SPDX-License-Identifier: Apache-2.0
// The message of an allocation the plug-in refuses for want of memory, in
// the words of PyTorch's own allocator ("CUDA out of memory. Tried to
// allocate ..."). It reaches Python as a RuntimeError, not as
// torch.OutOfMemoryError: that is c10's C++ type, which a plug-in built
// without PyTorch's headers cannot throw. Tools that recognise an
// out-of-memory error by its message then still recognise ours: Lightning's
// batch-size finder and toma ("CUDA" and "out of memory" in a RuntimeError's
// one argument), accelerate's find_executable_batch_size ("CUDA out of
// memory." in it).
#pragma once

#include <cstdint>
#include <string>

#include "tensormem/allocators/resource.h"
#include "tensormem/status.h"

namespace tensormem::torch_plugin {

inline std::string OutOfMemoryMessage(std::uint64_t bytes, int device, const Status& why) {
  return "CUDA out of memory. Tried to allocate " + HumanBytes(bytes) + " (" + std::to_string(bytes) +
         " bytes) on GPU " + std::to_string(device) + " through tensormem's plug-in: " + why.ToString();
}

}  // namespace tensormem::torch_plugin
