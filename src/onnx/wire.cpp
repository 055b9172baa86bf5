#include "onnx/wire.h"

#include <limits>

namespace vigil::onnx::wire {

std::string_view WireTypeName(WireType type) {
  switch (type) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLen: return "length-delimited";
    case WireType::kStartGroup: return "start-group";
    case WireType::kEndGroup: return "end-group";
    case WireType::kFixed32: return "fixed32";
  }
  return "invalid";
}

Status DecodeVarint(std::span<const uint8_t> data, size_t* pos, uint64_t base_offset, uint64_t* out) {
  const uint64_t start = base_offset + *pos;
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    if (*pos >= data.size()) {
      return InvalidModelError("truncated varint at byte {}: the message ends after {} of its bytes", start, i);
    }
    const uint8_t byte = data[(*pos)++];
    // The 10th byte holds only bit 63; anything more would not fit 64 bits.
    if (i == 9 && byte > 1) {
      return InvalidModelError("varint at byte {} overflows 64 bits", start);
    }
    value |= uint64_t{byte & 0x7Fu} << (7 * i);
    if ((byte & 0x80) == 0) {
      *out = value;
      return Status::Ok();
    }
  }
  return InvalidModelError("varint at byte {} is longer than 10 bytes", start);
}

Status FieldReader::ReadVarint(uint64_t* out) { return DecodeVarint(data_, &pos_, base_, out); }

Status FieldReader::Next(Field* field) {
  field->offset = offset();
  uint64_t tag = 0;
  VIGIL_RETURN_IF_ERROR(ReadVarint(&tag));
  const uint64_t number = tag >> 3;
  const uint8_t wire = static_cast<uint8_t>(tag & 7);
  if (number == 0 || number > (uint64_t{1} << 29) - 1) {
    return InvalidModelError("invalid field number {} at byte {}", number, field->offset);
  }
  field->number = static_cast<uint32_t>(number);
  field->payload = {};
  field->value = 0;
  switch (wire) {
    case 0:
      field->type = WireType::kVarint;
      return ReadVarint(&field->value);
    case 1:
    case 5: {
      const size_t width = wire == 1 ? 8 : 4;
      field->type = wire == 1 ? WireType::kFixed64 : WireType::kFixed32;
      if (data_.size() - pos_ < width) {
        return InvalidModelError("field {} at byte {}: {}-byte value but only {} bytes left in the message",
                                 number, field->offset, width, data_.size() - pos_);
      }
      field->value = width == 8 ? LoadLe64(data_.data() + pos_) : LoadLe32(data_.data() + pos_);
      pos_ += width;
      return Status::Ok();
    }
    case 2: {
      field->type = WireType::kLen;
      uint64_t len = 0;
      VIGIL_RETURN_IF_ERROR(ReadVarint(&len));
      const size_t left = data_.size() - pos_;
      if (len > left) {
        return InvalidModelError("field {} at byte {}: length {} runs past the end of the message ({} bytes left)",
                                 number, field->offset, len, left);
      }
      field->payload = data_.subspan(pos_, static_cast<size_t>(len));
      pos_ += static_cast<size_t>(len);
      return Status::Ok();
    }
    case 3:
    case 4:
      // Groups are deprecated proto2 syntax that onnx.proto never uses.
      // Refusing them is simpler and safer than skipping nested groups.
      return InvalidModelError("field {} at byte {} uses wire type {} ({}), which ONNX files never contain",
                               number, field->offset, wire, WireTypeName(static_cast<WireType>(wire)));
    default:
      return InvalidModelError("field {} at byte {} has invalid wire type {}", number, field->offset, wire);
  }
}

Result<uint64_t> CountPackedVarints(std::span<const uint8_t> payload, uint64_t base_offset) {
  uint64_t count = 0;
  size_t pos = 0;
  while (pos < payload.size()) {
    uint64_t ignored = 0;
    VIGIL_RETURN_IF_ERROR(DecodeVarint(payload, &pos, base_offset, &ignored));
    ++count;
  }
  return count;
}

uint32_t LoadLe32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

uint64_t LoadLe64(const uint8_t* p) { return uint64_t{LoadLe32(p)} | (uint64_t{LoadLe32(p + 4)} << 32); }

bool VarintToInt32(uint64_t v, int32_t* out) {
  const int64_t s = static_cast<int64_t>(v);
  if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max()) return false;
  *out = static_cast<int32_t>(s);
  return true;
}

}  // namespace vigil::onnx::wire
