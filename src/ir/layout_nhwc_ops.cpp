#include "ir/layout_nhwc_ops.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "ir/layout_nhwc.h"

namespace vigil::ir {

int64_t NhwcAxisOf(int64_t a) {
  // kToNhwc lists, for each NHWC axis, the NCHW axis it holds.
  for (int64_t j = 0; j < 4; ++j) {
    if (kToNhwc[static_cast<size_t>(j)] == a) return j;
  }
  return a;
}

namespace {

// `v` as an axis of a 4-D tensor (negative from the end), or -1.
int64_t Axis4(int64_t v) {
  if (v < 0) v += 4;
  return v >= 0 && v < 4 ? v : -1;
}

}  // namespace

std::optional<NhwcLayoutOp> NhwcLayoutOpFor(const Node& n, int64_t opset, const std::vector<std::string>& enabled) {
  if (!(n.domain.empty() || n.domain == "ai.onnx") || n.outputs.size() != 1 || n.outputs[0].empty()) {
    return std::nullopt;
  }
  if (std::find(enabled.begin(), enabled.end(), n.op_type) == enabled.end()) return std::nullopt;
  NhwcLayoutOp op;
  if (n.op_type == "Concat") {
    if (n.inputs.empty()) return std::nullopt;
    const Attribute* axis = n.FindAttribute("axis");
    // Concat-1 defaults to axis 1; from opset 4 the attribute is required.
    if (axis ? axis->type != AttributeType::kInt || Axis4(axis->i) < 0 : opset >= 4) return std::nullopt;
    for (size_t k = 0; k < n.inputs.size(); ++k) op.data_inputs.push_back(k);
    op.takes_nchw_inputs = true;
    return op;
  }
  if (n.op_type != "Resize" || opset < 10 || n.inputs.empty() || n.inputs[0].empty()) return std::nullopt;
  op.data_inputs = {0};
  if (const Attribute* axes = n.FindAttribute("axes")) {
    if (opset < 18 || axes->type != AttributeType::kInts) return std::nullopt;
    for (int64_t a : axes->ints) {
      if (Axis4(a) < 0) return std::nullopt;
    }
    return op;  // roi, scales and sizes follow the axes' order, which stays
  }
  if (opset < 11) {
    op.axis_inputs = {1};  // Resize-10: X, scales
  } else {
    op.axis_inputs = {1, 2, 3};  // X, roi, scales, sizes
  }
  return op;
}

void RewriteAxesToNhwc(Node& n) {
  for (Attribute& a : n.attributes) {
    if (n.op_type == "Concat" && a.name == "axis") a.i = NhwcAxisOf(Axis4(a.i));
    if (n.op_type == "Resize" && a.name == "axes") {
      for (int64_t& v : a.ints) v = NhwcAxisOf(Axis4(v));
    }
  }
  if (n.op_type == "Concat" && !n.FindAttribute("axis")) n.attributes.push_back(IntAttribute("axis", NhwcAxisOf(1)));
}

std::optional<Tensor> PermuteAxisValues(const Tensor& t, std::string name) {
  std::optional<uint64_t> count = t.ElementCount();
  if (t.dims.size() != 1 || !count || (*count != 4 && *count != 8) || !t.HasDenseBytes() ||
      DataTypeBits(t.dtype) % 8 != 0) {
    return std::nullopt;
  }
  const size_t size = static_cast<size_t>(DataTypeBits(t.dtype) / 8);
  if (t.bytes.size() != *count * size) return std::nullopt;
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[t.bytes.size()]);
  // Each run of 4 (roi has two: starts and ends) in NHWC order.
  for (uint64_t half = 0; half < *count / 4; ++half) {
    for (size_t j = 0; j < 4; ++j) {
      std::memcpy(owned.get() + (half * 4 + j) * size, t.bytes.data() + (half * 4 + kToNhwc[j]) * size, size);
    }
  }
  Tensor out;
  out.name = std::move(name);
  out.dtype = t.dtype;
  out.dims = t.dims;
  out.storage = Tensor::Storage::kTypedDecoded;
  out.bytes = {owned.get(), t.bytes.size()};
  out.keep_alive = std::shared_ptr<const void>(owned, owned.get());
  return out;
}

}  // namespace vigil::ir
