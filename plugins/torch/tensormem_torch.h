// SPDX-License-Identifier: Apache-2.0
/* The PyTorch plug-in's C interface (libtensormem_torch.so): the two
 * functions torch.cuda.memory.CUDAPluggableAllocator loads, plus statistics
 * and empty_cache. One tensormem `vmm` allocator per device, over CUDA
 * physical memory, created on the device's first allocation.
 *
 *   import torch
 *   a = torch.cuda.memory.CUDAPluggableAllocator(
 *       "libtensormem_torch.so", "tensormem_torch_malloc_or_raise", "tensormem_torch_free")
 *   lib = ctypes.CDLL("libtensormem_torch.so")    # record_stream and empty_cache hooks:
 *   a.allocator().set_record_stream_fn(
 *       ctypes.cast(lib.tensormem_torch_record_stream, ctypes.c_void_p).value)
 *   a.allocator().set_reset_fn(ctypes.cast(lib.tensormem_torch_empty_cache, ctypes.c_void_p).value)
 *   torch.cuda.memory.change_current_allocator(a)   # before any CUDA allocation
 *
 * Settings come from the environment, read once at the first allocation:
 * TENSORMEM_VMM_LIMIT (bytes per device), TENSORMEM_VMM_SMALL (small-request
 * threshold), TENSORMEM_VMM_RESTITCH (0 or 1), TENSORMEM_VMM_GROWTH_SLACK
 * (0 to 1: VmmParams::growth_slack), TENSORMEM_VMM_MAX_HANDLE (granules per
 * handle, VmmParams::max_handle_granules), TENSORMEM_VMM_GROW_AHEAD (0 to 1:
 * VmmParams::grow_ahead), TENSORMEM_VMM_PROTECT_REFAULTED (0 or 1:
 * VmmParams::protect_refaulted). A failed allocation leaves its
 * report in tensormem_torch_last_error(); so does an allocation on a stream
 * being captured into a CUDA graph (no graph memory pools here: capture
 * graphs with PyTorch's own allocator). stream is a cudaStream_t. */
#ifndef TENSORMEM_TORCH_H_
#define TENSORMEM_TORCH_H_

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* NULL on failure, for C callers. */
void* tensormem_torch_malloc(ssize_t size, int device, void* stream);
/* What PyTorch loads: PyTorch's pluggable allocator does not check what
 * alloc_fn returns (a NULL becomes a tensor at address 0), so a failure
 * throws std::runtime_error with the report (a Python RuntimeError). Only
 * for C++ callers that catch, such as PyTorch. */
void* tensormem_torch_malloc_or_raise(ssize_t size, int device, void* stream);
void tensormem_torch_free(void* ptr, ssize_t size, int device, void* stream);
/* PyTorch's record_stream (CUDAPluggableAllocator's set_record_stream_fn):
 * the block at ptr is also used on stream, so its free waits for the work
 * queued there at the time of the free. tensormem.torch.enable() wires it. */
void tensormem_torch_record_stream(void* ptr, void* stream);
/* JSON of the device's statistics ({"device":0,"bytes_in_use":..,
 * "peak_bytes_in_use":..,"bytes_reserved":..,"peak_bytes_reserved":..,
 * "num_allocs":..,"num_frees":..,"num_failed_allocs":..,"map_calls":..,...}),
 * "{}" for a device not used yet, written to buf (at most len bytes with the
 * terminating NUL). Returns the length of the whole JSON text. */
size_t tensormem_torch_stats(int device, char* buf, size_t len);
/* empty_cache: gives cached memory back to the device; returns the bytes given
 * back, or -1 (see tensormem_torch_last_error). */
long long tensormem_torch_release_cached(int device);
/* torch.cuda.set_per_process_memory_fraction(fraction, device)
 * (set_memory_fraction_fn, wired by tensormem.torch.enable()): the device's
 * limit becomes fraction x its total memory (at least one granule); memory
 * held above it stays held, only new granules are refused. */
void tensormem_torch_set_memory_fraction(double fraction, int device);
/* torch.cuda.empty_cache() (CUDAPluggableAllocator's set_reset_fn, wired by
 * tensormem.torch.enable()): gives cached memory back on every device. */
void tensormem_torch_empty_cache(void);
/* The message of the last failure on this thread ("" when none). */
const char* tensormem_torch_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TENSORMEM_TORCH_H_ */
