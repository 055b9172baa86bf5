// vigil compare's note on float16 and bfloat16 values that fail a relative
// tolerance finer than their own spacing (HalfPrecisionNote): real tensors
// compared on the CPU, no GPU needed.
#include "cli/per_node_compare.h"

#include <gtest/gtest.h>

#include "vigil/float16.h"

namespace vigil::cli {
namespace {

// [1, 2, 3, 4] in `dtype`, the last element raised by `bump` float16 steps.
runtime::Tensor Values(ir::DataType dtype, int bump) {
  runtime::Tensor t = runtime::Tensor::Allocate(dtype, {4}).value();
  for (int i = 0; i < 4; ++i) {
    const float v = static_cast<float>(i + 1);
    uint16_t bits = dtype == ir::DataType::kFloat16 ? FloatToFloat16(v) : FloatToBfloat16(v);
    if (i == 3) bits = static_cast<uint16_t>(bits + bump);
    t.data<uint16_t>()[i] = bits;
  }
  return t;
}

TEST(HalfPrecisionNote, SaysWhenTheToleranceIsFinerThanTheDtype) {
  // One float16 step above 4 (9.8e-4 relative) passes --rtol 1e-3; two fail it.
  const ValueComparison f16 = CompareValue("y", Values(ir::DataType::kFloat16, 2), Values(ir::DataType::kFloat16, 0),
                                           1e-3, 1e-5);
  ASSERT_FALSE(f16.cmp.ok());
  const std::string note = HalfPrecisionNote(f16, 1e-3);
  EXPECT_NE(note.find("'y' is float16"), std::string::npos) << note;
  EXPECT_NE(note.find("2^-10"), std::string::npos) << note;
  EXPECT_NE(note.find("--rtol 0.001 allows 1.0 such steps"), std::string::npos) << note;
  const ValueComparison bf16 = CompareValue("z", Values(ir::DataType::kBfloat16, 1),
                                            Values(ir::DataType::kBfloat16, 0), 1e-3, 1e-5);
  ASSERT_FALSE(bf16.cmp.ok());
  EXPECT_NE(HalfPrecisionNote(bf16, 1e-3).find("2^-7"), std::string::npos);
}

TEST(HalfPrecisionNote, SilentWhereItWouldNotHelp) {
  // Passing values, a tolerance already at the dtype's resolution, float32.
  const ValueComparison same = CompareValue("y", Values(ir::DataType::kFloat16, 0), Values(ir::DataType::kFloat16, 0),
                                            1e-3, 1e-5);
  EXPECT_EQ(HalfPrecisionNote(same, 1e-3), "");
  const ValueComparison far = CompareValue("y", Values(ir::DataType::kFloat16, 300),
                                           Values(ir::DataType::kFloat16, 0), 1e-2, 1e-5);
  ASSERT_FALSE(far.cmp.ok());
  EXPECT_EQ(HalfPrecisionNote(far, 1e-2), "");
  runtime::Tensor a = runtime::Tensor::Allocate(ir::DataType::kFloat32, {2}).value();
  runtime::Tensor b = runtime::Tensor::Allocate(ir::DataType::kFloat32, {2}).value();
  a.data<float>()[0] = b.data<float>()[0] = 1;
  a.data<float>()[1] = 2;
  b.data<float>()[1] = 2.1f;
  const ValueComparison f32 = CompareValue("y", b, a, 1e-3, 1e-5);
  ASSERT_FALSE(f32.cmp.ok());
  EXPECT_EQ(HalfPrecisionNote(f32, 1e-3), "");
}

}  // namespace
}  // namespace vigil::cli
