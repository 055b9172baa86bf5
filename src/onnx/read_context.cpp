#include "onnx/read_context.h"

#include <cstring>

#include <fmt/ranges.h>

namespace vigil::onnx {

using wire::Field;
using wire::WireType;

std::string ReadContext::Path() const {
  if (path.empty()) return "model";
  std::string out;
  for (const PathSegment& seg : path) {
    if (!out.empty()) out += '.';
    out += seg.name;
    if (seg.index >= 0) out += fmt::format("[{}]", seg.index);
  }
  return out;
}

Status ReadContext::MakeAt(ErrorCode code, uint64_t offset, std::string message) const {
  std::string where = Path();
  Status s(code, fmt::format("{}: {} (at byte {})", where, message, offset));
  s.WithFact("field", where).WithFact("byte offset", std::to_string(offset));
  return s;
}

Status ReadContext::Charge(uint64_t offset, uint64_t bytes) {
  object_bytes += bytes;
  if (object_bytes > object_budget) {
    return Error(offset, "the model's structure needs more than {} bytes of memory for a {}-byte file; refusing it",
                 object_budget, file.size())
        .WithCause("a hostile or corrupted file with a huge number of (empty) nodes, attributes or names");
  }
  return Status::Ok();
}

Status ReadContext::Wrap(Status status) const {
  if (status.ok()) return status;
  std::string where = Path();
  status.WithContext(where);
  status.WithFact("field", where);
  return status;
}

Scope::Scope(ReadContext& ctx, std::string_view name, int64_t index) : ctx_(ctx) {
  ctx_.path.push_back({name, index});
  ++ctx_.message_depth;
}

Scope::~Scope() {
  ctx_.path.pop_back();
  --ctx_.message_depth;
}

Status Scope::Check(uint64_t offset) const {
  if (ctx_.message_depth > ctx_.limits.max_message_depth) {
    return ctx_.Error(offset, "messages nest deeper than {} levels", ctx_.limits.max_message_depth);
  }
  return Status::Ok();
}

Status ExpectWireType(const ReadContext& ctx, const Field& f, WireType type, std::string_view name) {
  if (f.type == type) return Status::Ok();
  return ctx.Error(f.offset, "field '{}' (number {}) has wire type {}, expected {}", name, f.number,
                   wire::WireTypeName(f.type), wire::WireTypeName(type));
}

Status ReadString(const ReadContext& ctx, const Field& f, std::string_view name, std::string* out) {
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kLen, name));
  out->assign(reinterpret_cast<const char*>(f.payload.data()), f.payload.size());
  return Status::Ok();
}

Status ReadInt64(const ReadContext& ctx, const Field& f, std::string_view name, int64_t* out) {
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kVarint, name));
  *out = static_cast<int64_t>(f.value);
  return Status::Ok();
}

Status ReadInt32(const ReadContext& ctx, const Field& f, std::string_view name, int32_t* out) {
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kVarint, name));
  if (!wire::VarintToInt32(f.value, out)) {
    return ctx.Error(f.offset, "field '{}' holds {}, which does not fit int32", name,
                     static_cast<int64_t>(f.value));
  }
  return Status::Ok();
}

Status ReadFloat(const ReadContext& ctx, const Field& f, std::string_view name, float* out) {
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kFixed32, name));
  const uint32_t bits = static_cast<uint32_t>(f.value);
  std::memcpy(out, &bits, sizeof bits);
  return Status::Ok();
}

Status CheckRepeated(const ReadContext& ctx, const Field& f, std::string_view name, size_t current_size) {
  if (current_size >= ctx.limits.max_repeated) {
    return ctx.Error(f.offset, "field '{}' repeats more than {} times", name, ctx.limits.max_repeated);
  }
  return Status::Ok();
}

Status AppendInt64s(const ReadContext& ctx, const Field& f, std::string_view name, uint64_t max_size,
                    std::vector<int64_t>* out) {
  if (f.type == WireType::kVarint) {
    if (out->size() >= max_size) {
      return ctx.Error(f.offset, "field '{}' has more than {} entries", name, max_size);
    }
    out->push_back(static_cast<int64_t>(f.value));
    return Status::Ok();
  }
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kLen, name));
  const uint64_t base = ctx.OffsetOf(f.payload);
  auto count = wire::CountPackedVarints(f.payload, base);
  if (!count.ok()) return ctx.Wrap(count.status());
  // Counted before reserving: the count is bounded by the payload's bytes.
  if (*count > max_size - out->size()) {
    return ctx.Error(f.offset, "field '{}' has {} + {} entries, more than {}", name, out->size(), *count, max_size);
  }
  out->reserve(out->size() + *count);
  size_t pos = 0;
  while (pos < f.payload.size()) {
    uint64_t v = 0;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(wire::DecodeVarint(f.payload, &pos, base, &v)));
    out->push_back(static_cast<int64_t>(v));
  }
  return Status::Ok();
}

Status AppendFloats(const ReadContext& ctx, const Field& f, std::string_view name, std::vector<float>* out) {
  const uint64_t max_size = ctx.limits.max_repeated;
  if (f.type == WireType::kFixed32) {
    if (out->size() >= max_size) return ctx.Error(f.offset, "field '{}' has more than {} entries", name, max_size);
    float v = 0;
    VIGIL_RETURN_IF_ERROR(ReadFloat(ctx, f, name, &v));
    out->push_back(v);
    return Status::Ok();
  }
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kLen, name));
  if (f.payload.size() % 4 != 0) {
    return ctx.Error(f.offset, "packed field '{}' has {} bytes, not a multiple of 4", name, f.payload.size());
  }
  const size_t count = f.payload.size() / 4;
  if (count > max_size - out->size()) {
    return ctx.Error(f.offset, "field '{}' has more than {} entries", name, max_size);
  }
  const size_t old = out->size();
  out->resize(old + count);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t bits = wire::LoadLe32(f.payload.data() + 4 * i);
    std::memcpy(&(*out)[old + i], &bits, 4);
  }
  return Status::Ok();
}

Status AppendString(ReadContext& ctx, const Field& f, std::string_view name, std::vector<std::string>* out) {
  VIGIL_RETURN_IF_ERROR(CheckRepeated(ctx, f, name, out->size()));
  VIGIL_RETURN_IF_ERROR(ctx.Charge(f.offset, sizeof(std::string) + f.payload.size()));
  std::string s;
  VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, name, &s));
  out->push_back(std::move(s));
  return Status::Ok();
}

std::string DimsToString(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ",")); }

}  // namespace vigil::onnx
