// SPDX-License-Identifier: Apache-2.0
// OpenInputFile: a plain std::ifstream, or an istream inflating the file
// (zlib, 256 KiB pieces) when it starts with the gzip magic bytes.
// StreamInput (standard input, a pipe, a device): always through that
// istream (it passes plain data through), since a pipe cannot be rewound
// after its magic bytes are read.
#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <streambuf>
#include <string_view>
#include <vector>

namespace tensormem::internal {
namespace {

std::atomic<bool (*)()> input_interrupt_check{nullptr};

// After EINTR: whether the caller's check asks the read to stop.
bool InputInterrupted() {
  bool (*check)() = input_interrupt_check.load();
  return check != nullptr && check();
}

// Decompresses a descriptor's gzip members one after another (as gzip -d
// does), or passes its bytes through when `plain` allows data that does not
// start as gzip (a stream, whose magic bytes cannot be read twice). Bytes
// after a member that start no other member are an error: zlib's gz*
// functions dropped them silently.
class GzipBuffer final : public std::streambuf {
 public:
  GzipBuffer(int fd, bool plain) : fd_(fd), plain_(plain), in_(std::size_t{1} << 18), out_(std::size_t{1} << 18) {
    z_.next_in = reinterpret_cast<Bytef*>(in_.data());
  }
  ~GzipBuffer() override {
    if (inflating_) inflateEnd(&z_);
    ::close(fd_);
  }
  GzipBuffer(const GzipBuffer&) = delete;
  GzipBuffer& operator=(const GzipBuffer&) = delete;

  const std::string& error() const { return error_; }
  std::uint64_t decompressed() const { return decompressed_; }
  // The bytes read ahead and not yet consumed (filled first when empty).
  std::string_view Ahead() {
    if (gptr() == egptr()) underflow();
    return {gptr(), static_cast<std::size_t>(egptr() - gptr())};
  }

 protected:
  int_type underflow() override {
    while (gptr() == egptr() && mode_ != Mode::kDone) Step();
    return gptr() < egptr() ? traits_type::to_int_type(*gptr()) : traits_type::eof();
  }

 private:
  enum class Mode { kStart, kMember, kBetween, kPlain, kDone };

  // One step: reads input, starts a member or decompresses some; the
  // output, if any, becomes the get area.
  void Step() {
    if (mode_ == Mode::kPlain) return PassThrough();
    if (mode_ != Mode::kMember) return StartMember();
    if (z_.avail_in == 0 && !Fill()) return Fail(error_.empty() ? "truncated gzip data (unexpected end of file)" : "");
    z_.next_out = reinterpret_cast<Bytef*>(out_.data());
    z_.avail_out = static_cast<uInt>(out_.size());
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) mode_ = Mode::kBetween;
    else if (rc != Z_OK && rc != Z_BUF_ERROR)
      return Fail("corrupt gzip data (" + std::string(z_.msg != nullptr ? z_.msg : zError(rc)) + ")");
    Produced(out_.size() - z_.avail_out);
  }

  // At the start or after a member: another member, plain data, or the end.
  void StartMember() {
    while (z_.avail_in < 2 && Fill(/*keep=*/true)) {
    }
    if (!error_.empty()) return Fail("");
    if (z_.avail_in == 0) {
      mode_ = Mode::kDone;
      return;
    }
    if (z_.avail_in >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b) {
      const int rc = inflating_ ? inflateReset(&z_) : inflateInit2(&z_, 15 + 16);
      if (rc != Z_OK) return Fail("zlib: " + std::string(zError(rc)));
      inflating_ = true;
      mode_ = Mode::kMember;
      return;
    }
    if (mode_ == Mode::kStart && plain_) {
      mode_ = Mode::kPlain;
      return;
    }
    Fail("data after the gzip data at byte " + std::to_string(Offset()) + " (not a gzip member)");
  }

  void PassThrough() {
    if (z_.avail_in == 0 && !Fill()) {
      mode_ = Mode::kDone;
      return;
    }
    // The input buffer is the get area: no copy.
    char* p = reinterpret_cast<char*>(z_.next_in);
    const std::size_t n = z_.avail_in;
    z_.next_in += n;
    z_.avail_in = 0;
    decompressed_ += n;
    setg(p, p, p + n);
  }

  void Produced(std::size_t n) {
    decompressed_ += n;
    setg(out_.data(), out_.data(), out_.data() + n);
  }

  // Reads more input after what is left (moved to the front when `keep`,
  // else the buffer is empty): false at the end of the input or on an error.
  bool Fill(bool keep = false) {
    if (input_ended_) return false;
    const std::size_t left = keep ? z_.avail_in : 0;
    offset_ += static_cast<std::uint64_t>(reinterpret_cast<char*>(z_.next_in) - in_.data());
    if (left > 0) std::memmove(in_.data(), z_.next_in, left);
    ssize_t n = 0;
    do {
      n = ::read(fd_, in_.data() + left, in_.size() - left);
    } while (n < 0 && errno == EINTR && !InputInterrupted());
    if (n < 0) error_ = errno == EINTR ? std::string("interrupted") : std::string("read error: ") + std::strerror(errno);
    if (n <= 0) input_ended_ = true;
    z_.next_in = reinterpret_cast<Bytef*>(in_.data());
    z_.avail_in = static_cast<uInt>(left + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    return n > 0;
  }

  // The input's byte offset of the next byte to decompress.
  std::uint64_t Offset() const {
    return offset_ + static_cast<std::uint64_t>(reinterpret_cast<const char*>(z_.next_in) - in_.data());
  }

  // Kept for InputFileError (the stream can only end); "" keeps an earlier
  // reason (a read error).
  void Fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    mode_ = Mode::kDone;
  }

  int fd_;
  bool plain_;
  std::vector<char> in_, out_;
  z_stream z_{};
  bool inflating_ = false;
  bool input_ended_ = false;
  Mode mode_ = Mode::kStart;
  std::uint64_t offset_ = 0;  // input bytes before in_'s first
  std::string error_;
  std::uint64_t decompressed_ = 0;
};

class GzipStream final : public std::istream {
 public:
  GzipStream(int fd, bool plain) : std::istream(nullptr), buffer_(fd, plain) { rdbuf(&buffer_); }

  const GzipBuffer& buffer() const { return buffer_; }
  GzipBuffer& buffer() { return buffer_; }

 private:
  GzipBuffer buffer_;
};

}  // namespace

Result<std::unique_ptr<std::istream>> OpenInputFile(const std::string& path) {
  // A directory opens as a stream on Linux and fails only at the first
  // read, which could say no more than "read error".
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return InvalidArgument(path + ": is a directory, not a file");
  auto plain = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*plain) return NotFound(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {};
  plain->read(reinterpret_cast<char*>(magic), 2);
  const bool gzip = plain->gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (!gzip) {
    plain->clear();
    plain->seekg(0);
    return std::unique_ptr<std::istream>(std::move(plain));
  }
  plain.reset();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(path + ": cannot open as gzip: " + std::strerror(errno));
  return std::unique_ptr<std::istream>(new GzipStream(fd, /*plain=*/false));
}

namespace {

// A stream input open now: one reader at a time holds `reading`.
struct OpenStream {
  std::mutex reading;
  std::unique_ptr<GzipStream> stream;
};

// By path; never destroyed (standard input stays open as long as the
// process, and a reader may still hold an entry at exit).
std::mutex stream_inputs_mutex;
std::map<std::string, std::shared_ptr<OpenStream>>& StreamInputs() {
  static auto* opened = new std::map<std::string, std::shared_ptr<OpenStream>>();
  return *opened;
}

// What a StreamInputHold keeps: the entry, locked for its reader.
struct Held {
  std::shared_ptr<OpenStream> entry;
  std::unique_lock<std::mutex> lock;
};

}  // namespace

Result<StreamInputHold> HoldStreamInput(const std::string& path) {
  // Opened once and kept until read (the format check's read-ahead stays
  // there for the reader): zlib reads gzip data and passes anything else
  // through. A failure to open is not kept: the next call tries again.
  std::shared_ptr<OpenStream> entry;
  {
    const std::lock_guard<std::mutex> lock(stream_inputs_mutex);
    auto it = StreamInputs().find(path);
    if (it == StreamInputs().end()) {
      int fd = -1;
      do {  // (a named pipe's open waits for a writer)
        fd = path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      } while (fd < 0 && errno == EINTR && !InputInterrupted());
      if (fd < 0 && errno == EINTR) return InvalidArgument(InputName(path) + ": interrupted while opening");
      if (fd < 0) return NotFound(InputName(path) + ": cannot open: " + std::strerror(errno));
      auto opened = std::make_shared<OpenStream>();
      opened->stream = std::make_unique<GzipStream>(fd, /*plain=*/true);
      it = StreamInputs().emplace(path, std::move(opened)).first;
    }
    entry = it->second;
  }
  // Outside the registry's lock: another reader of this input may hold it
  // for a whole read.
  auto held = std::make_shared<Held>();
  held->lock = std::unique_lock<std::mutex>(entry->reading);
  held->entry = std::move(entry);
  StreamInputHold hold;
  hold.stream = held->entry->stream.get();
  hold.keep = std::move(held);
  return hold;
}

void ReleaseStreamInput(const std::string& path) {
  if (path == "-") return;  // read to its end: reading it again gives nothing, as it should
  const std::lock_guard<std::mutex> lock(stream_inputs_mutex);
  StreamInputs().erase(path);  // (a reader holding it keeps it until done)
}

Result<std::string> PeekStreamInput(const std::string& path, std::size_t max_bytes) {
  std::string ahead;
  Status error = Status::Ok();
  {
    TM_ASSIGN_OR_RETURN(StreamInputHold hold, HoldStreamInput(path));
    ahead = std::string(static_cast<GzipStream*>(hold.stream)->buffer().Ahead().substr(0, max_bytes));
    error = InputFileError(*hold.stream, InputName(path));
  }
  // A failed read (interrupted) is not kept for the next reader.
  if (!error.ok()) {
    ReleaseStreamInput(path);
    return error;
  }
  return ahead;
}

FileSnapshot SnapshotFile(const std::string& path) {
  struct stat st {};
  FileSnapshot snap;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return snap;
  snap.taken = true;
  snap.device = static_cast<std::uint64_t>(st.st_dev);
  snap.inode = static_cast<std::uint64_t>(st.st_ino);
  snap.size = static_cast<std::uint64_t>(st.st_size);
  snap.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return snap;
}

Status CheckUnchanged(const std::string& path, const FileSnapshot& before) {
  if (!before.taken) return Status::Ok();
  const FileSnapshot now = SnapshotFile(path);
  if (!now.taken || now.device != before.device || now.inode != before.inode) return Status::Ok();
  if (now.size == before.size && now.mtime_ns == before.mtime_ns) return Status::Ok();
  return InvalidArgument(path + ": changed while it was read (" + std::to_string(before.size) + " bytes, now " +
                         std::to_string(now.size) + "): read it again once it is written");
}

Status InputFileError(const std::istream& in, const std::string& path) {
  const auto* gzip = dynamic_cast<const GzipStream*>(&in);
  if (gzip == nullptr || gzip->buffer().error().empty()) return Status::Ok();
  return InvalidArgument(path + ": " + gzip->buffer().error() + " after " +
                         std::to_string(gzip->buffer().decompressed()) + " decompressed bytes");
}

}  // namespace tensormem::internal

namespace tensormem {

std::string InputName(const std::string& path) { return path == "-" ? "<stdin>" : path; }

void SetInputInterruptCheck(bool (*check)()) { internal::input_interrupt_check.store(check); }

bool IsStreamInput(const std::string& path) {
  if (path == "-") return true;
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  return std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
         !std::filesystem::is_directory(status);
}

Status OnnxNotFromAFileError(const std::string& path) {
  return InvalidArgument(InputName(path) +
                         ": an ONNX model: give its file's path (models are not read from standard "
                         "input or pipes)");
}

}  // namespace tensormem
