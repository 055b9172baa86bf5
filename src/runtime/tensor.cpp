#include "runtime/tensor.h"

#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace vigil::runtime {

std::optional<uint64_t> ElementCount(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    uint64_t u = static_cast<uint64_t>(d);
    if (u != 0 && n > std::numeric_limits<uint64_t>::max() / u) return std::nullopt;
    n *= u;
  }
  return n;
}

Result<Tensor> Tensor::Allocate(ir::DataType dtype, std::vector<int64_t> shape) {
  auto count = ElementCount(shape);
  if (!count) return InvalidInputError("cannot allocate a tensor of shape with a negative or overflowing dim");
  auto bytes = ir::DataTypeStorageBytes(dtype, *count);
  if (!bytes) {
    return UnsupportedError("cannot allocate a tensor of dtype {}", ir::DataTypeName(dtype));
  }
  // Refuse absurd sizes before asking the allocator (garbage shapes from a
  // bad model give sizes like 4.5e18 bytes).
  if (*bytes > (uint64_t{1} << 46)) {
    return OutOfMemoryError("a tensor of {} elements of {} ({} bytes) is too large to allocate", *count,
                            ir::DataTypeName(dtype), *bytes);
  }
  size_t size = static_cast<size_t>(*bytes);
  size_t rounded = (size + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) {
    return OutOfMemoryError("cannot allocate {} bytes for a {} tensor", size, ir::DataTypeName(dtype));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = p;
  t.storage_ = std::shared_ptr<const void>(p, [](const void* q) { std::free(const_cast<void*>(q)); });
  return t;
}

Tensor Tensor::View(ir::DataType dtype, std::vector<int64_t> shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::Shared(ir::DataType dtype, std::vector<int64_t> shape, void* data,
                      std::shared_ptr<const void> owner) {
  Tensor t = View(dtype, std::move(shape), data);
  t.storage_ = std::move(owner);
  return t;
}

Tensor Tensor::OnDevice(Device device, ir::DataType dtype, std::vector<int64_t> shape, void* data,
                        std::shared_ptr<const void> owner) {
  Tensor t = Shared(dtype, std::move(shape), data, std::move(owner));
  t.device_ = device;
  return t;
}

Tensor Tensor::FromConstant(const ir::Tensor& c) {
  Tensor t = Shared(c.dtype, c.dims, const_cast<uint8_t*>(c.bytes.data()), c.keep_alive);
  t.constant_ = true;
  return t;
}

Tensor Tensor::Sequence(ir::DataType elem_type, std::vector<Tensor> items) {
  Tensor t;
  t.kind_ = Kind::kSequence;
  t.elem_type_ = elem_type;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::EmptyOptional() {
  Tensor t;
  t.kind_ = Kind::kEmptyOptional;
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return items_ ? *items_ : kNone;
}

uint64_t Tensor::element_count() const { return kind_ == Kind::kDense ? ElementCount(shape_).value_or(0) : 0; }

size_t Tensor::byte_size() const {
  return static_cast<size_t>(ir::DataTypeStorageBytes(dtype_, element_count()).value_or(0));
}

ir::Tensor Tensor::AsConstant(std::string name) const {
  ir::Tensor c;
  c.name = std::move(name);
  c.dtype = dtype_;
  c.dims = shape_;
  c.storage = ir::Tensor::Storage::kTypedDecoded;
  c.bytes = bytes();
  c.keep_alive = storage_;
  return c;
}

std::string Tensor::Describe() const {
  if (kind_ == Kind::kSequence) return fmt::format("seq({})[{}]", ir::DataTypeName(elem_type_), items().size());
  if (kind_ == Kind::kEmptyOptional) return "optional(none)";
  std::string s = fmt::format("{}[", ir::DataTypeName(dtype_));
  for (size_t i = 0; i < shape_.size(); ++i) s += fmt::format("{}{}", i ? "," : "", shape_[i]);
  return s + (device_ == Device::kCuda ? "]@cuda" : "]");
}

}  // namespace vigil::runtime
