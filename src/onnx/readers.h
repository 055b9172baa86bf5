// The ONNX message readers (internal to src/onnx). Each parses one message
// body — `bytes` is the payload of the field that holds it, inside
// ctx.file — into its IR counterpart. Callers enter a Scope for the field
// first, so errors name the path.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "ir/graph.h"
#include "onnx/read_context.h"

namespace vigil::onnx {

using Bytes = std::span<const uint8_t>;

// read_tensor.cpp
Status ReadTensor(ReadContext& ctx, Bytes bytes, ir::Tensor* out);
Status ReadSparseTensor(ReadContext& ctx, Bytes bytes, ir::SparseTensor* out);

// read_type.cpp
Status ReadTypeProto(ReadContext& ctx, Bytes bytes, ir::TypeInfo* out);
Status ReadValueInfo(ReadContext& ctx, Bytes bytes, ir::ValueInfo* out);

// read_graph.cpp
Status ReadGraph(ReadContext& ctx, Bytes bytes, ir::Graph* out);
// Subgraph holders (attribute g / graphs) allocate the graph.
Status ReadSharedGraph(ReadContext& ctx, Bytes bytes, std::shared_ptr<ir::Graph>* out);
Status ReadNode(ReadContext& ctx, Bytes bytes, ir::Node* out);
Status ReadAttribute(ReadContext& ctx, Bytes bytes, ir::Attribute* out);

// reader.cpp
Status ReadOpsetImport(ReadContext& ctx, Bytes bytes, ir::OpsetImport* out);
Status ReadStringEntry(ReadContext& ctx, Bytes bytes, std::pair<std::string, std::string>* out);

}  // namespace vigil::onnx
