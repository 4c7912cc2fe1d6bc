// SPDX-License-Identifier: Apache-2.0
// Writing an output file whole or not at all (see WriteFileWhole in io.h):
// a temporary file renamed over the old one, which keeps the old file's
// owner and mode; in place where a rename could not keep them (hard links,
// an owner the writer cannot give).
#include <fcntl.h>
#include <sys/stat.h>
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
namespace {

// Gives the temporary file `fd` the owner, group and mode of the file it
// replaces (owner first: a change of owner clears set-id bits); false when
// the owner or group cannot be given.
bool KeepOwnerAndMode(int fd, const struct stat& old) {
  struct stat now {};
  if (::fstat(fd, &now) != 0) return false;
  if ((now.st_uid != old.st_uid || now.st_gid != old.st_gid) && ::fchown(fd, old.st_uid, old.st_gid) != 0)
    return false;
  return ::fchmod(fd, old.st_mode & 07777) == 0;
}

}  // namespace

Status WriteFileWhole(const std::string& path, const std::function<Status(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  std::error_code ec;  // (set for a file that does not exist yet: not an error here)
  const fs::file_status status = fs::status(path, ec);  // through symbolic links
  // Refused before a temporary file goes into the directory's parent.
  if (fs::is_directory(status)) return InvalidArgument(path + ": is a directory, not a file");
  // A device, pipe or socket (/dev/null, a FIFO) is written to as it is:
  // renaming a file over it would replace it (as root, /dev/null itself) and
  // its reader would get nothing. So is anything under /dev or /proc:
  // /dev/stdout redirected to a file is that file's open descriptor, which a
  // rename would leave behind with the rest of the output.
  // Writes `file` through `write` (messages name `path`).
  auto write_to = [&](const std::string& file) -> Status {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    if (!f) return NotFound(path + ": cannot open for writing: " + std::strerror(errno));
    TM_RETURN_IF_ERROR(write(f));
    f.close();
    if (!f) return Internal(path + ": write failed");
    return Status::Ok();
  };
  const bool special = path.starts_with("/dev/") || path.starts_with("/proc/");
  if (special || (fs::exists(status) && !fs::is_regular_file(status))) return write_to(path);
  // A symbolic link keeps pointing where it did: the file it names is
  // replaced, not the link.
  // (Followed link by link: a dangling one names the file to create.)
  fs::path resolved = path;
  for (int hop = 0; fs::is_symlink(fs::symlink_status(resolved, ec)); ++hop) {
    std::error_code link_error;
    const fs::path next = fs::read_symlink(resolved, link_error);
    if (link_error || hop == 40)
      return NotFound(path + ": cannot follow its symbolic link: " +
                      (link_error ? link_error.message() : "too many levels of symbolic links"));
    resolved = next.is_absolute() ? next : resolved.parent_path() / next;
  }
  const std::string target = resolved.string();
  // A file with other hard links is written in place: a rename would split
  // them.
  struct stat old {};
  const bool exists = ::stat(target.c_str(), &old) == 0;
  if (exists && old.st_nlink > 1) return write_to(target);
  // The temporary file sits in the same directory, so the rename is atomic.
  // Created with O_EXCL and mode 0666, so the umask gives it the permissions
  // an ordinary new file gets (mkstemp's 0600 would need the process-wide
  // umask changed to undo, which races with other threads).
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return NotFound(path + ": cannot open for writing: " + std::strerror(errno));
  const bool kept = !exists || KeepOwnerAndMode(fd, old);
  ::close(fd);
  if (!kept) {
    // Only the owner's own write keeps a file owned by someone else (or
    // by a group the writer cannot give): in place.
    fs::remove(tmp, ec);
    return write_to(target);
  }
  Status st = [&]() -> Status {
    TM_RETURN_IF_ERROR(write_to(tmp));
    std::error_code rename_error;
    fs::rename(tmp, target, rename_error);
    if (rename_error) return Internal(path + ": cannot write: " + rename_error.message());
    return Status::Ok();
  }();
  if (!st.ok()) fs::remove(tmp, ec);
  return st;
}

}  // namespace tensormem
