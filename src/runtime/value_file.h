// ONNX's SequenceProto and OptionalProto (.pb), the files ONNX's test data
// sets hold for sequence and optional values. A .pb file does not say which
// message it holds: the caller passes the type the model declares.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "ir/types.h"
#include "runtime/tensor.h"

namespace vigil::runtime {

// A tensor (TensorProto), a sequence of tensors (SequenceProto) or an
// optional tensor or sequence (OptionalProto; one without a value reads as
// Tensor::EmptyOptional()), as `declared` says. Sequences of sequences, maps
// and sparse tensors are refused as unsupported.
Result<Tensor> ReadValueProto(const std::string& path, const ir::TypeInfo& declared);
Result<Tensor> ParseValueProtoBytes(std::span<const uint8_t> bytes, const std::string& display_path,
                                    const ir::TypeInfo& declared, std::shared_ptr<const void> owner);

}  // namespace vigil::runtime
