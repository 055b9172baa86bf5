#include "base/mapped_file.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace vigil {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() {
  fs::path dir = fs::temp_directory_path() / ("vigil_mapped_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(MappedFile, MapsContentInPlace) {
  fs::path p = TempDir() / "data.bin";
  std::ofstream(p, std::ios::binary) << "hello";
  auto m = MappedFile::Open(p.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ((*m)->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*m)->bytes().data()), 5), "hello");
}

TEST(MappedFile, EmptyFileIsEmptySpan) {
  fs::path p = TempDir() / "empty.bin";
  std::ofstream(p, std::ios::binary).flush();
  auto m = MappedFile::Open(p.string());
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->size(), 0u);
  EXPECT_TRUE((*m)->bytes().empty());
}

TEST(MappedFile, MissingFileIsEnvironmentErrorWithPath) {
  auto m = MappedFile::Open("/nonexistent/vigil/model.onnx");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kEnvironment);
  EXPECT_NE(m.status().summary().find("/nonexistent/vigil/model.onnx"), std::string::npos);
  EXPECT_NE(m.status().summary().find("No such file"), std::string::npos);
}

TEST(MappedFile, DirectoryAndFifoAreRefused) {
  auto d = MappedFile::Open(TempDir().string());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().summary().find("not a regular file"), std::string::npos);
  fs::path fifo = TempDir() / "fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Must return at once: a blocking open of a FIFO waits for a writer.
  auto f = MappedFile::Open(fifo.string());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().summary().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace vigil
