// Writes ir::Model as an ONNX file: our own encoder of the protobuf wire
// format, the counterpart of the reader (same onnx.proto field numbers). Used
// to write models and subgraphs that vigil builds or cuts out of others.
//
// Every tensor is written with its bytes inside the file: fixed-size dtypes
// as raw_data (external-data tensors included, read from their mapping),
// strings as string_data. Repeated numbers (dims, ints, floats) are packed.
// Fields the reader does not keep (quantization annotations, training info,
// metadata_props of nodes and graphs, opaque types) are not written.
#pragma once

#include <string>

#include "base/status.h"
#include "ir/graph.h"

namespace vigil::onnx {

// Serializes `model` as an onnx.ModelProto. Refuses (InvalidInput) what
// cannot be written faithfully: a tensor with an undefined or unknown dtype,
// negative dims, or element bytes (or strings) that do not match its dims —
// notably an external-data tensor whose data was not loaded — as well as
// graphs or types nested deeper than 1000 levels (or cyclic).
Result<std::string> WriteModelToBytes(const ir::Model& model);

// WriteModelToBytes, then writes the bytes to `path` (replacing it).
// Errors writing the file are Environment errors.
Status WriteModel(const ir::Model& model, const std::string& path);

}  // namespace vigil::onnx
