// SPDX-License-Identifier: Apache-2.0
#include "harness/restart.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tensormem {

void RestartWithGlibcTunable(char** argv, std::string_view setting) {
#if defined(__GLIBC__)
  const std::string_view name = setting.substr(0, setting.find('='));
  const char* current = std::getenv("GLIBC_TUNABLES");
  if (current != nullptr && std::string_view(current).find(name) != std::string_view::npos) return;
  std::string value = current != nullptr && *current ? std::string(current) + ":" : std::string();
  value += setting;
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
#else
  (void)argv;
  (void)setting;
#endif
}

}  // namespace tensormem
