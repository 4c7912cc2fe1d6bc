// WriteFileWhole: an output appears whole or not at all, with the permissions
// an ordinary new file gets, and a directory or a missing parent is refused
// with the reason.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tensormem/io.h"

namespace tensormem {
namespace {

namespace fs = std::filesystem;

class WriteFileWholeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tm_output_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

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

  fs::path dir_;
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
