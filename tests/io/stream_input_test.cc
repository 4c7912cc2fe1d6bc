// SPDX-License-Identifier: Apache-2.0
// Inputs that are streams (IsStreamInput): a named pipe by its path is read
// once, its format told from the bytes read ahead (not consumed), and opened
// afresh for its next writer.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "io/input_file.h"
#include "tensormem/io.h"
#include "tensormem/trace.h"
#include "test_util.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;

class StreamInputTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    pipe_ = (dir_ / "pipe").string();
    ASSERT_EQ(::mkfifo(pipe_.c_str(), 0600), 0);
  }

  // Writes `text` into the pipe from another thread (the open blocks until
  // a reader opens it).
  std::thread Writer(std::string text) const {
    return std::thread([path = pipe_, text = std::move(text)] { std::ofstream(path) << text; });
  }

  std::string pipe_;
};

TEST_F(StreamInputTest, ANamedPipeIsAnyFormatAndOpensAfreshForEachWriter) {
  EXPECT_TRUE(IsStreamInput(pipe_));
  EXPECT_TRUE(IsStreamInput("-"));
  EXPECT_FALSE(IsStreamInput(dir_.string()));
  EXPECT_FALSE(IsStreamInput((dir_ / "missing.csv").string()));
  {
    std::ofstream((dir_ / "file.csv").string()) << "id,lower,upper,size\n";
  }
  EXPECT_FALSE(IsStreamInput((dir_ / "file.csv").string()));

  std::thread csv = Writer("id,lower,upper,size\na,0,2,8\nb,1,3,8\nc,4,5,8\n");
  Result<Problem> p = LoadProblem(pipe_);
  csv.join();
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->buffers.size(), 3u);

  // The next writer's data, in another format: the first stream was closed.
  std::thread json = Writer(R"({"buffers":[{"id":"x","lower":0,"upper":1,"size":4}]})");
  p = LoadProblem(pipe_);
  json.join();
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->buffers.size(), 1u);

  std::thread trace = Writer("Thread,Time,Action,Pointer,Size,Stream\n0,0,allocate,0x10,100,0\n0,1,free,0x10,100,0\n");
  Result<Trace> t = LoadTrace(pipe_);
  trace.join();
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->events.size(), 2u);
  EXPECT_EQ(t->source, pipe_);

  // A model (protobuf field 1 first) is refused, asking for its file.
  std::thread model = Writer(std::string("\x08\x07\x12\x07pytorch", 11));
  p = LoadProblem(pipe_);
  model.join();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), pipe_ + ": an ONNX model: give its file's path (models are not read "
                                          "from standard input or pipes)");
}

// `text` as one gzip member.
std::string Gzip(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/member.gz";
  gzFile f = gzopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Members one after another are one input (as gzip -d reads them); bytes
// after a member that start no other are an error naming the file and the
// offset, from a file or a pipe (zlib's gz* functions dropped them).
TEST_F(StreamInputTest, GzipMembersAreReadAndDataAfterThemIsAnError) {
  const std::string head = Gzip(dir_.string(), "id,lower,upper,size\na,0,2,8\nb,1,3,8\n");
  const std::string more = Gzip(dir_.string(), "c,4,5,8\nd,4,5,8\n");
  const std::string two = (dir_ / "two.csv.gz").string();
  std::ofstream(two, std::ios::binary) << head << more;
  Result<Problem> p = LoadProblem(two);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->buffers.size(), 4u);

  const std::string trailing = (dir_ / "trailing.csv.gz").string();
  std::ofstream(trailing, std::ios::binary) << head << "c,4,5,8\nd,4,5,8\n";
  p = LoadProblem(trailing);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), trailing + ": data after the gzip data at byte " + std::to_string(head.size()) +
                                      " (not a gzip member) after 36 decompressed bytes");
  std::thread writer = Writer(head + "x");
  p = LoadProblem(pipe_);
  writer.join();
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("data after the gzip data at byte " + std::to_string(head.size())),
            std::string::npos)
      << p.status().message();
}

// A regular file that changes while it is read (truncated at a row
// boundary, it would read as a shorter valid input) is an error; one
// replaced by a rename was read whole and is not.
TEST_F(StreamInputTest, AFileThatChangesUnderTheReaderIsAnError) {
  const std::string path = (dir_ / "rows.csv").string();
  std::ofstream(path) << "id,lower,upper,size\na,0,2,8\nb,1,3,8\n";
  internal::FileSnapshot before = internal::SnapshotFile(path);
  ASSERT_TRUE(before.taken);
  EXPECT_TRUE(internal::CheckUnchanged(path, before).ok());
  fs::resize_file(path, 28);  // truncated after the first row
  const Status changed = internal::CheckUnchanged(path, before);
  EXPECT_EQ(changed.message(), path + ": changed while it was read (36 bytes, now 28): read it again once it is written");

  before = internal::SnapshotFile(path);
  const std::string next = (dir_ / "next.csv").string();
  std::ofstream(next) << "id,lower,upper,size\n";
  fs::rename(next, path);
  EXPECT_TRUE(internal::CheckUnchanged(path, before).ok()) << "replaced, not changed";
  EXPECT_FALSE(internal::SnapshotFile(pipe_).taken) << "a pipe has no snapshot";
}

}  // namespace
}  // namespace tensormem
