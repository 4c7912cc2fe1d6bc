// OpenInputFile: a plain std::ifstream, or an istream over a zlib gzFile
// (read in 256 KiB pieces) when the file starts with the gzip magic bytes.
#include "io/input_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <streambuf>
#include <vector>

namespace tensormem::internal {
namespace {

class GzipBuffer final : public std::streambuf {
 public:
  explicit GzipBuffer(gzFile file) : file_(file), buffer_(std::size_t{1} << 18) { gzbuffer(file_, 1 << 18); }
  ~GzipBuffer() override { gzclose(file_); }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    // A corrupt or truncated stream ends the input; the reader then reports
    // what is missing at the line it reached.
    if (n <= 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  gzFile file_;
  std::vector<char> buffer_;
};

class GzipStream final : public std::istream {
 public:
  explicit GzipStream(gzFile file) : std::istream(nullptr), buffer_(file) { rdbuf(&buffer_); }

 private:
  GzipBuffer buffer_;
};

}  // namespace

Result<std::unique_ptr<std::istream>> OpenInputFile(const std::string& path) {
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

}  // namespace tensormem::internal
