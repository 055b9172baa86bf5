#include "runtime/value_file.h"

#include <new>
#include <vector>

#include "base/mapped_file.h"
#include "onnx/wire.h"
#include "runtime/tensor_file.h"

namespace vigil::runtime {
namespace {

using Kind = ir::TypeInfo::Kind;

Result<Tensor> ParseTensor(std::span<const uint8_t> bytes, const std::string& path,
                           const std::shared_ptr<const void>& owner) {
  VIGIL_ASSIGN_OR_RETURN(TensorFile f, ParseTensorProtoBytes(bytes, path, owner));
  return std::move(f.tensor);
}

// SequenceProto: elem_type = 2, tensor_values = 3; sparse_tensor_values = 4,
// sequence_values = 5, map_values = 6 and optional_values = 7 are refused.
Result<Tensor> ParseSequence(std::span<const uint8_t> bytes, const std::string& path, const ir::TypeInfo& declared,
                             const std::shared_ptr<const void>& owner) {
  std::vector<Tensor> items;
  onnx::wire::FieldReader r(bytes, 0);
  while (!r.done()) {
    onnx::wire::Field f;
    VIGIL_RETURN_IF_ERROR(r.Next(&f).WithContext(fmt::format("reading the SequenceProto '{}'", path)));
    if (f.number >= 4 && f.number <= 7) {
      return UnsupportedError("'{}' is a sequence of sparse tensors, sequences, maps or optionals; vigil reads "
                              "sequences of tensors only",
                              path);
    }
    if (f.number != 3) continue;
    if (f.type != onnx::wire::WireType::kLen) return InvalidInputError("'{}': a tensor_values field is not a message", path);
    VIGIL_ASSIGN_OR_RETURN(Tensor t, ParseTensor(f.payload, path, owner));
    if (!items.empty() && t.dtype() != items.front().dtype()) {
      return InvalidInputError("'{}': the sequence holds {} and {}; a sequence's tensors share one dtype", path,
                               items.front().Describe(), t.Describe());
    }
    items.push_back(std::move(t));
  }
  ir::DataType dtype = items.empty() ? ir::DataType::kUndefined : items.front().dtype();
  if (items.empty() && declared.inner) dtype = declared.inner->elem_type;
  return Tensor::Sequence(dtype, std::move(items));
}

// OptionalProto: tensor_value = 3, sequence_value = 5; none of them: no value.
Result<Tensor> ParseOptional(std::span<const uint8_t> bytes, const std::string& path, const ir::TypeInfo& declared,
                             const std::shared_ptr<const void>& owner) {
  Tensor value = Tensor::EmptyOptional();
  onnx::wire::FieldReader r(bytes, 0);
  while (!r.done()) {
    onnx::wire::Field f;
    VIGIL_RETURN_IF_ERROR(r.Next(&f).WithContext(fmt::format("reading the OptionalProto '{}'", path)));
    if (f.number == 4 || f.number == 6 || f.number == 7) {
      return UnsupportedError("'{}' is an optional sparse tensor, map or optional; vigil reads optional tensors and "
                              "sequences only",
                              path);
    }
    if ((f.number == 3 || f.number == 5) && f.type != onnx::wire::WireType::kLen) {
      return InvalidInputError("'{}': field {} is not a message", path, f.number);
    }
    if (f.number == 3) {
      VIGIL_ASSIGN_OR_RETURN(value, ParseTensor(f.payload, path, owner));
    } else if (f.number == 5) {
      ir::TypeInfo seq = declared.inner ? *declared.inner : ir::TypeInfo();
      VIGIL_ASSIGN_OR_RETURN(value, ParseSequence(f.payload, path, seq, owner));
    }
  }
  return value;
}

}  // namespace

Result<Tensor> ParseValueProtoBytes(std::span<const uint8_t> bytes, const std::string& display_path,
                                    const ir::TypeInfo& declared, std::shared_ptr<const void> owner) {
  try {
    if (declared.kind == Kind::kSequence) return ParseSequence(bytes, display_path, declared, owner);
    if (declared.kind == Kind::kOptional) return ParseOptional(bytes, display_path, declared, owner);
    return ParseTensor(bytes, display_path, owner);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory", display_path);
  }
}

Result<Tensor> ReadValueProto(const std::string& path, const ir::TypeInfo& declared) {
  Result<std::shared_ptr<const MappedFile>> file = MappedFile::Open(path);
  if (!file.ok()) return std::move(file).TakeStatus().WithContext("cannot read value file");
  std::shared_ptr<const MappedFile> f = std::move(file).value();
  return ParseValueProtoBytes(f->bytes(), path, declared, f);
}

}  // namespace vigil::runtime
