// A bounds-checked reader of the protobuf wire format, the generic layer below
// the ONNX message readers. It knows nothing about ONNX: it walks the fields of
// one message held in a span, checking every varint, tag and length against
// the bytes left, and reports problems with the absolute byte offset in the
// file so that messages can say where the file is broken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "base/status.h"

namespace vigil::onnx::wire {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,  // deprecated protobuf groups; never used by ONNX, refused
  kEndGroup = 4,
  kFixed32 = 5,
};

std::string_view WireTypeName(WireType type);

// One decoded field. For kVarint, kFixed32 and kFixed64 the value is in
// `value`; for kLen the payload is in `payload`.
struct Field {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;
  std::span<const uint8_t> payload;
  uint64_t offset = 0;  // absolute offset of the tag, for messages
};

// Walks the fields of one message. `base_offset` is the absolute file offset
// of `data[0]`, used only in messages.
class FieldReader {
 public:
  FieldReader(std::span<const uint8_t> data, uint64_t base_offset) : data_(data), base_(base_offset) {}

  bool done() const { return pos_ >= data_.size(); }
  uint64_t offset() const { return base_ + pos_; }

  // Reads the next tag and its value. Rejects field number 0, numbers past
  // 2^29-1, wire types 3, 4 (groups), 6 and 7, and any value or length that
  // runs past the end of the message. Consuming the whole value here is what
  // makes skipping unknown fields always correct.
  Status Next(Field* field);

 private:
  Status ReadVarint(uint64_t* out);

  std::span<const uint8_t> data_;
  uint64_t base_;
  size_t pos_ = 0;
};

// Decodes one varint at data[*pos], advancing *pos. Refuses more than 10
// bytes, a 10th byte above 1 (a value past 2^64), and truncation.
// `base_offset` is the absolute offset of data[0], for messages.
Status DecodeVarint(std::span<const uint8_t> data, size_t* pos, uint64_t base_offset, uint64_t* out);

// Number of varints in a packed payload, checking each one.
Result<uint64_t> CountPackedVarints(std::span<const uint8_t> payload, uint64_t base_offset);

// Little-endian loads from unaligned bytes.
uint32_t LoadLe32(const uint8_t* p);
uint64_t LoadLe64(const uint8_t* p);

// Protobuf writes int32 fields sign-extended to 64 bits; false when the
// value does not fit int32.
bool VarintToInt32(uint64_t v, int32_t* out);

}  // namespace vigil::onnx::wire
