// TensorProto of every dtype, raw and typed, packed and unpacked; sparse
// tensors; the size checks that guard allocation.
#include <cstring>

#include "read_helpers.h"

namespace vigil::onnx::test {
namespace {

using ir::DataType;
using ir::Tensor;
namespace tf = field::tensor;

// Reads a model whose only initializer is `tensor`; the bytes are kept in
// `holder` so in-place spans stay valid.
struct ReadOne {
  std::string holder;
  Result<ir::Model> model = InvalidModelError("unread");
  explicit ReadOne(const std::string& tensor) : holder(ModelWithInitializer(tensor)), model(ReadBytes(holder)) {}
  const Tensor& t() const { return model->graph.initializers.at(0); }
  bool InFile(std::span<const uint8_t> b) const {
    auto begin = reinterpret_cast<const uint8_t*>(holder.data());
    return b.data() >= begin && b.data() + b.size() <= begin + holder.size();
  }
};

std::string Bytes(std::initializer_list<int> v) {
  std::string s;
  for (int x : v) s.push_back(static_cast<char>(x));
  return s;
}

TEST(Tensor, EveryDtypeInRawData) {
  for (int32_t dtype = 1; dtype <= 23; ++dtype) {
    if (dtype == 8) continue;  // strings have no raw form
    const auto type = static_cast<DataType>(dtype);
    const uint64_t size = *ir::DataTypeStorageBytes(type, 3);
    std::string raw(size, '\x5A');
    ReadOne r(MakeTensor("t", dtype, {3}, raw));
    ASSERT_TRUE(r.model.ok()) << ir::DataTypeName(type) << ": " << r.model.status().ToString();
    EXPECT_EQ(r.t().dtype, type);
    EXPECT_EQ(r.t().storage, Tensor::Storage::kRawInPlace);
    EXPECT_EQ(r.t().bytes.size(), size) << ir::DataTypeName(type);
    EXPECT_TRUE(r.InFile(r.t().bytes)) << "raw_data is referenced in place";
  }
}

TEST(Tensor, RawSizeMismatchNamesTensorAndSizes) {
  ReadOne r(MakeTensor("conv1.weight", 1, {64, 3, 7, 7}, std::string(100, '\0')));
  EXPECT_READ_ERROR(r.model, ErrorCode::kInvalidModel,
                    "tensor 'conv1.weight': raw_data has 100 bytes, dims [64,3,7,7] of float32 need 37632");
  EXPECT_NE(r.model.status().summary().find("graph.initializer[0]"), std::string::npos);
  EXPECT_NE(r.model.status().summary().find("at byte"), std::string::npos);
}

TEST(Tensor, SubBytePackedRawRoundsUp) {
  ReadOne ok(MakeTensor("q", 22, {3}, Bytes({0x21, 0x03})));
  ASSERT_TRUE(ok.model.ok()) << ok.model.status().ToString();
  EXPECT_EQ(ok.t().bytes.size(), 2u);
  ReadOne bad(MakeTensor("q", 21, {3}, Bytes({0x21})));
  EXPECT_READ_ERROR(bad.model, ErrorCode::kInvalidModel, "raw_data has 1 bytes, dims [3] of uint4 need 2");
}

TEST(Tensor, FloatDataPackedIsInPlaceUnpackedIsDecoded) {
  ReadOne packed(MakeTensorHeader("f", 1, {3}).PackedFloats(tf::kFloatData, {1.f, 2.f, 3.f}));
  ASSERT_TRUE(packed.model.ok()) << packed.model.status().ToString();
  EXPECT_EQ(packed.t().storage, Tensor::Storage::kTypedInPlace);
  EXPECT_TRUE(packed.InFile(packed.t().bytes));

  ReadOne unpacked(MakeTensorHeader("f", 1, {3}).UnpackedFloats(tf::kFloatData, {1.f, 2.f, 3.f}));
  ASSERT_TRUE(unpacked.model.ok()) << unpacked.model.status().ToString();
  EXPECT_EQ(unpacked.t().storage, Tensor::Storage::kTypedDecoded);
  EXPECT_FALSE(unpacked.InFile(unpacked.t().bytes));
  ASSERT_EQ(unpacked.t().bytes.size(), 12u);
  EXPECT_EQ(0, std::memcmp(unpacked.t().bytes.data(), packed.t().bytes.data(), 12));

  // Protobuf may split a packed field into several runs; they concatenate.
  ReadOne split(MakeTensorHeader("f", 1, {3})
                    .PackedFloats(tf::kFloatData, {1.f})
                    .PackedFloats(tf::kFloatData, {2.f, 3.f}));
  ASSERT_TRUE(split.model.ok()) << split.model.status().ToString();
  EXPECT_EQ(0, std::memcmp(split.t().bytes.data(), packed.t().bytes.data(), 12));
}

TEST(Tensor, DoubleAndComplexTypedFields) {
  ReadOne d(MakeTensorHeader("d", 11, {2}).PackedDoubles(tf::kDoubleData, {1.5, -2.0}));
  ASSERT_TRUE(d.model.ok()) << d.model.status().ToString();
  EXPECT_EQ(d.t().storage, Tensor::Storage::kTypedInPlace);
  double v[2];
  std::memcpy(v, d.t().bytes.data(), 16);
  EXPECT_EQ(v[1], -2.0);

  ReadOne du(MakeTensorHeader("d", 11, {2}).UnpackedDoubles(tf::kDoubleData, {1.5, -2.0}));
  ASSERT_TRUE(du.model.ok()) << du.model.status().ToString();
  EXPECT_EQ(du.t().storage, Tensor::Storage::kTypedDecoded);
  EXPECT_EQ(0, std::memcmp(du.t().bytes.data(), d.t().bytes.data(), 16));

  ReadOne c64(MakeTensorHeader("c", 14, {2}).PackedFloats(tf::kFloatData, {1, 2, 3, 4}));
  ASSERT_TRUE(c64.model.ok()) << c64.model.status().ToString();
  EXPECT_EQ(c64.t().bytes.size(), 16u);
  ReadOne c128(MakeTensorHeader("c", 15, {1}).UnpackedDoubles(tf::kDoubleData, {1, 2}));
  ASSERT_TRUE(c128.model.ok()) << c128.model.status().ToString();
  EXPECT_EQ(c128.t().bytes.size(), 16u);
  ReadOne c_short(MakeTensorHeader("c", 14, {2}).PackedFloats(tf::kFloatData, {1, 2, 3}));
  EXPECT_READ_ERROR(c_short.model, ErrorCode::kInvalidModel, "float_data has 3 entries, dims [2] of complex64 need 4");
}

TEST(Tensor, Int32DataForNarrowTypes) {
  struct Case {
    int32_t dtype;
    std::vector<int64_t> values;
    std::string want;  // little-endian element bytes
  };
  std::vector<Case> cases = {
      {6, {-2, 1}, Bytes({0xFE, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0})},
      {3, {-2, 5}, Bytes({0xFE, 5})},
      {2, {255, 7}, Bytes({0xFF, 7})},
      {5, {-2, 300}, Bytes({0xFE, 0xFF, 0x2C, 0x01})},
      {4, {65535, 1}, Bytes({0xFF, 0xFF, 1, 0})},
      {9, {1, 0}, Bytes({1, 0})},
      {10, {0x3C00, 0xC000}, Bytes({0x00, 0x3C, 0x00, 0xC0})},  // float16 bits of 1.0, -2.0
      {16, {0x3F80, 0x4000}, Bytes({0x80, 0x3F, 0x00, 0x40})},  // bfloat16 bits
      {17, {0x38, 0x40}, Bytes({0x38, 0x40})},
      {18, {0x40, 0x48}, Bytes({0x40, 0x48})},
      {19, {0x3C, 0x40}, Bytes({0x3C, 0x40})},
      {20, {0x40, 0x44}, Bytes({0x40, 0x44})},
  };
  for (const Case& c : cases) {
    for (bool packed : {true, false}) {
      ProtoWriter w = MakeTensorHeader("n", c.dtype, {2});
      packed ? w.PackedVarints(tf::kInt32Data, c.values) : w.UnpackedVarints(tf::kInt32Data, c.values);
      ReadOne r(w);
      ASSERT_TRUE(r.model.ok()) << c.dtype << ": " << r.model.status().ToString();
      EXPECT_EQ(r.t().storage, Tensor::Storage::kTypedDecoded);
      std::string got(reinterpret_cast<const char*>(r.t().bytes.data()), r.t().bytes.size());
      EXPECT_EQ(got, c.want) << "dtype " << c.dtype << (packed ? " packed" : " unpacked");
    }
  }
}

TEST(Tensor, Int32DataPacksTwoFourBitElementsPerEntry) {
  for (int32_t dtype : {21, 22, 23}) {
    ReadOne r(MakeTensorHeader("q", dtype, {3}).PackedVarints(tf::kInt32Data, {0x21, 0x03}));
    ASSERT_TRUE(r.model.ok()) << r.model.status().ToString();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(r.t().bytes.data()), r.t().bytes.size()), Bytes({0x21, 0x03}));
  }
  ReadOne bad(MakeTensorHeader("q", 22, {3}).PackedVarints(tf::kInt32Data, {1, 2, 3}));
  EXPECT_READ_ERROR(bad.model, ErrorCode::kInvalidModel, "int32_data has 3 entries, dims [3] of int4 need 2");
}

TEST(Tensor, Int64AndUint64Data) {
  for (bool packed : {true, false}) {
    ProtoWriter w = MakeTensorHeader("i", 7, {2});
    packed ? w.PackedVarints(tf::kInt64Data, {-1, 1LL << 40}) : w.UnpackedVarints(tf::kInt64Data, {-1, 1LL << 40});
    ReadOne r(w);
    ASSERT_TRUE(r.model.ok()) << r.model.status().ToString();
    int64_t v[2];
    std::memcpy(v, r.t().bytes.data(), 16);
    EXPECT_EQ(v[0], -1);
    EXPECT_EQ(v[1], 1LL << 40);
  }
  ReadOne u64(MakeTensorHeader("u", 13, {1}).PackedVarints(tf::kUint64Data, {-1}));
  ASSERT_TRUE(u64.model.ok()) << u64.model.status().ToString();
  uint64_t big;
  std::memcpy(&big, u64.t().bytes.data(), 8);
  EXPECT_EQ(big, UINT64_MAX);
  ReadOne u32(MakeTensorHeader("u", 12, {2}).UnpackedVarints(tf::kUint64Data, {7, 0xFFFFFFFF}));
  ASSERT_TRUE(u32.model.ok()) << u32.model.status().ToString();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(u32.t().bytes.data()), 8), Bytes({7, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}));
}

TEST(Tensor, StringData) {
  ReadOne r(MakeTensorHeader("s", 8, {3}).Strings(tf::kStringData, {"a", "", std::string("\xff\0", 2)}));
  ASSERT_TRUE(r.model.ok()) << r.model.status().ToString();
  EXPECT_EQ(r.t().storage, Tensor::Storage::kStrings);
  EXPECT_EQ(r.t().strings, (std::vector<std::string>{"a", "", std::string("\xff\0", 2)}));
  ReadOne short_(MakeTensorHeader("s", 8, {3}).Strings(tf::kStringData, {"a"}));
  EXPECT_READ_ERROR(short_.model, ErrorCode::kInvalidModel, "string_data has 1 entries, dims [3] need 3");
  ReadOne raw(MakeTensor("s", 8, {1}, "x"));
  EXPECT_READ_ERROR(raw.model, ErrorCode::kInvalidModel, "strings must use string_data");
}

TEST(Tensor, ScalarsAndEmptyTensors) {
  ReadOne scalar(MakeFloatTensor("s", {}, {4.f}));
  ASSERT_TRUE(scalar.model.ok()) << scalar.model.status().ToString();
  EXPECT_TRUE(scalar.t().dims.empty());
  EXPECT_EQ(scalar.t().bytes.size(), 4u);
  ReadOne empty(MakeTensorHeader("e", 1, {0, 5}));
  ASSERT_TRUE(empty.model.ok()) << empty.model.status().ToString();
  EXPECT_EQ(empty.t().storage, Tensor::Storage::kEmpty);
  ReadOne missing(MakeTensorHeader("m", 1, {2}));
  EXPECT_READ_ERROR(missing.model, ErrorCode::kInvalidModel, "tensor 'm' has dims [2] (2 elements) but no data");
}

TEST(Tensor, TypedFieldMustFitDtype) {
  ReadOne r(MakeTensorHeader("x", 7, {1}).PackedFloats(tf::kFloatData, {1.f}));
  EXPECT_READ_ERROR(r.model, ErrorCode::kInvalidModel, "tensor 'x' has dtype int64 but stores its data in float_data");
  ReadOne both(MakeTensorHeader("x", 1, {1}).PackedFloats(tf::kFloatData, {1.f}).Bytes(tf::kRawData, "abcd"));
  EXPECT_READ_ERROR(both.model, ErrorCode::kInvalidModel, "sets both raw_data and float_data");
}

TEST(Tensor, NegativeAndOverflowingDims) {
  ReadOne neg(MakeTensor("n", 1, {2, -3}, ""));
  EXPECT_READ_ERROR(neg.model, ErrorCode::kInvalidModel, "tensor 'n' has negative dim -3 at axis 1");
  ReadOne big(MakeTensor("o", 1, {1LL << 40, 1LL << 40}, ""));
  EXPECT_READ_ERROR(big.model, ErrorCode::kInvalidModel, "the product of dims [1099511627776,1099511627776] overflows");
  ReadOne limit(MakeTensor("l", 1, {1LL << 41}, ""));
  EXPECT_READ_ERROR(limit.model, ErrorCode::kInvalidModel, "more than the limit");
  std::vector<int64_t> rank65(65, 1);
  ReadOne rank(MakeTensor("r", 1, rank65, "abcd"));
  EXPECT_READ_ERROR(rank.model, ErrorCode::kInvalidModel, "field 'dims' has more than 64 entries");
}

TEST(Tensor, HugeClaimedCountIsRefusedBeforeAllocating) {
  // 10^12 elements claimed, 10 bytes of data present: refused by counting.
  ReadOne r(MakeTensorHeader("h", 7, {1000000, 1000000}).PackedVarints(tf::kInt64Data, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_READ_ERROR(r.model, ErrorCode::kInvalidModel, "int64_data has 10 entries, dims [1000000,1000000] of int64 need");
  ReadOne raw(MakeTensor("h", 1, {1000000, 1000000}, "0123456789"));
  EXPECT_READ_ERROR(raw.model, ErrorCode::kInvalidModel, "raw_data has 10 bytes");
}

TEST(Tensor, UnknownDtypeAndSegment) {
  ReadOne none(MakeTensor("u", 0, {1}, "a"));
  EXPECT_READ_ERROR(none.model, ErrorCode::kInvalidModel, "tensor 'u' has no data_type");
  ReadOne future(MakeTensor("u", 24, {1}, "a"));
  EXPECT_READ_ERROR(future.model, ErrorCode::kUnsupported, "data_type 24");
  ProtoWriter seg = MakeTensorHeader("s", 1, {1});
  seg.Message(tf::kSegment, ProtoWriter().Varint(1, 0).Varint(2, 1)).Bytes(tf::kRawData, "abcd");
  ReadOne segmented(seg);
  EXPECT_READ_ERROR(segmented.model, ErrorCode::kUnsupported, "segment");
}

TEST(Tensor, PackedFloatsWithBadLengthAreRefused) {
  ReadOne r(MakeTensorHeader("f", 1, {1}).Bytes(tf::kFloatData, "abcde"));
  EXPECT_READ_ERROR(r.model, ErrorCode::kInvalidModel, "packed float_data has 5 bytes, not a multiple of 4");
}

std::string ModelWithSparse(const std::string& sparse) {
  return MakeModel(MakeGraph("g", {}, {}, {}, {.sparse_initializers = {sparse}}));
}

TEST(Tensor, SparseInitializers) {
  std::string values = MakeFloatTensor("sp", {2}, {1.f, 2.f});
  std::string linear = MakeSparseTensor(values, MakeTensor("", 7, {2}, RawBytes<int64_t>({1, 5})), {2, 3});
  std::string bytes = ModelWithSparse(linear);
  auto m = ReadBytes(bytes);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->graph.sparse_initializers.size(), 1u);
  EXPECT_EQ(m->graph.sparse_initializers[0].values.name, "sp");
  EXPECT_EQ(m->graph.sparse_initializers[0].dims, (std::vector<int64_t>{2, 3}));

  std::string coords = MakeSparseTensor(values, MakeTensor("", 7, {2, 2}, RawBytes<int64_t>({0, 2, 1, 0})), {2, 3});
  bytes = ModelWithSparse(coords);
  EXPECT_TRUE(ReadBytes(bytes).ok());

  std::string out_of_range = MakeSparseTensor(values, MakeTensor("", 7, {2}, RawBytes<int64_t>({1, 6})), {2, 3});
  bytes = ModelWithSparse(out_of_range);
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "sparse tensor index #1 is 6, outside [0, 6)");

  std::string bad_shape = MakeSparseTensor(values, MakeTensor("", 7, {3}, RawBytes<int64_t>({0, 1, 2})), {2, 3});
  bytes = ModelWithSparse(bad_shape);
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "expected int64[2] or int64[2,2]");

  std::string no_indices = ProtoWriter().Message(field::sparse::kValues, values).Varint(field::sparse::kDims, 4);
  bytes = ModelWithSparse(no_indices);
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "sparse tensor 'sp' lacks indices");
}

}  // namespace
}  // namespace vigil::onnx::test
