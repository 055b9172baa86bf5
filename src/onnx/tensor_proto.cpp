// Standalone TensorProto files. Reading reuses ReadTensor (read_tensor.cpp),
// so a .pb input gets exactly the checks an initializer gets; only the error
// code changes, because here the tensor is the user's input, not the model.
#include "onnx/tensor_proto.h"

#include <new>

#include "onnx/readers.h"

namespace vigil::onnx {
namespace {

// TensorProto field numbers (onnx.proto).
constexpr uint32_t kDims = 1, kDataType = 2, kName = 8, kRawData = 9;

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutTag(std::string& out, uint32_t field, uint32_t wire_type) { PutVarint(out, (uint64_t{field} << 3) | wire_type); }

void PutBytes(std::string& out, uint32_t field, std::string_view bytes) {
  PutTag(out, field, 2);
  PutVarint(out, bytes.size());
  out.append(bytes);
}

Status AsInputError(Status s, const std::string& display_name) {
  Diagnosis& d = s.diagnosis();
  if (d.code == ErrorCode::kInvalidModel) d.code = ErrorCode::kInvalidInput;
  s.WithContext(fmt::format("cannot read tensor file '{}'", display_name)).WithFact("file", display_name);
  if (d.code == ErrorCode::kInvalidInput && d.fixes.empty()) {
    s.WithCause("the file is truncated, corrupted or not a serialized onnx.TensorProto");
    s.WithFix("write it again, e.g. with onnx.numpy_helper.from_array(x).SerializeToString()");
  }
  return s;
}

Result<ir::Tensor> ReadGuarded(std::span<const uint8_t> bytes, const std::string& display_name,
                               std::shared_ptr<const void> owner, const ReadLimits& limits) {
  ReadContext ctx;
  ctx.limits = limits;
  ctx.file = bytes;
  ctx.owner = std::move(owner);
  ctx.object_budget = (uint64_t{64} << 20) + 16 * static_cast<uint64_t>(bytes.size());
  ir::Tensor tensor;
  Status s;
  {
    Scope scope(ctx, "tensor");
    s = ReadTensor(ctx, bytes, &tensor);
  }
  if (!s.ok()) return AsInputError(std::move(s), display_name);
  if (tensor.storage == ir::Tensor::Storage::kExternal) {
    Status e = UnsupportedError("cannot read tensor file '{}': its data is in an external file ('{}')",
                                display_name, tensor.external_location);
    e.WithFact("file", display_name).WithFix("save the tensor with its data inside (raw_data)");
    return e;
  }
  return tensor;
}

}  // namespace

Result<ir::Tensor> ReadTensorProtoBytes(std::span<const uint8_t> bytes, const std::string& display_name,
                                        std::shared_ptr<const void> owner, const ReadLimits& limits) {
  try {
    return ReadGuarded(bytes, display_name, std::move(owner), limits);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read tensor file '{}': out of memory while decoding ({} bytes)", display_name,
                            bytes.size());
  } catch (const std::exception& e) {
    return InternalError("cannot read tensor file '{}': {}", display_name, e.what());
  }
}

std::string EncodeTensorProto(const std::string& name, ir::DataType dtype, const std::vector<int64_t>& dims,
                              std::span<const uint8_t> raw_data) {
  std::string out;
  if (!dims.empty()) {
    std::string packed;
    for (int64_t d : dims) PutVarint(packed, static_cast<uint64_t>(d));
    PutBytes(out, kDims, packed);
  }
  PutTag(out, kDataType, 0);
  PutVarint(out, static_cast<uint64_t>(static_cast<int32_t>(dtype)));
  if (!name.empty()) PutBytes(out, kName, name);
  PutBytes(out, kRawData, std::string_view(reinterpret_cast<const char*>(raw_data.data()), raw_data.size()));
  return out;
}

}  // namespace vigil::onnx
