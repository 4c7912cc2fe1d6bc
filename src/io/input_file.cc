// OpenInputFile: a plain std::ifstream, or an istream over a zlib gzFile
// (read in 256 KiB pieces) when the file starts with the gzip magic bytes.
// StreamInput (standard input, a pipe, a device): always through zlib (it
// passes plain data through), since a pipe cannot be rewound after its
// magic bytes are read.
#include "io/input_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

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

class GzipBuffer final : public std::streambuf {
 public:
  explicit GzipBuffer(gzFile file) : file_(file), buffer_(std::size_t{1} << 18) { gzbuffer(file_, 1 << 18); }
  ~GzipBuffer() override { gzclose(file_); }

  const std::string& error() const { return error_; }
  std::uint64_t decompressed() const { return decompressed_; }
  // The bytes read ahead and not yet consumed (filled first when empty).
  std::string_view Ahead() {
    if (gptr() == egptr()) underflow();
    return {gptr(), static_cast<std::size_t>(egptr() - gptr())};
  }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    if (n <= 0) {
      // Truncated data ends with Z_BUF_ERROR, corrupt data with
      // Z_DATA_ERROR: kept for InputFileError, as the stream can only end.
      int code = Z_OK;
      std::string_view message = gzerror(file_, &code);
      // zlib prefixes its message with the path, which the caller adds.
      if (const std::size_t colon = message.rfind(": "); colon != std::string_view::npos)
        message.remove_prefix(colon + 2);
      if (code != Z_OK && error_.empty())
        error_ = (code == Z_BUF_ERROR ? "truncated gzip data (" : "corrupt gzip data (") + std::string(message) + ")";
      return traits_type::eof();
    }
    decompressed_ += static_cast<std::uint64_t>(n);
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_;
  std::vector<char> buffer_;
  std::string error_;
  std::uint64_t decompressed_ = 0;
};

class GzipStream final : public std::istream {
 public:
  explicit GzipStream(gzFile file) : std::istream(nullptr), buffer_(file) { rdbuf(&buffer_); }

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
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return NotFound(path + ": cannot open as gzip: " + std::strerror(errno));
  return std::unique_ptr<std::istream>(new GzipStream(file));
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
      const int fd = path == "-" ? ::dup(STDIN_FILENO) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return NotFound(InputName(path) + ": cannot open: " + std::strerror(errno));
      gzFile file = gzdopen(fd, "rb");
      if (file == nullptr) {
        ::close(fd);
        return NotFound(InputName(path) + ": cannot open");
      }
      auto opened = std::make_shared<OpenStream>();
      opened->stream = std::make_unique<GzipStream>(file);
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
  TM_ASSIGN_OR_RETURN(StreamInputHold hold, HoldStreamInput(path));
  return std::string(static_cast<GzipStream*>(hold.stream)->buffer().Ahead().substr(0, max_bytes));
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
