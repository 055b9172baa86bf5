// Element types. Numbering follows ONNX's TensorProto.DataType so that the
// reader can store the wire value directly; names follow numpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace vigil::ir {

enum class DataType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
};

// True for the values listed above except kUndefined.
bool IsKnownDataType(int32_t wire_value);

// float32, float64, float16 or bfloat16: the dtypes float math ops take
// (not the float8/float4 storage types).
bool IsFloatingPoint(DataType type);

// numpy's name: "float32", "float16", "bfloat16", "int64", "bool", "str", ...
std::string_view DataTypeName(DataType type);

// Bits per element (4 for int4/uint4/float4), or 0 for strings and undefined.
int DataTypeBits(DataType type);

// Bytes needed for `count` elements, rounding packed sub-byte types up;
// nullopt for strings/undefined or on overflow.
std::optional<uint64_t> DataTypeStorageBytes(DataType type, uint64_t count);

}  // namespace vigil::ir
