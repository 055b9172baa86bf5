#include "ir/dtype.h"

#include <gtest/gtest.h>

#include "ir/types.h"

namespace vigil::ir {
namespace {

TEST(DataType, NumpyNames) {
  EXPECT_EQ(DataTypeName(DataType::kFloat32), "float32");
  EXPECT_EQ(DataTypeName(DataType::kFloat16), "float16");
  EXPECT_EQ(DataTypeName(DataType::kBfloat16), "bfloat16");
  EXPECT_EQ(DataTypeName(DataType::kInt64), "int64");
  EXPECT_EQ(DataTypeName(DataType::kBool), "bool");
  EXPECT_EQ(DataTypeName(DataType::kFloat64), "float64");
}

TEST(DataType, KnownRange) {
  EXPECT_FALSE(IsKnownDataType(0));
  EXPECT_TRUE(IsKnownDataType(1));
  EXPECT_TRUE(IsKnownDataType(23));
  EXPECT_FALSE(IsKnownDataType(24));
  EXPECT_FALSE(IsKnownDataType(-1));
}

TEST(DataType, StorageBytes) {
  EXPECT_EQ(DataTypeStorageBytes(DataType::kFloat32, 10), 40u);
  EXPECT_EQ(DataTypeStorageBytes(DataType::kInt4, 3), 2u);  // packed two per byte, rounded up
  EXPECT_EQ(DataTypeStorageBytes(DataType::kComplex128, 2), 32u);
  EXPECT_FALSE(DataTypeStorageBytes(DataType::kString, 1).has_value());
  EXPECT_FALSE(DataTypeStorageBytes(DataType::kFloat64, UINT64_MAX / 4).has_value());  // overflow
}

TEST(Types, ToString) {
  TypeInfo t;
  t.kind = TypeInfo::Kind::kTensor;
  t.elem_type = DataType::kFloat32;
  t.shape.rank_known = true;
  t.shape.dims = {Dim::Known(1), Dim::Known(3), Dim::Symbolic("H"), Dim{}};
  EXPECT_EQ(TypeToString(t), "float32[1,3,H,?]");
  TypeInfo seq;
  seq.kind = TypeInfo::Kind::kSequence;
  seq.inner = std::make_shared<TypeInfo>(t);
  EXPECT_EQ(TypeToString(seq), "seq(float32[1,3,H,?])");
  TypeInfo any;
  any.kind = TypeInfo::Kind::kTensor;
  any.elem_type = DataType::kInt64;
  EXPECT_EQ(TypeToString(any), "int64[*]");
}

}  // namespace
}  // namespace vigil::ir
