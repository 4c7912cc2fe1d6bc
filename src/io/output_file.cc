// Writing an output file whole or not at all (see WriteFileWhole in io.h).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "tensormem/io.h"

namespace tensormem {

Status WriteFileWhole(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  // Refused before a temporary file goes into the directory's parent.
  if (std::error_code ec; fs::is_directory(path, ec))
    return InvalidArgument(path + ": is a directory, not a file");
  // The temporary file sits in the same directory, so the rename is atomic.
  // Created with O_EXCL and mode 0666, so the umask gives it the permissions
  // an ordinary new file gets (mkstemp's 0600 would need the process-wide
  // umask changed to undo, which races with other threads).
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return NotFound(path + ": cannot open for writing: " + std::strerror(errno));
  ::close(fd);
  Status st = [&]() -> Status {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return NotFound(path + ": cannot open for writing");
    TM_RETURN_IF_ERROR(write(f));
    f.close();
    if (!f) return Internal(path + ": write failed");
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) return Internal(path + ": cannot write: " + ec.message());
    return Status::Ok();
  }();
  if (!st.ok()) {
    std::error_code ec;
    fs::remove(tmp, ec);
  }
  return st;
}

}  // namespace tensormem
