// The Dtypes cells of docs/ops.md (tools/ops_doc/op_table.h): short names,
// the group words, and one list per opset range where the kernels differ.
#include "op_table.h"

#include <climits>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_type_constraints.h"

namespace vigil::opsdoc {
namespace {

using ir::DataType;
using cpu::Bit;

TEST(OpTableDtypes, ShortNamesAndGroups) {
  EXPECT_EQ(FormatDtypes(cpu::kFloatTypes), "f32 f16 bf16 f64");
  EXPECT_EQ(FormatDtypes(Bit(DataType::kInt8) | Bit(DataType::kUint8) | Bit(DataType::kFloat32) | Bit(DataType::kBool)),
            "f32 i8 u8 bool");
  EXPECT_EQ(FormatDtypes(cpu::kAllTypes), "numeric bool");
  EXPECT_EQ(FormatDtypes(cpu::kByteSizedDtypes), "numeric bool float8 c64 c128");
  // Three of the four float8 kinds are not "float8".
  EXPECT_EQ(FormatDtypes(Bit(DataType::kFloat8E4M3FN) | Bit(DataType::kFloat8E5M2) | Bit(DataType::kFloat8E5M2FNUZ)),
            "f8e4m3fn f8e5m2 f8e5m2fnuz");
  EXPECT_EQ(FormatDtypes(cpu::kAnyDtype), "any");
  EXPECT_EQ(FormatDtypes(cpu::kFixedSizeDtypes), "numeric bool float8 c64 c128 i4 u4 f4e2m1");
  EXPECT_EQ(FormatDtypes(0), "none");
}

TEST(OpTableDtypes, SpansJoinWhereEqualAndSplitWhereNot) {
  const uint64_t floats = cpu::kFloatTypes, numeric = cpu::kNumericTypes;
  // Clip: 6-10 floats, 11+ numeric.
  EXPECT_EQ(FormatDtypeSpans({{{11, INT_MAX}, numeric}, {{6, 10}, floats}}), "f32 f16 bf16 f64 (6-10); numeric (11+)");
  // ReduceSum: two kernels of one list make one cell.
  EXPECT_EQ(FormatDtypeSpans({{{1, 12}, numeric}, {{13, INT_MAX}, numeric}}), "numeric");
  // Undecided, and no inputs.
  DtypeSpan undecided{{1, INT_MAX}};
  undecided.decided = false;
  EXPECT_EQ(FormatDtypeSpans({undecided}), "*per node*");
  DtypeSpan constant{{1, INT_MAX}};
  constant.no_inputs = true;
  EXPECT_EQ(FormatDtypeSpans({constant}), "(no inputs)");
  // Adjacent spans of one list join; a gap keeps them apart.
  EXPECT_EQ(FormatDtypeSpans({{{1, 9}, floats}, {{10, INT_MAX}, floats}}), "f32 f16 bf16 f64");
  EXPECT_EQ(FormatDtypeSpans({{{1, 9}, floats}, {{11, INT_MAX}, numeric}}), "f32 f16 bf16 f64 (1-9); numeric (11+)");
  EXPECT_EQ(FormatDtypeSpans({}), "");
}

}  // namespace
}  // namespace vigil::opsdoc
