// The tuning cache file (src/backends/cuda/tuning_cache.h): plain C++, so
// these run without a GPU.
#include "backends/cuda/tuning_cache.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace vigil::cuda {
namespace {

namespace fs = std::filesystem;

constexpr char kDevice[] = "NVIDIA H100 80GB HBM3|sm_90|cudnn 91400|cublasLt 130100";

class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vigil_tuning_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "cache.tsv").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& text) { std::ofstream(path_, std::ios::binary) << text; }
  std::string Read() {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
  std::string path_;
};

TEST_F(TuningCacheTest, RecordThenReopenFindsTheChoice) {
  {
    auto cache = TuningCache::Open(path_, kDevice, /*writable=*/true);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    EXPECT_FALSE((*cache)->Find("cudnn|fprop|x1").has_value());
    (*cache)->Record("cudnn|fprop|x1", "engine 12 knobs 3=1,7=0", 41.5, 55.0);
    EXPECT_EQ((*cache)->Find("cudnn|fprop|x1"), "engine 12 knobs 3=1,7=0");
    EXPECT_EQ((*cache)->stats().recorded, 1u);
    EXPECT_NE((*cache)->Summary().find("1.325x"), std::string::npos) << (*cache)->Summary();
  }
  auto again = TuningCache::Open(path_, kDevice, /*writable=*/false);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->stats().loaded, 1u);
  EXPECT_EQ((*again)->Find("cudnn|fprop|x1"), "engine 12 knobs 3=1,7=0");
  EXPECT_EQ(Read(), "v1\t" + std::string(kDevice) + "\tcudnn|fprop|x1\tengine 12 knobs 3=1,7=0\t41.5\n");
}

TEST_F(TuningCacheTest, OtherDevicesAreKeptButIgnoredAndTheLastLineWins) {
  Write("# a comment\n\n"
        "v1\tNVIDIA A100|sm_80|cudnn 91400|cublasLt 130100\tp\tengine 1 knobs -\t10\n"
        "v1\t" + std::string(kDevice) + "\tp\tengine 2 knobs -\t9\n"
        "v1\t" + std::string(kDevice) + "\tp\tengine 3 knobs -\t8\r\n");
  auto cache = TuningCache::Open(path_, kDevice, /*writable=*/false);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ((*cache)->Find("p"), "engine 3 knobs -");
  EXPECT_EQ((*cache)->stats().other_devices, 1u);
  EXPECT_EQ((*cache)->stats().loaded, 2u);
  EXPECT_EQ((*cache)->stats().skipped, 0u);
}

TEST_F(TuningCacheTest, MalformedLinesAreSkippedAndCounted) {
  Write("v1\t" + std::string(kDevice) + "\tgood\tengine 2 knobs -\t9\n"
        "garbage\n"
        "v2\t" + std::string(kDevice) + "\tnewer\tengine 2 knobs -\t9\n"
        "v1\t" + std::string(kDevice) + "\tbad time\tengine 2 knobs -\tfast\n"
        "v1\t" + std::string(kDevice) + "\t\tengine 2 knobs -\t9\n"
        "v1\t" + std::string(kDevice) + "\tneg\tengine 2 knobs -\t-1\n"
        "\x01\x02\xff\n");
  auto cache = TuningCache::Open(path_, kDevice, /*writable=*/false);
  ASSERT_TRUE(cache.ok());
  TuningCache::Stats s = (*cache)->stats();
  EXPECT_EQ(s.loaded, 1u);
  EXPECT_EQ(s.skipped, 6u);
  EXPECT_EQ(s.first_skipped_line, 2u);
  EXPECT_NE((*cache)->Summary().find("6 malformed line(s) skipped (first: line 2)"), std::string::npos)
      << (*cache)->Summary();
}

TEST_F(TuningCacheTest, AMissingFileIsAnEmptyCacheCreatedWhenWritable) {
  auto read_only = TuningCache::Open(path_, kDevice, /*writable=*/false);
  ASSERT_TRUE(read_only.ok());
  EXPECT_FALSE(fs::exists(path_));
  auto writable = TuningCache::Open(path_, kDevice, /*writable=*/true);
  ASSERT_TRUE(writable.ok());
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_EQ((*writable)->stats().loaded, 0u);
}

TEST_F(TuningCacheTest, BadPathsAreDiagnosedNotFatal) {
  auto dir = TuningCache::Open(dir_.string(), kDevice, true);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().summary().find("is a directory"), std::string::npos) << dir.status().ToString();

  auto missing_folder = TuningCache::Open((dir_ / "no" / "such" / "cache.tsv").string(), kDevice, true);
  ASSERT_FALSE(missing_folder.ok());
  EXPECT_EQ(missing_folder.status().code(), ErrorCode::kEnvironment);
  EXPECT_NE(missing_folder.status().summary().find("cannot be written"), std::string::npos);

  auto empty = TuningCache::Open("", kDevice, true);
  EXPECT_FALSE(empty.ok());
}

TEST_F(TuningCacheTest, AnOversizedFileIsRefused) {
  {
    std::ofstream f(path_, std::ios::binary);
    f.seekp((int64_t{64} << 20) + 10);
    f.put('x');
  }
  auto cache = TuningCache::Open(path_, kDevice, false);
  ASSERT_FALSE(cache.ok());
  EXPECT_NE(cache.status().summary().find("at most"), std::string::npos);
}

TEST_F(TuningCacheTest, ChoicesWithTabsAreNotWritten) {
  auto cache = TuningCache::Open(path_, kDevice, true);
  ASSERT_TRUE(cache.ok());
  (*cache)->Record("p\tq", "engine 1 knobs -", 1, 1);
  EXPECT_EQ(Read(), "");
  EXPECT_FALSE((*cache)->stats().write_error.empty());
}

TEST_F(TuningCacheTest, InMemoryCacheWritesNoFile) {
  auto cache = TuningCache::InMemory(kDevice);
  cache->Record("p", "engine 1 knobs -", 1, 2);
  EXPECT_EQ(cache->Find("p"), "engine 1 knobs -");
  EXPECT_EQ(cache->stats().recorded, 0u);
  EXPECT_NE(cache->Summary().find("in memory"), std::string::npos);
}

TEST(TuningRecordTest, FormatAndParseRoundTrip) {
  std::string line = TuningCache::FormatRecord(kDevice, "cudnn|fprop", "engine 7 knobs 1=2", 12.26);
  auto r = TuningCache::ParseRecord(line);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->device, kDevice);
  EXPECT_EQ(r->problem, "cudnn|fprop");
  EXPECT_EQ(r->choice, "engine 7 knobs 1=2");
  EXPECT_DOUBLE_EQ(r->microseconds, 12.3);  // one decimal kept
  EXPECT_FALSE(TuningCache::ParseRecord("v1\ta\tb\tc").has_value());
  EXPECT_FALSE(TuningCache::ParseRecord("v1\ta\tb\tc\t1\textra").has_value());
  EXPECT_FALSE(TuningCache::ParseRecord("v1\ta\tb\tc\tnan").has_value());
}

}  // namespace
}  // namespace vigil::cuda
