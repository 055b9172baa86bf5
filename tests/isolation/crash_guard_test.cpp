// Crash isolation's pieces without the CLI: the tensor/Status wire format
// between parent and worker, and the worker-fd argument. The crash handler
// and report it relies on are tested in tests/doctor/crash_report_test.cpp;
// a whole isolated run, through `vigil run --isolate`, in tests/cli.
#include <cstring>

#include <gtest/gtest.h>

#include "base/diagnosis_render.h"
#include "isolation/crash_guard.h"
#include "isolation/isolation_wire.h"

namespace vigil::doctor {
namespace {

runtime::Tensor Floats(std::vector<int64_t> shape, float start) {
  runtime::Tensor t = runtime::Tensor::Allocate(ir::DataType::kFloat32, std::move(shape)).value();
  for (uint64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

std::span<const uint8_t> Bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(IsolationWire, TensorsRoundTrip) {
  std::vector<runtime::NamedTensor> in = {{"x", Floats({2, 3}, 1)}, {"", Floats({0, 5}, 0)}, {"scalar", Floats({}, 7)}};
  std::string bytes = EncodeTensors(in).value();
  auto out = DecodeTensors(Bytes(bytes));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].name, in[i].name);
    EXPECT_EQ((*out)[i].tensor.shape(), in[i].tensor.shape());
    ASSERT_EQ((*out)[i].tensor.byte_size(), in[i].tensor.byte_size());
    EXPECT_EQ(std::memcmp((*out)[i].tensor.raw_data(), in[i].tensor.raw_data(), in[i].tensor.byte_size()), 0);
  }
}

TEST(IsolationWire, EveryTruncationIsAnErrorNotACrash) {
  std::string bytes = EncodeTensors({{"x", Floats({4, 4}, 0)}}).value();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto out = DecodeTensors(Bytes(bytes.substr(0, n)));
    EXPECT_FALSE(out.ok()) << "prefix of " << n << " bytes decoded";
  }
  std::string bad = bytes;
  bad[4 + 8 + 8] = 'y';  // the name's byte: still valid
  EXPECT_TRUE(DecodeTensors(Bytes(bad)).ok());
  bad = bytes;
  std::memset(&bad[4 + 8 + 8 + 1 + 4], 0x7f, 8);  // the rank: absurd
  EXPECT_FALSE(DecodeTensors(Bytes(bad)).ok());
}

// Found by tests/fuzz/fuzz_isolation_wire: a shape that does not match the
// bytes present was allocated before it was checked, so a corrupt message made
// the parent ask for terabytes (ASan: allocation-size-too-big; without ASan:
// an out-of-memory error instead of "corrupt", where the kernel refuses 4 TiB:
// vm.overcommit_memory 0 or 2).
TEST(IsolationWire, AShapeLargerThanItsBytesIsCorruptAndNotAllocated) {
  std::string bytes = EncodeTensors({{"x", Floats({2}, 0)}}).value();
  const size_t dim_at = 4 + 8 + 8 + 1 + 4 + 8;  // magic, count, name size, "x", dtype, rank
  const int64_t huge = int64_t{1} << 40;        // 4 TiB of float32 for the 8 bytes present
  std::memcpy(&bytes[dim_at], &huge, sizeof huge);
  auto out = DecodeTensors(Bytes(bytes));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInternal) << out.status().ToString();
  EXPECT_NE(out.status().ToString().find("truncated or corrupt"), std::string::npos) << out.status().ToString();
}

TEST(IsolationWire, AStatusKeepsItsWholeDiagnosis) {
  Status s = OutOfMemoryError("the plan needs 9 GiB")
                 .WithFact("planned", "9 GiB")
                 .WithCause("batch too large", "64 images")
                 .WithFix("lower the batch");
  Result<std::vector<runtime::NamedTensor>> r = s;
  std::string bytes = EncodeAnswer(r);
  auto back = DecodeAnswer(Bytes(bytes));
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(RenderText(back.status().diagnosis()), RenderText(s.diagnosis()));
  EXPECT_FALSE(DecodeAnswer({}).ok());
  EXPECT_FALSE(DecodeAnswer(Bytes("S{not json")).ok());
  EXPECT_FALSE(DecodeAnswer(Bytes("Q")).ok());
}

TEST(IsolatedChildFds, ParsesOnlyThreeNonNegativeNumbers) {
  auto fds = ParseIsolatedChildFds("3,4,5");
  ASSERT_TRUE(fds);
  EXPECT_EQ(fds->control, 3);
  EXPECT_EQ(fds->answer, 5);
  for (const char* bad : {"", "3,4", "3,4,5,6", "3,-4,5", "a,b,c", "3,4,5 ", "3;4;5"}) {
    EXPECT_FALSE(ParseIsolatedChildFds(bad)) << bad;
  }
}

}  // namespace
}  // namespace vigil::doctor
