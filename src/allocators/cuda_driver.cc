// SPDX-License-Identifier: Apache-2.0
// The CUDA driver, opened with dlopen (cuda_driver.h says why).
#if TENSORMEM_HAVE_CUDA
#include "cuda_driver.h"

#include <dlfcn.h>

#include <type_traits>

namespace tensormem::cuda {

const Driver& LoadDriver() {
  static const Driver driver = [] {
    Driver d;
    d.library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (d.library == nullptr) {
      const char* e = dlerror();
      d.error = std::string("cannot load the CUDA driver (libcuda.so.1): ") + (e ? e : "unknown");
      return d;
    }
    bool ok = true;
    auto find = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d.library, symbol));
      if (fn == nullptr) {
        ok = false;
        d.error = std::string("the CUDA driver has no ") + symbol;
      }
    };
#define TM_CUDA_DRIVER_FIND(name, symbol) find(d.name, symbol);
    TM_CUDA_DRIVER_FUNCTIONS(TM_CUDA_DRIVER_FIND)
#undef TM_CUDA_DRIVER_FIND
    if (!ok) {
      dlclose(d.library);
      d.library = nullptr;
    }
    return d;
  }();
  return driver;
}

std::string DriverError(const Driver& d, const std::string& call, CUresult r) {
  const char* text = nullptr;
  if (d.cuGetErrorString != nullptr) d.cuGetErrorString(r, &text);
  return call + ": " + (text ? text : "error " + std::to_string(static_cast<int>(r)));
}

}  // namespace tensormem::cuda
#endif  // TENSORMEM_HAVE_CUDA
