#include "ir/dtype.h"

#include <limits>

namespace vigil::ir {

bool IsKnownDataType(int32_t v) {
  return v >= static_cast<int32_t>(DataType::kFloat32) && v <= static_cast<int32_t>(DataType::kFloat4E2M1);
}

bool IsFloatingPoint(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

std::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat32: return "float32";
    case DataType::kUint8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUint16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "str";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat64: return "float64";
    case DataType::kUint32: return "uint32";
    case DataType::kUint64: return "uint64";
    case DataType::kComplex64: return "complex64";
    case DataType::kComplex128: return "complex128";
    case DataType::kBfloat16: return "bfloat16";
    case DataType::kFloat8E4M3FN: return "float8_e4m3fn";
    case DataType::kFloat8E4M3FNUZ: return "float8_e4m3fnuz";
    case DataType::kFloat8E5M2: return "float8_e5m2";
    case DataType::kFloat8E5M2FNUZ: return "float8_e5m2fnuz";
    case DataType::kUint4: return "uint4";
    case DataType::kInt4: return "int4";
    case DataType::kFloat4E2M1: return "float4_e2m1fn";
  }
  return "unknown";
}

int DataTypeBits(DataType type) {
  switch (type) {
    case DataType::kUint4:
    case DataType::kInt4:
    case DataType::kFloat4E2M1: return 4;
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kBool:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ: return 8;
    case DataType::kUint16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBfloat16: return 16;
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUint32: return 32;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64:
    case DataType::kComplex64: return 64;
    case DataType::kComplex128: return 128;
    case DataType::kString:
    case DataType::kUndefined: return 0;
  }
  return 0;
}

std::optional<uint64_t> DataTypeStorageBytes(DataType type, uint64_t count) {
  int bits = DataTypeBits(type);
  if (bits == 0) return std::nullopt;
  if (count > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(bits)) return std::nullopt;
  return (count * static_cast<uint64_t>(bits) + 7) / 8;
}

}  // namespace vigil::ir
