// SPDX-License-Identifier: Apache-2.0
// WriteFileWhole: an output appears whole or not at all, with the permissions
// an ordinary new file gets, and a directory or a missing parent is refused
// with the reason.
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tensormem/io.h"
#include "test_util.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;

class WriteFileWholeTest : public testing::TempDirTest {
 protected:
  static std::string Read(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }
  // Entries in the directory besides `keep`: a temporary file left behind.
  int Others(const fs::path& keep) const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_)) n += e.path() != keep;
    return n;
  }
};

TEST_F(WriteFileWholeTest, WritesAndReplaces) {
  const fs::path out = dir_ / "plan.csv";
  ASSERT_TRUE(WriteFileWhole(out.string(), [](std::ostream& o) {
                o << "first\n";
                return Status::Ok();
              }).ok());
  EXPECT_EQ(Read(out), "first\n");
  ASSERT_TRUE(WriteFileWhole(out.string(), [](std::ostream& o) {
                o << "second\n";
                return Status::Ok();
              }).ok());
  EXPECT_EQ(Read(out), "second\n");
  EXPECT_EQ(Others(out), 0);
}

TEST_F(WriteFileWholeTest, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path out = dir_ / "plan.csv";
  { std::ofstream(out) << "old\n"; }
  const Status st = WriteFileWhole(out.string(), [](std::ostream& o) {
    o << "half of the new";
    return Internal("the writer failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_EQ(st.message(), "the writer failed");
  EXPECT_EQ(Read(out), "old\n");
  EXPECT_EQ(Others(out), 0);
  // Nothing there before: nothing there after.
  const fs::path fresh = dir_ / "fresh.csv";
  EXPECT_FALSE(WriteFileWhole(fresh.string(), [](std::ostream&) { return Internal("no"); }).ok());
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_EQ(Others(out), 0);
}

TEST_F(WriteFileWholeTest, PermissionsFollowTheUmask) {
  const mode_t old_mask = ::umask(022);
  const fs::path out = dir_ / "plan.csv";
  const Status st = WriteFileWhole(out.string(), [](std::ostream& o) {
    o << "x";
    return Status::Ok();
  });
  ::umask(old_mask);
  ASSERT_TRUE(st.ok()) << st.message();
  struct stat info {};
  ASSERT_EQ(::stat(out.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u) << "not mkstemp's 0600";
}

// A replaced file keeps its mode, its owner and its hard links.
TEST_F(WriteFileWholeTest, AReplacedFileKeepsItsModeOwnerAndLinks) {
  auto write = [](const char* text) {
    return [text](std::ostream& o) {
      o << text;
      return Status::Ok();
    };
  };
  const fs::path secret = dir_ / "secret.csv";
  { std::ofstream(secret) << "old\n"; }
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  ASSERT_TRUE(WriteFileWhole(secret.string(), write("new\n")).ok());
  struct stat info {};
  ASSERT_EQ(::stat(secret.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  EXPECT_EQ(Read(secret), "new\n");

  const fs::path linked = dir_ / "linked.csv";
  const fs::path other = dir_ / "other_name.csv";
  { std::ofstream(linked) << "old\n"; }
  fs::create_hard_link(linked, other);
  ASSERT_TRUE(WriteFileWhole(linked.string(), write("new\n")).ok());
  EXPECT_EQ(fs::hard_link_count(linked), 2u);
  EXPECT_EQ(Read(other), "new\n");
  EXPECT_EQ(Others(dir_ / "none"), 3) << "secret and both links; no temporary file";

  // Another user's file (as root, the only one who may make it here):
  // still theirs.
  if (::geteuid() != 0) GTEST_SKIP() << "not root: cannot make another user's file";
  ASSERT_EQ(::chown(secret.c_str(), 65534, 65534), 0);
  ASSERT_TRUE(WriteFileWhole(secret.string(), write("newer\n")).ok());
  ASSERT_EQ(::stat(secret.c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 65534u);
  EXPECT_EQ(info.st_gid, 65534u);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  EXPECT_EQ(Read(secret), "newer\n");
}

// A pipe (or a device) is written to, not replaced by a renamed file (as
// root, `-o /dev/null` replaced /dev/null); a symbolic link keeps its target.
// A hard-linked file is written in place: an error from the writer, or a
// write that fails midway (here the file size limit, as a full disk would),
// leaves the old content, and both links still name one file.
TEST_F(WriteFileWholeTest, AnInPlaceWriteIsWholeOrLeavesTheOldContent) {
  const fs::path out = dir_ / "out.csv", link = dir_ / "link.csv";
  const std::string old(50, 'o');
  std::ofstream(out, std::ios::binary) << old;
  fs::create_hard_link(out, link);
  auto failing = [](std::ostream& o) {
    o << std::string(4000, 'n');
    return Internal("writer failed");
  };
  EXPECT_FALSE(WriteFileWhole(out.string(), failing).ok());
  EXPECT_EQ(Read(out), old);

  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1000;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const Status st = WriteFileWhole(out.string(), [](std::ostream& o) {
    o << std::string(4000, 'n');
    return Status::Ok();
  });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(out.string() + ": cannot write: "), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("the file keeps its old content"), std::string::npos) << st.message();
  EXPECT_EQ(Read(out), old);

  ASSERT_TRUE(WriteFileWhole(out.string(), [](std::ostream& o) {
    o << "new";
    return Status::Ok();
  }).ok());
  EXPECT_EQ(Read(link), "new");
  EXPECT_EQ(fs::hard_link_count(out), 2u);
}

TEST_F(WriteFileWholeTest, DevicesPipesAndLinksStayWhatTheyAre) {
  auto hello = [](std::ostream& o) {
    o << "hello\n";
    return Status::Ok();
  };
  // (A pipe, not /dev/null: were this to regress, a test run as root would
  // replace the machine's /dev/null.)

  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Read(fifo); });
  const Status st = WriteFileWhole(fifo.string(), hello);
  reader.join();
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(got, "hello\n");
  EXPECT_TRUE(fs::is_fifo(fifo));

  const fs::path target = dir_ / "target.csv";
  const fs::path link = dir_ / "link.csv";
  { std::ofstream(target) << "old\n"; }
  fs::create_symlink(target, link);
  ASSERT_TRUE(WriteFileWhole(link.string(), hello).ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Read(target), "hello\n");
  // A dangling link: its target is created.
  fs::remove(target);
  ASSERT_TRUE(WriteFileWhole(link.string(), hello).ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Read(target), "hello\n");
  EXPECT_EQ(Others(dir_ / "none"), 3) << "pipe, target and link; no temporary file";
  // A loop of links is an error naming the path, not a hang.
  fs::create_symlink(dir_ / "b", dir_ / "a");
  fs::create_symlink(dir_ / "a", dir_ / "b");
  const Status loop = WriteFileWhole((dir_ / "a").string(), hello);
  EXPECT_EQ(loop.code(), StatusCode::kNotFound);
  EXPECT_EQ(loop.message(), (dir_ / "a").string() +
                                ": cannot follow its symbolic link: too many levels of symbolic links");
}

TEST_F(WriteFileWholeTest, RefusesADirectoryAndNamesAMissingParent) {
  int calls = 0;
  auto write = [&](std::ostream&) {
    ++calls;
    return Status::Ok();
  };
  Status st = WriteFileWhole(dir_.string(), write);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), dir_.string() + ": is a directory, not a file");
  const fs::path missing = dir_ / "no" / "such" / "plan.csv";
  st = WriteFileWhole(missing.string(), write);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_EQ(st.message(), missing.string() + ": cannot open for writing: No such file or directory");
  EXPECT_EQ(calls, 0) << "nothing is written for a refused path";
  EXPECT_EQ(Others(dir_ / "none"), 0);
}

}  // namespace
}  // namespace tensormem
