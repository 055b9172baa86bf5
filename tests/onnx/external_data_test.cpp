// External data resolution: only regular files inside the model directory
// (CVE-2022-25882, CVE-2024-27318), bounds-checked, mapped once.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "read_helpers.h"

namespace vigil::onnx::test {
namespace {

namespace fs = std::filesystem;
using Entries = std::vector<std::pair<std::string, std::string>>;

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("vigil_ext_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    dir_ = root_ / "model";
    fs::create_directories(dir_);
    WriteFile(dir_ / "weights.bin", RawBytes<float>({1, 2, 3, 4, 5, 6, 7, 8}));
    WriteFile(root_ / "secret.bin", RawBytes<float>({9, 9, 9, 9}));
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes a model with one float32[4] initializer "w" stored externally.
  Result<ir::Model> ReadWith(const Entries& entries, const ReadOptions& options = {}) {
    return ReadTensors({MakeExternalTensor("w", 1, {4}, entries)}, options);
  }
  Result<ir::Model> ReadTensors(const std::vector<std::string>& tensors, const ReadOptions& options = {}) {
    WriteFile(dir_ / "model.onnx", MakeModel(MakeGraph("g", {}, {}, {}, {.initializers = tensors})));
    return ReadModel((dir_ / "model.onnx").string(), options);
  }

  fs::path root_, dir_;
};

#define EXPECT_EXTERNAL_ERROR(result, want_code, location, text) \
  do {                                                           \
    EXPECT_READ_ERROR(result, want_code, text);                  \
    EXPECT_NE((result).status().summary().find("tensor 'w'"), std::string::npos) << (result).status().summary(); \
    EXPECT_NE((result).status().summary().find(location), std::string::npos) << (result).status().summary();     \
  } while (0)

TEST_F(ExternalData, ValidFileIsMappedInPlace) {
  auto m = ReadWith({{"location", "weights.bin"}, {"offset", "16"}, {"length", "16"}, {"checksum", "ignored"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Tensor& w = m->graph.initializers[0];
  EXPECT_EQ(w.storage, ir::Tensor::Storage::kExternal);
  EXPECT_EQ(w.external_location, "weights.bin");
  ASSERT_EQ(w.bytes.size(), 16u);
  float v[4];
  std::memcpy(v, w.bytes.data(), 16);
  EXPECT_EQ(v[0], 5.f);
  EXPECT_EQ(v[3], 8.f);
}

TEST_F(ExternalData, LengthDefaultsToTheTensorSize) {
  auto m = ReadWith({{"location", "./weights.bin"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->graph.initializers[0].bytes.size(), 16u);
}

TEST_F(ExternalData, EachFileIsMappedOnceAndShared) {
  auto m = ReadTensors({MakeExternalTensor("a", 1, {4}, {{"location", "weights.bin"}}),
                        MakeExternalTensor("b", 1, {4}, {{"location", "./weights.bin"}, {"offset", "16"}})});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const auto& inits = m->graph.initializers;
  EXPECT_EQ(inits[0].keep_alive.get(), inits[1].keep_alive.get());
  EXPECT_EQ(inits[0].bytes.data() + 16, inits[1].bytes.data());
}

TEST_F(ExternalData, FileInSubdirectory) {
  WriteFile(dir_ / "sub" / "w.bin", RawBytes<float>({1, 2, 3, 4}));
  auto m = ReadWith({{"location", "sub/w.bin"}});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
}

TEST_F(ExternalData, AbsolutePathIsRefused) {
  std::string abs = (root_ / "secret.bin").string();
  auto m = ReadWith({{"location", abs}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, abs, "is an absolute path");
}

TEST_F(ExternalData, DotDotIsRefused) {
  auto m = ReadWith({{"location", "../secret.bin"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "../secret.bin", "has a '..' component");
  fs::create_directories(dir_ / "a");
  m = ReadWith({{"location", "a/../../secret.bin"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "a/../../secret.bin", "has a '..' component");
  m = ReadWith({{"location", "a/.."}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "a/..", "has a '..' component");
}

TEST_F(ExternalData, NulByteIsRefused) {
  auto m = ReadWith({{"location", std::string("weights.bin\0/../../secret.bin", 29)}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "weights.bin", "contains a NUL byte");
}

TEST_F(ExternalData, SymlinkToOutsideIsRefused) {
  fs::create_symlink(root_ / "secret.bin", dir_ / "link.bin");
  auto m = ReadWith({{"location", "link.bin"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "link.bin", "passes through the symlink 'link.bin'");
}

TEST_F(ExternalData, SymlinkedDirectoryIsRefused) {
  fs::create_directory_symlink(root_, dir_ / "up");
  auto m = ReadWith({{"location", "up/secret.bin"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "up/secret.bin", "passes through the symlink 'up'");
}

// Decision: no symlink below the model directory is followed, even one that
// stays inside; this avoids any check-then-open race (see external_data.h).
TEST_F(ExternalData, SymlinkInsidePointingInsideIsRefusedToo) {
  fs::create_symlink("weights.bin", dir_ / "alias.bin");
  auto m = ReadWith({{"location", "alias.bin"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "alias.bin", "passes through the symlink");
  EXPECT_FALSE(m.status().diagnosis().fixes.empty());
}

TEST_F(ExternalData, ModelDirectoryReachedThroughSymlinkIsFine) {
  fs::create_directory_symlink(dir_, root_ / "alias_dir");
  WriteFile(dir_ / "model.onnx", MakeModel(MakeGraph("g", {}, {}, {}, {.initializers = {MakeExternalTensor("w", 1, {4}, {{"location", "weights.bin"}})}})));
  auto m = ReadModel((root_ / "alias_dir" / "model.onnx").string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
}

TEST_F(ExternalData, DirectoryIsRefused) {
  fs::create_directories(dir_ / "adir");
  auto m = ReadWith({{"location", "adir"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "adir", "is a directory, not a regular file");
}

TEST_F(ExternalData, FifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  auto m = ReadWith({{"location", "pipe"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "pipe", "is a FIFO, not a regular file");
}

TEST_F(ExternalData, OffsetBeyondTheFile) {
  auto m = ReadWith({{"location", "weights.bin"}, {"offset", "33"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "weights.bin", "offset 33 is past the end of 'weights.bin' (32 bytes)");
  m = ReadWith({{"location", "weights.bin"}, {"offset", "24"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "weights.bin", "needs 16 bytes at offset 24, but 'weights.bin' has only 32");
  m = ReadWith({{"location", "weights.bin"}, {"offset", "18446744073709551615"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "weights.bin", "is past the end");
}

TEST_F(ExternalData, LengthBeyondTheFile) {
  auto m = ReadWith({{"location", "weights.bin"}, {"offset", "8"}, {"length", "32"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "weights.bin", "length 32 at offset 8 runs past the end");
}

TEST_F(ExternalData, LengthMismatch) {
  auto m = ReadWith({{"location", "weights.bin"}, {"length", "8"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kInvalidModel, "weights.bin", "length is 8 bytes, but the tensor's dims and dtype need 16");
}

TEST_F(ExternalData, MalformedEntries) {
  auto m = ReadWith({{"location", "weights.bin"}, {"offset", "-1"}});
  EXPECT_READ_ERROR(m, ErrorCode::kInvalidModel, "tensor 'w': external_data offset '-1' is not a decimal number");
  m = ReadWith({{"offset", "0"}});
  EXPECT_READ_ERROR(m, ErrorCode::kInvalidModel, "tensor 'w': external data has no 'location'");
}

TEST_F(ExternalData, MissingFileIsAnEnvironmentError) {
  auto m = ReadWith({{"location", "nothere.bin"}});
  EXPECT_EXTERNAL_ERROR(m, ErrorCode::kEnvironment, "nothere.bin", "No such file");
}

TEST_F(ExternalData, NotLoadedWhenAskedNot) {
  ReadOptions options;
  options.load_external_data = false;
  auto m = ReadWith({{"location", "../anything"}}, options);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->graph.initializers[0].storage, ir::Tensor::Storage::kExternal);
  EXPECT_TRUE(m->graph.initializers[0].bytes.empty());
  EXPECT_EQ(m->graph.initializers[0].external_location, "../anything");
}

TEST(ExternalDataFromBytes, NoBaseDirectoryRefusesExternalData) {
  std::string bytes = ModelWithInitializer(MakeExternalTensor("w", 1, {4}, {{"location", "weights.bin"}}));
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "read from memory with no base directory");
}

}  // namespace
}  // namespace vigil::onnx::test
