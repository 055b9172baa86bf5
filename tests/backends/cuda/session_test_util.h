// GPU tests that run whole models through sessions: typed graph values,
// random constants, the one-ConvNhwc-node model, running a model whose one
// input is "x", and sessions on the bundled example CNN (tiny_cnn.onnx).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "ir/layout_nhwc.h"
#include "onnx/reader.h"

namespace vigil::cuda::testing {

using cpu::testing::IntAttr;
using cpu::testing::IntsAttr;
using cpu::testing::StringAttr;

constexpr ir::DataType kF32 = ir::DataType::kFloat32;
constexpr ir::DataType kF16 = ir::DataType::kFloat16;
constexpr ir::DataType kBF16 = ir::DataType::kBfloat16;

// The relative L2 error a convolution on the GPU may have against the CPU
// reference in dtype t.
inline double ConvTolerance(ir::DataType t) { return t == kF32 ? 1e-5 : 1e-2; }

// A graph value `name` of dtype t and shape dims.
inline ir::ValueInfo TypedValue(std::string name, ir::DataType t, std::vector<int64_t> dims) {
  ir::ValueInfo vi;
  vi.name = std::move(name);
  vi.has_type = true;
  vi.type = ops::TensorType(t, dims);
  return vi;
}

// An initializer `name` of uniform values in [-0.5, 0.5) (seeded).
inline ir::Tensor RandomConstant(std::string name, ir::DataType t, std::vector<int64_t> dims, uint32_t seed) {
  return RandomTensor(t, std::move(dims), seed, -0.5f, 0.5f).AsConstant(std::move(name));
}

// One ConvNhwc node "conv_nhwc": x a graph input [N,H,W,C]; w [M,kH,kW,C/g],
// b and z (each where not null) constants; output "y".
inline ir::Model ConvNhwcModel(const runtime::Tensor& x, const runtime::Tensor& w, const runtime::Tensor* b,
                               std::vector<ir::Attribute> attrs, const runtime::Tensor* z = nullptr) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}, {ir::kVigilDomain, ir::kVigilOpsetVersion}};
  m.graph.inputs = {TypedValue("x", x.dtype(), x.shape())};
  m.graph.initializers = {w.AsConstant("w")};
  ir::Node n;
  n.name = "conv_nhwc";
  n.domain = ir::kVigilDomain;
  n.op_type = ir::kConvNhwcOp;
  n.inputs = {"x", "w"};
  if (b) {
    m.graph.initializers.push_back(b->AsConstant("b"));
    n.inputs.push_back("b");
  }
  if (z) {
    m.graph.initializers.push_back(z->AsConstant("z"));
    n.inputs.resize(3);  // B or the empty name
    n.inputs.push_back("z");
  }
  n.outputs = {"y"};
  n.attributes = std::move(attrs);
  m.graph.nodes = {n};
  m.graph.outputs = {ir::ValueInfo{"y", false, {}, {}}};
  return m;
}

// Runs `model` (one input, "x") in a session made with `options`; the
// outputs, or none after failing the test. `placement` (where not null) gets
// "node on backend" per node.
inline std::vector<runtime::NamedTensor> RunWithX(const ir::Model& model, const runtime::SessionOptions& options,
                                                  const runtime::Tensor& x,
                                                  std::vector<std::string>* placement = nullptr) {
  auto session = runtime::Session::Create(model, options);
  if (!session.ok()) {
    ADD_FAILURE() << session.status().ToString();
    return {};
  }
  if (placement) {
    for (const runtime::NodePlacement& p : (*session)->placement()) placement->push_back(p.node + " on " + p.backend);
  }
  auto out = (*session)->Run({{"x", x.dtype(), x.shape(), x.raw_data(), x.byte_size(), ""}});
  if (!out.ok()) {
    ADD_FAILURE() << out.status().ToString();
    return {};
  }
  return std::move(out).value();
}

// Runs `model` (one input "x", one output) on `backends` with no fallback;
// the output, or an empty tensor after failing the test. `placement` as in
// RunWithX.
inline runtime::Tensor RunSingleOutput(const ir::Model& model,
                                       std::vector<std::shared_ptr<const runtime::Backend>> backends,
                                       const runtime::Tensor& x, std::vector<std::string>* placement = nullptr) {
  runtime::SessionOptions options;
  options.backends = std::move(backends);
  options.no_fallback = true;
  std::vector<runtime::NamedTensor> out = RunWithX(model, options, x, placement);
  if (out.size() != 1) {
    ADD_FAILURE() << "expected one output, got " << out.size();
    return {};
  }
  return std::move(out[0].tensor);
}

// Runs `model` on backends `b` (in order of preference, with fallback) with
// constant folding and the given conv layout; as RunWithX.
inline std::vector<runtime::NamedTensor> RunWithLayout(const ir::Model& model,
                                                       std::vector<std::shared_ptr<const runtime::Backend>> b,
                                                       const runtime::Tensor& x,
                                                       runtime::ConvLayout layout = runtime::ConvLayout::kAsModel,
                                                       std::vector<std::string>* placement = nullptr) {
  runtime::SessionOptions options;
  options.backends = std::move(b);
  options.constant_folding = true;
  options.conv_layout = layout;
  return RunWithX(model, options, x, placement);
}

// Runs `m`, one ConvNhwc node "conv_nhwc", on a CUDA backend freshly loaded
// with `cuda` (the CPU beside it), expects it placed on CUDA and its output
// within `tolerance` (relative L2, no NaN mismatch) of `want`; returns the
// backend, whose notes say what its first run measured or compiled (null
// after failing the test).
inline std::shared_ptr<const runtime::Backend> CheckConvNhwcOnFreshBackend(const ir::Model& m,
                                                                         const runtime::Tensor& x,
                                                                         const runtime::Tensor& want,
                                                                         const backends::CudaBackendOptions& cuda,
                                                                         double tolerance) {
  auto loaded = backends::LoadCudaBackend(cuda);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return nullptr;
  std::vector<std::string> placement;
  auto got = RunWithLayout(m, {loaded->backend, cpu::MakeCpuBackend()}, x, runtime::ConvLayout::kAsModel,
                           &placement);
  EXPECT_EQ(placement, std::vector<std::string>{"ConvNhwc 'conv_nhwc' on cuda"});
  EXPECT_EQ(got.size(), 1u);
  if (got.size() != 1) return loaded->backend;
  runtime::TensorComparison cmp = runtime::CompareTensors(want, got[0].tensor, 1e300, 1e300);
  EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << cmp.Describe();
  EXPECT_EQ(cmp.nan_mismatches, 0u) << cmp.Describe();
  EXPECT_LE(cmp.rel_l2_error, tolerance) << cmp.Describe();
  return loaded->backend;
}

inline const char* const kTinyCnnModel = VIGIL_SOURCE_DIR "/examples/tiny_cnn.onnx";

// A session on tiny_cnn.onnx with the CUDA backend (loaded with `cuda`) and
// the CPU, no fallback; null after failing the test.
inline std::unique_ptr<runtime::Session> TinyCnnSession(const backends::CudaBackendOptions& cuda,
                                                        bool device_graphs = false) {
  auto loaded = backends::LoadCudaBackend(cuda);
  EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
  if (!loaded.ok()) return nullptr;
  auto model = onnx::ReadModel(kTinyCnnModel);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  if (!model.ok()) return nullptr;
  runtime::SessionOptions options;
  options.backends = {loaded->backend, cpu::MakeCpuBackend()};
  options.no_fallback = true;
  options.device_graphs = device_graphs;
  auto session = runtime::Session::Create(std::move(model).value(), options);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  return session.ok() ? std::move(session).value() : nullptr;
}

// tiny_cnn.onnx's input binding for host tensor x.
inline std::vector<runtime::InputBinding> TinyCnnInput(const runtime::Tensor& x) {
  return {{"image", x.dtype(), x.shape(), x.raw_data(), x.byte_size(), ""}};
}

// tiny_cnn.onnx's output for x on the CPU backend (the reference), or an
// empty tensor after failing the test.
inline runtime::Tensor TinyCnnCpuReference(const runtime::Tensor& x) {
  auto model = onnx::ReadModel(kTinyCnnModel);
  if (!model.ok()) {
    ADD_FAILURE() << model.status().ToString();
    return {};
  }
  runtime::SessionOptions options;
  options.backends = {cpu::MakeCpuBackend()};
  auto session = runtime::Session::Create(std::move(model).value(), options);
  if (!session.ok()) {
    ADD_FAILURE() << session.status().ToString();
    return {};
  }
  auto out = (*session)->Run(TinyCnnInput(x));
  if (!out.ok() || out->empty()) {
    ADD_FAILURE() << out.status().ToString();
    return {};
  }
  return std::move((*out)[0].tensor);
}

}  // namespace vigil::cuda::testing
