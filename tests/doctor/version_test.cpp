#include <gtest/gtest.h>

#include "doctor/probe/version.h"
#include "doctor/rules/compat_facts.h"

namespace vigil::doctor {
namespace {

TEST(Version, DecodesCudnn8Encoding) {
  EXPECT_EQ(DecodeCudnnVersion(8907).ToString(), "8.9.7");  // MAJOR*1000 + MINOR*100 + PATCH
  EXPECT_EQ(DecodeCudnnVersion(8100).ToString(), "8.1.0");
}

TEST(Version, DecodesCudnn9Encoding) {
  EXPECT_EQ(DecodeCudnnVersion(91400).ToString(), "9.14.0");  // MAJOR*10000 + MINOR*100 + PATCH
  EXPECT_EQ(DecodeCudnnVersion(90000).ToString(), "9.0.0");
  EXPECT_EQ(DecodeCudnnVersion(91900).ToString(), "9.19.0");
  EXPECT_FALSE(DecodeCudnnVersion(-1).known());
}

TEST(Version, DecodesCudaCublasAndDevice) {
  EXPECT_EQ(DecodeCudaVersion(13000).ToString(), "13.0");
  EXPECT_EQ(DecodeCudaVersion(12020).ToString(), "12.2");
  EXPECT_EQ(DecodeCudaVersion(13010).ToString(), "13.1");
  EXPECT_EQ(DecodeCublasLtVersion(130100).ToString(), "13.1.0");
  EXPECT_EQ(DecodeDeviceVersion(1210).ToString(), "12.1");
}

TEST(Version, FromFileName) {
  EXPECT_EQ(VersionFromFileName("/x/libcudnn.so.9.14.0").ToString(), "9.14.0");
  EXPECT_EQ(VersionFromFileName("libcudnn.so.9").ToString(), "9");
  EXPECT_EQ(VersionFromFileName("libcuda.so.580.65.06").ToString(), "580.65.6");
  EXPECT_FALSE(VersionFromFileName("libcudnn.so").known());
  EXPECT_TRUE(VersionFromFileName("libcudnn.so.9").CompatibleWith(VersionFromFileName("libcudnn.so.9.14.0")));
  EXPECT_FALSE(VersionFromFileName("libcudnn.so.9.12.0").CompatibleWith(VersionFromFileName("libcudnn.so.9.14.0")));
}

TEST(CompatFacts, FindsRowsByCudnnAndCuda) {
  const CudnnSupportRow* row = FindCudnnSupport(MakeVersion(9, 17, 0), MakeVersion(13, 0, 0, 2));
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->min_cc, 75);
  EXPECT_EQ(row->min_driver_linux.ToString(), "580.65.6");
  const CudnnSupportRow* old = FindCudnnSupport(MakeVersion(9, 5, 1), MakeVersion(12, 6, 0, 2));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(old->max_cc, 90);
  EXPECT_EQ(FindCudnnSupport(MakeVersion(8, 9, 7), MakeVersion(12, 2, 0, 2)), nullptr);
}

}  // namespace
}  // namespace vigil::doctor
