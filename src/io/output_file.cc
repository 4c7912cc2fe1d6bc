// SPDX-License-Identifier: Apache-2.0
// Writing an output file whole or not at all (see WriteFileWhole in io.h):
// a temporary file renamed over the old one, which keeps the old file's
// owner and mode; in place where a rename could not keep them (hard links,
// an owner the writer cannot give), from a whole copy in memory, with the
// old content written back should the write fail midway.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

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

using Writer = std::function<Status(std::ostream&)>;

// Writes `file` through `write` as a stream (messages name `path`).
Status WriteStream(const std::string& path, const std::string& file, const Writer& write) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  if (!f) return NotFound(path + ": cannot open for writing: " + std::strerror(errno));
  TM_RETURN_IF_ERROR(write(f));
  f.close();
  if (!f) return Internal(path + ": write failed");
  return Status::Ok();
}

// All of `bytes` at `offset` of `fd`; false with errno set.
bool WriteAllAt(int fd, std::string_view bytes, off_t offset) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
    offset += n;
  }
  return true;
}

// The whole content of `fd` from offset 0; nothing when it cannot be read
// (a file the writer may write but not read).
std::optional<std::string> ReadAll(int fd) {
  std::string out;
  char buffer[1 << 16];
  for (off_t offset = 0;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
}

// `bytes` become the content of `fd`: written from the start, then the
// file cut to their length; false with errno set.
bool Replace(int fd, std::string_view bytes) {
  return WriteAllAt(fd, bytes, 0) && ::ftruncate(fd, static_cast<off_t>(bytes.size())) == 0;
}

// In place, for a file a rename could not keep (hard links, an owner the
// writer cannot give): the new content is made whole in memory first (an
// error from `write` leaves the file as it was), then written over the old
// one. Should that fail midway (a full disk), the old content is written
// back; the error says whether the file keeps its old content or is left
// partly written.
Status WriteInPlace(const std::string& path, const std::string& target, const Writer& write) {
  std::ostringstream buffer;
  TM_RETURN_IF_ERROR(write(buffer));
  if (!buffer) return Internal(path + ": write failed");
  const std::string bytes = std::move(buffer).str();
  int fd = ::open(target.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == EACCES) fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": cannot open for writing: " + std::strerror(errno));
  const std::optional<std::string> old = ReadAll(fd);
  if (Replace(fd, bytes)) return ::close(fd) == 0 ? Status::Ok() : Internal(path + ": cannot write: " + std::strerror(errno));
  const std::string why = std::strerror(errno);
  const bool restored = old && Replace(fd, *old);
  ::close(fd);
  return Internal(path + ": cannot write: " + why +
                  (restored ? "; the file keeps its old content" : "; the file is left partly written"));
}

// The file a path names, its symbolic links followed: a link keeps
// pointing where it did, and the file it names is replaced. (Followed link
// by link: a dangling one names the file to create.)
Result<std::string> ResolveLinks(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path resolved = path;
  for (int hop = 0; fs::is_symlink(fs::symlink_status(resolved, ec)); ++hop) {
    std::error_code link_error;
    const fs::path next = fs::read_symlink(resolved, link_error);
    if (link_error || hop == 40)
      return NotFound(path + ": cannot follow its symbolic link: " +
                      (link_error ? link_error.message() : "too many levels of symbolic links"));
    resolved = next.is_absolute() ? next : resolved.parent_path() / next;
  }
  return resolved.string();
}

// A new temporary file beside `target` (so the rename is atomic), created
// with O_EXCL and mode 0666: the umask gives it the permissions an ordinary
// new file gets (mkstemp's 0600 would need the process-wide umask changed to
// undo, which races with other threads). Its name, and its descriptor.
Result<std::pair<std::string, int>> CreateTemporary(const std::string& path, const std::string& target) {
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return NotFound(path + ": cannot open for writing: " + std::strerror(errno));
  return std::make_pair(tmp, fd);
}

// `tmp` written through `write`, then renamed over `target`; removed on failure.
Status WriteAndRename(const std::string& path, const std::string& tmp, const std::string& target,
                      const Writer& write) {
  Status st = WriteStream(path, tmp, write);
  if (st.ok()) {
    std::error_code rename_error;
    std::filesystem::rename(tmp, target, rename_error);
    if (rename_error) st = Internal(path + ": cannot write: " + rename_error.message());
  }
  std::error_code ec;
  if (!st.ok()) std::filesystem::remove(tmp, ec);
  return st;
}

}  // namespace

Status WriteFileWhole(const std::string& path, const Writer& write) {
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
  const bool special = path.starts_with("/dev/") || path.starts_with("/proc/");
  if (special || (fs::exists(status) && !fs::is_regular_file(status))) return WriteStream(path, path, write);
  TM_ASSIGN_OR_RETURN(const std::string target, ResolveLinks(path));
  // A file with other hard links is written in place: a rename would split
  // them.
  struct stat old {};
  const bool exists = ::stat(target.c_str(), &old) == 0;
  if (exists && old.st_nlink > 1) return WriteInPlace(path, target, write);
  TM_ASSIGN_OR_RETURN(const auto temporary, CreateTemporary(path, target));
  const bool kept = !exists || KeepOwnerAndMode(temporary.second, old);
  ::close(temporary.second);
  if (!kept) {
    // Only the owner's own write keeps a file owned by someone else (or
    // by a group the writer cannot give): in place.
    fs::remove(temporary.first, ec);
    return WriteInPlace(path, target, write);
  }
  return WriteAndRename(path, temporary.first, target, write);
}

}  // namespace tensormem
