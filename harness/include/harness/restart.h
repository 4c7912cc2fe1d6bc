// SPDX-License-Identifier: Apache-2.0
// Starting the program again with a glibc tunable set: glibc reads
// GLIBC_TUNABLES only when a process starts, so a setting the program wants
// for itself (spare static TLS for jemalloc, huge pages for its heap) needs
// one re-execution.
#pragma once

#include <string_view>

namespace tensormem {

// Re-executes the program (/proc/self/exe with the same arguments) once with
// `setting` ("glibc.NAMESPACE.TUNABLE=VALUE") added to GLIBC_TUNABLES.
// Returns, changing nothing, when GLIBC_TUNABLES already names that tunable
// (the user's choice, or this process's second start), and when the program
// cannot be re-executed; outside glibc it does nothing.
void RestartWithGlibcTunable(char** argv, std::string_view setting);

}  // namespace tensormem
