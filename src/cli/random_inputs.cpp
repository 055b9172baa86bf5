#include "cli/random_inputs.h"

#include <random>

#include "vigil/float16.h"

namespace vigil::cli {
namespace {

// A tensor of `type`'s fixed shape filled from `rng`; `what` names it in
// messages ("input 'x'").
Result<runtime::Tensor> Fill(const std::string& what, const std::string& name, const ir::TypeInfo& type,
                             std::mt19937& rng) {
  if (type.kind != ir::TypeInfo::Kind::kTensor || !type.shape.rank_known) {
    return InvalidInputError("{} has no fixed rank, so its values cannot be made up", what)
        .WithFix(fmt::format("give it with --input {}=FILE (.npy or .pb)", name));
  }
  std::vector<int64_t> shape;
  for (const ir::Dim& d : type.shape.dims) {
    if (!d.value) {
      return InvalidInputError("{} has the shape {}, with a dim that is not fixed, so its values cannot be "
                               "made up",
                               what, ir::TypeToString(type))
          .WithFix(fmt::format("give every input with --input NAME=FILE (e.g. --input {}=x.npy)", name));
    }
    shape.push_back(*d.value);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Allocate(type.elem_type, shape));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const uint64_t n = t.element_count();
  auto fill = [&](auto* data, auto make) {
    for (uint64_t i = 0; i < n; ++i) data[i] = make();
  };
  auto small_int = [&] { return static_cast<int>(rng() % 10); };
  switch (type.elem_type) {
    case ir::DataType::kFloat32: fill(t.data<float>(), [&] { return static_cast<float>(uniform(rng)); }); break;
    case ir::DataType::kFloat64: fill(t.data<double>(), [&] { return uniform(rng); }); break;
    case ir::DataType::kFloat16:
      fill(t.data<uint16_t>(), [&] { return FloatToFloat16(static_cast<float>(uniform(rng))); });
      break;
    case ir::DataType::kBfloat16:
      fill(t.data<uint16_t>(), [&] { return FloatToBfloat16(static_cast<float>(uniform(rng))); });
      break;
    case ir::DataType::kInt8: fill(t.data<int8_t>(), [&] { return static_cast<int8_t>(small_int()); }); break;
    case ir::DataType::kInt16: fill(t.data<int16_t>(), [&] { return static_cast<int16_t>(small_int()); }); break;
    case ir::DataType::kInt32: fill(t.data<int32_t>(), [&] { return static_cast<int32_t>(small_int()); }); break;
    case ir::DataType::kInt64: fill(t.data<int64_t>(), [&] { return static_cast<int64_t>(small_int()); }); break;
    case ir::DataType::kUint8: fill(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(small_int()); }); break;
    case ir::DataType::kUint16: fill(t.data<uint16_t>(), [&] { return static_cast<uint16_t>(small_int()); }); break;
    case ir::DataType::kUint32: fill(t.data<uint32_t>(), [&] { return static_cast<uint32_t>(small_int()); }); break;
    case ir::DataType::kUint64: fill(t.data<uint64_t>(), [&] { return static_cast<uint64_t>(small_int()); }); break;
    case ir::DataType::kBool: fill(t.data<uint8_t>(), [&] { return static_cast<uint8_t>(rng() % 2); }); break;
    default:
      return UnsupportedError("cannot make up values for {} of dtype {}", what, ir::DataTypeName(type.elem_type))
          .WithFix(fmt::format("give it with --input {}=FILE", name));
  }
  return t;
}

}  // namespace

Result<InputFiles> GenerateRandomInputs(const runtime::ModelInputs& inputs) {
  InputFiles files;
  std::mt19937 rng(1234);
  files.tensors.reserve(inputs.required.size());  // bindings point into it
  for (const ir::ValueInfo& vi : inputs.required) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, Fill(fmt::format("input '{}'", vi.name), vi.name, vi.type, rng));
    runtime::Tensor& kept = files.tensors.emplace_back(std::move(t));
    files.bindings.push_back({vi.name, kept.dtype(), kept.shape(), kept.raw_data(), kept.byte_size(), "random"});
  }
  return files;
}

Result<runtime::Tensor> RandomTensor(const std::string& name, const ir::TypeInfo& type, uint32_t seed) {
  std::mt19937 rng(seed);
  return Fill(fmt::format("value '{}'", name), name, type, rng);
}

}  // namespace vigil::cli
