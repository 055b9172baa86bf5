// The generic protobuf wire decoder: varints, tags, lengths, wire types.
#include "onnx/wire.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace vigil::onnx::wire {
namespace {

std::span<const uint8_t> Span(const std::vector<uint8_t>& v) { return {v.data(), v.size()}; }

Status Decode(const std::vector<uint8_t>& bytes, uint64_t* out) {
  size_t pos = 0;
  return DecodeVarint(Span(bytes), &pos, 100, out);
}

TEST(Wire, VarintOneByteAndMaximum) {
  uint64_t v = 0;
  ASSERT_TRUE(Decode({0x05}, &v).ok());
  EXPECT_EQ(v, 5u);
  ASSERT_TRUE(Decode({0xAC, 0x02}, &v).ok());
  EXPECT_EQ(v, 300u);
  std::vector<uint8_t> max(9, 0xFF);
  max.push_back(0x01);
  ASSERT_TRUE(Decode(max, &v).ok());
  EXPECT_EQ(v, UINT64_MAX);
}

TEST(Wire, VarintOfElevenBytesIsRefused) {
  std::vector<uint8_t> bytes(10, 0x80);
  bytes.push_back(0x00);
  uint64_t v = 0;
  Status s = Decode(bytes, &v);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(s.summary().find("overflows 64 bits"), std::string::npos) << s.summary();
}

TEST(Wire, VarintOverflowingTheTenthByteIsRefused) {
  std::vector<uint8_t> bytes(9, 0xFF);
  bytes.push_back(0x02);
  uint64_t v = 0;
  Status s = Decode(bytes, &v);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("overflows 64 bits"), std::string::npos) << s.summary();
  EXPECT_NE(s.summary().find("byte 100"), std::string::npos) << s.summary();
}

TEST(Wire, TruncatedVarintNamesItsOffset) {
  uint64_t v = 0;
  Status s = Decode({0x80, 0x80}, &v);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("truncated varint at byte 100"), std::string::npos) << s.summary();
}

Status NextOf(const std::vector<uint8_t>& bytes, Field* f) {
  FieldReader r(Span(bytes), 0);
  return r.Next(f);
}

TEST(Wire, ReadsEveryValidWireType) {
  // field 1 varint 150; field 2 fixed64; field 3 "ab"; field 4 fixed32
  std::vector<uint8_t> bytes = {0x08, 0x96, 0x01, 0x11, 1, 2, 3, 4, 5, 6, 7, 8,
                                0x1A, 0x02, 'a', 'b', 0x25, 9, 0, 0, 0};
  FieldReader r(Span(bytes), 0);
  Field f;
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.value, 150u);
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.type, WireType::kFixed64);
  EXPECT_EQ(f.value, 0x0807060504030201u);
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.type, WireType::kLen);
  EXPECT_EQ(f.payload.size(), 2u);
  EXPECT_EQ(f.payload[1], 'b');
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f.type, WireType::kFixed32);
  EXPECT_EQ(f.value, 9u);
  EXPECT_TRUE(r.done());
}

TEST(Wire, GroupWireTypesAreRefused) {
  for (uint8_t wire : {3, 4}) {
    Field f;
    Status s = NextOf({static_cast<uint8_t>((1 << 3) | wire), 0x00}, &f);
    ASSERT_FALSE(s.ok()) << int(wire);
    EXPECT_NE(s.summary().find("group"), std::string::npos) << s.summary();
  }
}

TEST(Wire, WireTypesSixAndSevenAreInvalid) {
  for (uint8_t wire : {6, 7}) {
    Field f;
    Status s = NextOf({static_cast<uint8_t>((2 << 3) | wire), 0x00}, &f);
    ASSERT_FALSE(s.ok()) << int(wire);
    EXPECT_NE(s.summary().find("invalid wire type " + std::to_string(wire)), std::string::npos) << s.summary();
  }
}

TEST(Wire, FieldNumberZeroAndTooLargeAreRefused) {
  Field f;
  Status s = NextOf({0x00, 0x00}, &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("invalid field number 0"), std::string::npos) << s.summary();
  // tag = (2^29) << 3: field number past the protobuf maximum.
  s = NextOf({0x80, 0x80, 0x80, 0x80, 0x20, 0x00}, &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("invalid field number"), std::string::npos) << s.summary();
}

TEST(Wire, LengthPastTheEndIsRefused) {
  Field f;
  Status s = NextOf({0x0A, 0x05, 'a', 'b'}, &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("length 5 runs past the end of the message (2 bytes left)"), std::string::npos)
      << s.summary();
  // A length near 2^64 must not wrap any arithmetic.
  s = NextOf({0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("runs past the end"), std::string::npos) << s.summary();
}

TEST(Wire, TruncatedFixedValuesAreRefused) {
  Field f;
  Status s = NextOf({0x0D, 1, 2}, &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("4-byte value but only 2 bytes left"), std::string::npos) << s.summary();
  s = NextOf({0x09, 1, 2, 3, 4, 5, 6, 7}, &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.summary().find("8-byte value but only 7 bytes left"), std::string::npos) << s.summary();
}

TEST(Wire, CountPackedVarintsChecksEach) {
  std::vector<uint8_t> ok = {0x01, 0xAC, 0x02, 0x7F};
  auto n = CountPackedVarints(Span(ok), 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 3u);
  std::vector<uint8_t> bad = {0x01, 0x80};
  EXPECT_FALSE(CountPackedVarints(Span(bad), 0).ok());
}

TEST(Wire, Int32RangeIsChecked) {
  int32_t v = 0;
  EXPECT_TRUE(VarintToInt32(static_cast<uint64_t>(int64_t{-5}), &v));
  EXPECT_EQ(v, -5);
  EXPECT_FALSE(VarintToInt32(uint64_t{1} << 40, &v));
}

}  // namespace
}  // namespace vigil::onnx::wire
