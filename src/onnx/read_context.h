// Shared state and field helpers of the ONNX message readers (internal to
// src/onnx). The context tracks where in the model the reader is — a field
// path such as "graph.node[3].attribute[0].t" — and the nesting depths, so
// that every error can name the field and byte offset, and so that recursion
// (graphs in attributes, types in types) is bounded by ReadLimits.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/status.h"
#include "onnx/reader.h"
#include "onnx/wire.h"

namespace vigil::onnx {

class ExternalDataFiles;

struct ReadContext {
  struct PathSegment {
    std::string_view name;  // a field name literal
    int64_t index;          // -1 for a non-repeated field
  };

  ReadLimits limits;
  std::span<const uint8_t> file;            // the whole model; every payload lies inside it
  std::shared_ptr<const void> owner;        // keeps `file` alive; null for caller-owned bytes
  ExternalDataFiles* external = nullptr;    // null when external data is not loaded
  std::vector<PathSegment> path;
  int message_depth = 0;
  int graph_depth = 0;
  // Memory charged for decoded structure (nodes, attributes, strings...). An
  // empty repeated message costs 2 bytes of file but hundreds of bytes as an
  // IR object, so without this a small hostile file could make a giant
  // allocation. The budget is set from the file size in reader.cpp.
  uint64_t object_bytes = 0;
  uint64_t object_budget = UINT64_MAX;

  // Absolute offset of a payload inside the file.
  uint64_t OffsetOf(std::span<const uint8_t> bytes) const {
    return static_cast<uint64_t>(bytes.data() - file.data());
  }
  wire::FieldReader Reader(std::span<const uint8_t> bytes) const { return {bytes, OffsetOf(bytes)}; }

  // "graph.node[3].attribute[0]"; "model" at the top.
  std::string Path() const;

  // InvalidModel "<path>: <message> (at byte N)", with field and offset facts.
  template <typename... Args>
  Status Error(uint64_t offset, fmt::format_string<Args...> f, Args&&... args) const {
    return MakeAt(ErrorCode::kInvalidModel, offset, fmt::format(f, std::forward<Args>(args)...));
  }
  Status MakeAt(ErrorCode code, uint64_t offset, std::string message) const;
  // Charges `bytes` of decoded structure against object_budget.
  Status Charge(uint64_t offset, uint64_t bytes);
  // Adds the current path to an error from the wire layer.
  Status Wrap(Status status) const;
};

// Enters a nested message: extends the path and counts depth. Check() fails
// once the depth passes max_message_depth; the scope still pops on exit.
class Scope {
 public:
  Scope(ReadContext& ctx, std::string_view name, int64_t index = -1);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  Status Check(uint64_t offset) const;

 private:
  ReadContext& ctx_;
};

// ---- Field helpers: each checks the wire type and names `name` on error ----

Status ExpectWireType(const ReadContext& ctx, const wire::Field& f, wire::WireType type, std::string_view name);
Status ReadString(const ReadContext& ctx, const wire::Field& f, std::string_view name, std::string* out);
Status ReadInt64(const ReadContext& ctx, const wire::Field& f, std::string_view name, int64_t* out);
Status ReadInt32(const ReadContext& ctx, const wire::Field& f, std::string_view name, int32_t* out);
Status ReadFloat(const ReadContext& ctx, const wire::Field& f, std::string_view name, float* out);

// Repeated scalars, accepted packed or unpacked (both are legal protobuf).
// `max_size` bounds the total; growth is also bounded by the bytes present
// because every element costs at least one byte.
Status AppendInt64s(const ReadContext& ctx, const wire::Field& f, std::string_view name, uint64_t max_size,
                    std::vector<int64_t>* out);
Status AppendFloats(const ReadContext& ctx, const wire::Field& f, std::string_view name, std::vector<float>* out);
Status AppendString(ReadContext& ctx, const wire::Field& f, std::string_view name,
                    std::vector<std::string>* out);

// Refuses growing a repeated field past limits.max_repeated.
Status CheckRepeated(const ReadContext& ctx, const wire::Field& f, std::string_view name, size_t current_size);

// Reads one element of a repeated message field: checks wire type and limits,
// enters a scope "name[i]", appends a T and calls read(ctx, payload, &item).
template <typename T, typename ReadFn>
Status ReadRepeatedMessage(ReadContext& ctx, const wire::Field& f, std::string_view name, std::vector<T>* out,
                           ReadFn read) {
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, wire::WireType::kLen, name));
  VIGIL_RETURN_IF_ERROR(CheckRepeated(ctx, f, name, out->size()));
  VIGIL_RETURN_IF_ERROR(ctx.Charge(f.offset, sizeof(T)));
  Scope scope(ctx, name, static_cast<int64_t>(out->size()));
  VIGIL_RETURN_IF_ERROR(scope.Check(f.offset));
  T& item = out->emplace_back();
  return read(ctx, f.payload, &item);
}

// Reads a singular message field into *out in scope "name".
template <typename T, typename ReadFn>
Status ReadMessage(ReadContext& ctx, const wire::Field& f, std::string_view name, T* out, ReadFn read) {
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, wire::WireType::kLen, name));
  Scope scope(ctx, name);
  VIGIL_RETURN_IF_ERROR(scope.Check(f.offset));
  return read(ctx, f.payload, out);
}

// "[64,3,7,7]"
std::string DimsToString(const std::vector<int64_t>& dims);

}  // namespace vigil::onnx
