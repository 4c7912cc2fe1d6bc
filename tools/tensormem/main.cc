// SPDX-License-Identifier: Apache-2.0
// tensormem: plan tensor memory from the command line.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <new>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cli_util.h"
#include "commands.h"
#include "harness/replay.h"
#include "harness/restart.h"
#include "tensormem/version.h"

namespace {

// Planning a large model or trace first-touches hundreds of MB of fresh
// heap, and on 4 KiB pages the page faults were about half the CPU time of
// a 10^6-node ONNX model (11 CPU-s; 5.5 with glibc's malloc on transparent
// huge pages, at the same peak memory; small inputs also ran no slower and
// within 2 MB of the memory). glibc takes that setting only from the
// environment at start, so the program starts itself again once with it,
// unless GLIBC_TUNABLES already says (glibc.malloc.hugetlb=0 keeps 4 KiB
// pages). Not for replay, which measures glibc's malloc as configured by
// default. Where the system offers no transparent huge pages, or the
// re-execution fails, nothing changes.
void UseHugePagesForTheHeap(char** argv) { tensormem::RestartWithGlibcTunable(argv, "glibc.malloc.hugetlb=1"); }

}  // namespace

int main(int argc, char** argv) {
  // jemalloc (a replay peer) can only be dlopened with spare static TLS.
  const bool replay = argc > 1 && std::string_view(argv[1]) == "replay";
  if (replay)
    tensormem::PrepareProcessForMallocPeers(argv);
  else
    UseHugePagesForTheHeap(argv);
#if defined(__GLIBC__)
  // Planning allocates arrays of megabytes (per buffer, per section) and
  // frees them phase by phase. glibc raises its mmap threshold to the
  // largest block freed (up to 32 MiB); later arrays then come from the
  // heap, whose freed space stays resident: gpt2_medium_generate's solve
  // peaked at 148 MB of RSS for 133 MB of heap, 138 MB with a fixed
  // threshold (arrays of 4 MiB and more are given back when freed). Fixing
  // it also fixes the trim threshold, at 128 KiB unless set: the heap's top
  // was then given back and faulted in again on every refill of the time
  // sweep (a perfect packing of 1,000 buffers fitted in 1.8 s instead of
  // 0.65 s, 121,000 page faults against 4,400), so it is 4 MiB too (gpt2's
  // peak 138.7 -> 141.2 MB). Not for replay, which measures glibc's malloc
  // as configured by default.
  if (!replay) {
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
    mallopt(M_TRIM_THRESHOLD, 4 << 20);
  }
#endif
  CLI::App app{"tensormem: tensor memory planning (shared objects, arena offsets) and allocation"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tensormem " TENSORMEM_VERSION_STRING);
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return tensormem::CutLongWords(CLI::FailureMessage::simple(failed, e));
  });
  int exit_code = tensormem::cli::kExitOk;
  tensormem::cli::AddPlanCommand(app, &exit_code);
  tensormem::cli::AddReplayCommand(app, &exit_code);
  tensormem::cli::AddRecordsCommand(app, &exit_code);
  tensormem::cli::AddSolveCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : tensormem::cli::kExitBadInput;
  } catch (const std::bad_alloc&) {
    // Never an abort: the input asked for more memory than there is.
    std::cerr << "tensormem: error: out of memory (the input needs more memory than this "
                 "process may use)\n";
    return tensormem::cli::kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "tensormem: error: internal error: " << e.what() << '\n';
    return tensormem::cli::kExitFailure;
  }
  // Output lost on the way (a full disk, a closed pipe) is a failure.
  if (tensormem::Status st = tensormem::cli::FlushStdout(); !st.ok()) {
    const int rc = tensormem::cli::ReportError(st);
    return exit_code == tensormem::cli::kExitOk ? rc : exit_code;
  }
  return exit_code;
}
