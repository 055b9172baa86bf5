#include "runtime/conv_layout.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "base/dev_switch.h"
#include "ir/fuse_qdq.h"
#include "ops/attributes.h"
#include "ops/shape_helpers.h"

namespace vigil::runtime {
namespace {

bool IsDefaultDomain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

const ir::TypeInfo* TypeOf(const std::unordered_map<std::string, ir::TypeInfo>& types, const std::string& name) {
  auto it = types.find(name);
  return name.empty() || it == types.end() ? nullptr : &it->second;
}

// NCHW (or OIHW) type -> NHWC (OHWI), for a known rank 4.
ir::TypeInfo ToNhwcType(const ir::TypeInfo& t) {
  const auto& d = t.shape.dims;
  return ops::TensorType(t.elem_type, std::vector<ir::Dim>{d[0], d[2], d[3], d[1]});
}

bool IsRank4Tensor(const ir::TypeInfo* t) {
  return t && t->kind == ir::TypeInfo::Kind::kTensor && t->shape.rank_known && t->shape.dims.size() == 4;
}

const ir::Tensor* FindInitializer(const ir::Graph& g, const std::string& name) {
  for (const ir::ValueInfo& vi : g.inputs) {
    if (vi.name == name) return nullptr;  // overridable at run time: not a constant
  }
  for (const ir::Tensor& t : g.initializers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// What DeviceTakesNhwc asks the device: whether it prefers the ConvNhwc
// (Backend::PrefersChannelsLast), or only whether it runs it at all
// (Backend::SupportsTyped).
enum class Ask { kPrefers, kRuns };

// Whether `device` takes `conv` as a ConvNhwc (with `activation`, if set,
// a residual input Z of Y's type when `residual`, and `input_activation`, if set).
bool DeviceTakesNhwc(const ir::Node& conv, const std::unordered_map<std::string, ir::TypeInfo>& types,
                     const Backend& device, const std::string& activation, bool residual = false,
                     const std::string& input_activation = "", Ask ask = Ask::kPrefers) {
  const ir::TypeInfo* x = TypeOf(types, conv.inputs[0]);
  const ir::TypeInfo* w = TypeOf(types, conv.inputs[1]);
  const ir::TypeInfo* y = TypeOf(types, conv.outputs[0]);
  if (!IsRank4Tensor(x) || !IsRank4Tensor(w)) return false;
  ir::Node probe = conv;
  probe.domain = ir::kVigilDomain;
  probe.op_type = ir::kConvNhwcOp;
  if (!activation.empty()) {
    ir::Attribute a;
    a.name = "activation";
    a.type = ir::AttributeType::kString;
    a.s = activation;
    probe.attributes.push_back(std::move(a));
  }
  if (!input_activation.empty()) {
    ir::Attribute a;
    a.name = ir::kConvNhwcInputActivation;
    a.type = ir::AttributeType::kString;
    a.s = input_activation;
    probe.attributes.push_back(std::move(a));
  }
  ir::TypeInfo xt = ToNhwcType(*x), wt = ToNhwcType(*w);
  std::optional<ir::TypeInfo> yt;
  if (IsRank4Tensor(y)) yt = ToNhwcType(*y);
  NodeTypes nt;
  nt.inputs = {&xt, &wt};
  if (conv.inputs.size() > 2) nt.inputs.push_back(TypeOf(types, conv.inputs[2]));
  if (residual) {
    if (!yt) return false;
    probe.inputs.resize(3);
    probe.inputs.push_back(probe.outputs[0] + "/residual");
    nt.inputs.resize(3, nullptr);
    nt.inputs.push_back(&*yt);
  }
  nt.outputs = {yt ? &*yt : nullptr};
  if (ask == Ask::kRuns) return device.SupportsTyped(probe, ir::kVigilOpsetVersion, nt, nullptr);
  return device.PrefersChannelsLast(probe, ir::kVigilOpsetVersion, nt);
}

// The multiply-adds of one image (batch index) of `conv`: Y's dims past the
// batch times W's past the first; 0 where one of them is unknown.
double MacsPerImage(const ir::Node& conv, const std::unordered_map<std::string, ir::TypeInfo>& types) {
  const ir::TypeInfo* w = TypeOf(types, conv.inputs[1]);
  const ir::TypeInfo* y = TypeOf(types, conv.outputs[0]);
  if (!IsRank4Tensor(w) || !IsRank4Tensor(y)) return 0;
  double macs = 1;
  for (size_t i = 1; i < 4; ++i) {
    const ir::Dim& yd = y->shape.dims[i];
    const ir::Dim& wd = w->shape.dims[i];
    if (!yd.is_known() || !wd.is_known()) return 0;
    macs *= double(*yd.value) * double(*wd.value);
  }
  return macs;
}

// Whether `conv` (with `group` groups) is a depthwise convolution with
// channel multiplier 1: group == C == M, W [M, 1, kH, kW], with C and M
// known (per `types`). VIGIL_DEPTHWISE=cudnn keeps them NCHW on cuDNN, as
// before the CUDA backend had its own kernel, to measure the difference.
bool IsDepthwise(const ir::Node& conv, const std::unordered_map<std::string, ir::TypeInfo>& types, int64_t group) {
  if (const char* v = std::getenv("VIGIL_DEPTHWISE"); v != nullptr && std::string_view(v) == "cudnn") return false;
  const ir::TypeInfo* x = TypeOf(types, conv.inputs[0]);
  const ir::TypeInfo* w = TypeOf(types, conv.inputs[1]);
  if (!IsRank4Tensor(x) || !IsRank4Tensor(w)) return false;
  const ir::Dim& c = x->shape.dims[1];
  const ir::Dim& m = w->shape.dims[0];
  const ir::Dim& per_group = w->shape.dims[1];
  return group > 1 && c.value == group && m.value == group && per_group.value == 1;
}

// Whether the pass may move ReLU6/Relu onto depthwise inputs
// (NhwcOptions::depthwise_input_activation): `device` takes the first
// depthwise convolution among `convs` with input_activation Relu6 and Relu,
// and VIGIL_RELU6_PROLOGUE is not "0" (which turns it off, to measure it).
bool DepthwiseInputActivation(const ir::Model& model, const std::vector<size_t>& convs,
                              const std::unordered_map<std::string, ir::TypeInfo>& types, const Backend& device) {
  if (!DevSwitchOn("VIGIL_RELU6_PROLOGUE")) return false;
  for (size_t i : convs) {
    const ir::Node& n = model.graph.nodes[i];
    auto group = ops::IntAttr(n, "group", 1);
    if (!group.ok() || *group == 1 || !IsDepthwise(n, types, *group)) continue;
    return DeviceTakesNhwc(n, types, device, "", false, ir::kConvNhwcRelu6) &&
           DeviceTakesNhwc(n, types, device, "", false, ir::kConvNhwcRelu);
  }
  return false;
}

// The ONNX pools `device` runs channels-last (as ai.vigil.*PoolNhwc), probed
// with an X of `x_nchw`'s dtype and dims moved to NHWC.
std::vector<std::string> DeviceNhwcPools(const ir::TypeInfo& x_nchw, const Backend& device) {
  const std::pair<const char*, const char*> kPools[] = {{"MaxPool", ir::kMaxPoolNhwcOp},
                                                        {"AveragePool", ir::kAveragePoolNhwcOp},
                                                        {"GlobalAveragePool", ir::kGlobalAveragePoolNhwcOp}};
  const ir::TypeInfo x = ToNhwcType(x_nchw);
  std::vector<std::string> pools;
  for (const auto& [onnx_op, nhwc_op] : kPools) {
    ir::Node probe;
    probe.domain = ir::kVigilDomain;
    probe.op_type = nhwc_op;
    probe.inputs = {"x"};
    probe.outputs = {"y"};
    NodeTypes nt;
    nt.inputs = {&x};
    nt.outputs = {nullptr};
    if (device.PrefersChannelsLast(probe, ir::kVigilOpsetVersion, nt)) pools.push_back(onnx_op);
  }
  return pools;
}

// The default-domain ops (Concat, Resize) that `device` runs at least as
// well on channels-last data, probed with operands of `x_nchw`'s dtype and
// dims moved to NHWC (a bilinear 2x Resize by scales; a Concat of two along
// channels). They then follow the NHWC region (NhwcOptions::nhwc_layout_ops).
std::vector<std::string> DeviceNhwcLayoutOps(const ir::TypeInfo& x_nchw, const Backend& device, int64_t opset) {
  const ir::TypeInfo x = ToNhwcType(x_nchw);
  const ir::TypeInfo scales = ops::TensorType(ir::DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Known(4)});
  std::vector<std::string> found;
  ir::Node concat;
  concat.op_type = "Concat";
  concat.inputs = {"a", "b"};
  concat.outputs = {"y"};
  concat.attributes.push_back(ir::IntAttribute("axis", 3));
  if (device.PrefersChannelsLast(concat, opset, NodeTypes{{&x, &x}, {nullptr}})) found.push_back("Concat");
  ir::Node resize;
  resize.op_type = "Resize";
  resize.outputs = {"y"};
  resize.attributes.push_back(ir::StringAttribute("mode", "linear"));
  NodeTypes rt;
  if (opset >= 11) {
    resize.inputs = {"x", "", "scales"};
    rt = NodeTypes{{&x, nullptr, &scales}, {nullptr}};
  } else {
    resize.inputs = {"x", "scales"};
    rt = NodeTypes{{&x, &scales}, {nullptr}};
  }
  if (opset >= 10 && device.PrefersChannelsLast(resize, opset, rt)) found.push_back("Resize");
  return found;
}

}  // namespace

bool DeviceTakesFusedQdq(const ir::Node& fused, const std::vector<const ir::TypeInfo*>& inputs,
                         const std::vector<const ir::TypeInfo*>& outputs, const Backend& device,
                         const ir::Model& model, std::string* why_not) {
  NodeTypes nt{inputs, outputs};
  if (fused.domain != ir::kVigilDomain) {
    return device.SupportsTyped(fused, model.OpsetVersion(fused.domain), nt, why_not);
  }
  if (fused.op_type != ir::kQConvOp) return device.SupportsTyped(fused, ir::kVigilOpsetVersion, nt, why_not);
  ir::Node probe = fused;
  probe.op_type = ir::kQConvNhwcOp;
  std::optional<ir::TypeInfo> x, w, y;
  if (inputs.size() > 1 && IsRank4Tensor(inputs[0]) && IsRank4Tensor(inputs[1])) {
    x = ToNhwcType(*inputs[0]);
    w = ToNhwcType(*inputs[1]);
    nt.inputs[0] = &*x;
    nt.inputs[1] = &*w;
  }
  if (!outputs.empty() && IsRank4Tensor(outputs[0])) {
    y = ToNhwcType(*outputs[0]);
    nt.outputs[0] = &*y;
  }
  return device.SupportsTyped(probe, ir::kVigilOpsetVersion, nt, why_not);
}

// Whether X of `conv` has a dtype that SelectNhwcConvs moves channels-last.
bool NhwcDtype(const ir::Node& conv, const std::unordered_map<std::string, ir::TypeInfo>& types, bool float32) {
  const ir::TypeInfo* x = TypeOf(types, conv.inputs[0]);
  if (!x) return false;
  return x->elem_type == ir::DataType::kFloat16 || x->elem_type == ir::DataType::kBfloat16 ||
         (float32 && x->elem_type == ir::DataType::kFloat32);
}

std::vector<size_t> SelectNhwcConvs(const ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                                    const Backend& device, bool float32, std::string* note) {
  std::vector<size_t> picked;
  // A device's float32 convolutions: the ones it runs as ConvNhwc, and the
  // multiply-adds per image of those and of the ones it prefers so.
  std::vector<size_t> float32_runs;
  double float32_macs = 0, preferred_macs = 0;
  const bool device_float32 = float32 && device.device() != Device::kHost;
  const ir::Graph& g = model.graph;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    if (n.op_type == ir::kQConvOp && n.domain == ir::kVigilDomain) {
      picked.push_back(i);
      continue;
    }
    if (n.op_type != "Conv" || !IsDefaultDomain(n.domain) || n.inputs.size() < 2 || n.outputs.size() != 1 ||
        n.inputs[0].empty() || n.inputs[1].empty() || n.outputs[0].empty()) {
      continue;
    }
    // Weights are transposed once, at load; a computed W would need a transpose every run.
    if (!FindInitializer(g, n.inputs[1])) continue;
    // Grouped convolutions stay NCHW: with cuDNN 9.14 on an H100 their NHWC
    // fp16 engines were slower, MobileNetV2 batch 64 going from 3.97 to
    // 8.84 ms with them converted (bench/results/). Depthwise ones are the
    // exception: the CUDA backend runs them channels-last with its own
    // kernel (backends/cuda/conv_depthwise.h), which keeps a MobileNet body
    // NHWC from end to end, with no transposes around them.
    auto group = ops::IntAttr(n, "group", 1);
    if (!group.ok() || (*group != 1 && !IsDepthwise(n, types, *group))) continue;
    if (!NhwcDtype(n, types, float32)) continue;
    const ir::TypeInfo* x = TypeOf(types, n.inputs[0]);
    if (device_float32 && x && x->elem_type == ir::DataType::kFloat32) {
      if (!DeviceTakesNhwc(n, types, device, "", false, "", Ask::kRuns)) continue;
      float32_runs.push_back(i);
      const double macs = MacsPerImage(n, types);
      float32_macs += macs;
      if (DeviceTakesNhwc(n, types, device, "")) preferred_macs += macs;
      continue;
    }
    if (DeviceTakesNhwc(n, types, device, "")) picked.push_back(i);
  }
  // A device's float32 convolutions move together: one left NCHW among
  // NHWC ones costs a transpose on each side. They move when the ones the
  // device prefers channels-last (the CUDA backend: all but the exact
  // float32 ones that cuDNN keeps, GemmConvPays) carry at least half of
  // their multiply-adds, as far as the shapes are known; else all stay as
  // the model has them. A UNet's full-resolution 3x3 convolutions run
  // faster NCHW on cuDNN's exact engines than channels-last, where cuDNN
  // wraps transposes around them; a ResNet-50's products win.
  if (!float32_runs.empty()) {
    const bool move = !(float32_macs > 0) || preferred_macs >= 0.5 * float32_macs;
    if (move) picked.insert(picked.end(), float32_runs.begin(), float32_runs.end());
    std::sort(picked.begin(), picked.end());
    if (note) {
      const double share = float32_macs > 0 ? 100.0 * preferred_macs / float32_macs : 100.0;
      *note = move ? fmt::format("{} float32 convolutions run channels-last ({} prefers it for {:.0f}% of their "
                                 "multiply-adds)",
                                 float32_runs.size(), device.name(), share)
                   : fmt::format("{} float32 convolutions stay NCHW: {} prefers channels-last for {:.0f}% of their "
                                 "multiply-adds, under half",
                                 float32_runs.size(), device.name(), share);
    }
  }
  return picked;
}

Result<bool> ApplyConvLayout(ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                             ConvLayout layout, const Backend& first_backend, bool float32, std::string* note) {
  if (layout == ConvLayout::kAsModel) return false;
  std::vector<size_t> convs = SelectNhwcConvs(model, types, first_backend, float32, note);
  if (convs.empty()) return false;
  ir::NhwcOptions options;
  // The device fuses a following Relu, Clip(0, 6) or Add only where its
  // kernel says it can (probed on the first float convolution; QConv
  // carries its own activation).
  size_t first_index = convs[0];
  for (size_t i : convs) {
    if (model.graph.nodes[i].op_type == "Conv") {
      first_index = i;
      break;
    }
  }
  const ir::Node& first = model.graph.nodes[first_index];
  options.fuse_relu = DeviceTakesNhwc(first, types, first_backend, ir::kConvNhwcRelu);
  options.fuse_relu6 = DeviceTakesNhwc(first, types, first_backend, ir::kConvNhwcRelu6);
  options.fuse_residual = DeviceTakesNhwc(first, types, first_backend, "", /*residual=*/true);
  options.depthwise_input_activation = DepthwiseInputActivation(model, convs, types, first_backend);
  // Pools inside the NHWC region follow where the device can run them;
  // VIGIL_POOL_NHWC=0 keeps them NCHW (for before/after measurements).
  const bool pools_follow = DevSwitchOn("VIGIL_POOL_NHWC");
  if (const ir::TypeInfo* x = TypeOf(types, first.inputs[0]); pools_follow && IsRank4Tensor(x)) {
    options.nhwc_pools = DeviceNhwcPools(*x, first_backend);
  }
  // So do Concats and Resizes (a UNet's decoder); VIGIL_LAYOUT_OPS_NHWC=0
  // keeps them NCHW.
  if (const ir::TypeInfo* x = TypeOf(types, first.inputs[0]); DevSwitchOn("VIGIL_LAYOUT_OPS_NHWC") && IsRank4Tensor(x)) {
    options.nhwc_layout_ops = DeviceNhwcLayoutOps(*x, first_backend, model.OpsetVersion(""));
  }
  VIGIL_ASSIGN_OR_RETURN(ir::NhwcStats stats, ir::ConvertConvsToNhwc(model, convs, types, options));
  return stats.convs > 0;
}

}  // namespace vigil::runtime
