// GPU tests: run one node on the CUDA backend (no fallback) and on the CPU
// reference with the same inputs, and compare. Every test starts with
// VIGIL_SKIP_WITHOUT_CUDA(), which skips with the reason where no GPU or
// module is usable (CI), so the suite still builds and runs everywhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_test_util.h"
#include "backends/module/backend_module.h"
#include "vigil/float16.h"
#include "ops/shape_helpers.h"
#include "runtime/session.h"
#include "runtime/tensor_compare.h"

namespace vigil::cuda::testing {

// Turns a developer switch (base/dev_switch.h) off for the scope, and
// restores what the variable was after, also when an assertion returns
// early.
class ScopedSwitchOff {
 public:
  explicit ScopedSwitchOff(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
    setenv(name, "0", 1);
  }
  ~ScopedSwitchOff() {
    if (old_) {
      setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  ScopedSwitchOff(const ScopedSwitchOff&) = delete;
  ScopedSwitchOff& operator=(const ScopedSwitchOff&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// The CUDA backend, loaded once per test program; null (with the reason in
// `why`) where it cannot run.
inline std::shared_ptr<const runtime::Backend> CudaBackendForTests(std::string* why = nullptr) {
  static std::string reason;
  static std::shared_ptr<const runtime::Backend> backend = [] {
    auto loaded = backends::LoadCudaBackend({});
    if (!loaded.ok()) {
      reason = loaded.status().summary();
      return std::shared_ptr<const runtime::Backend>();
    }
    return loaded->backend;
  }();
  if (why) *why = reason;
  return backend;
}

// How float32 products, attention and convolutions run: the tests' default
// (allow_tf32x3 on: three TF32 products of split operands; convolutions on
// CUDA cores), CUDA cores only (allow_tf32x3 off), TF32 allowed (one TF32
// product), or the default plus tf32x3_convolutions (convolutions split
// too). One backend of each per program.
enum class Way { kTf32x3, kFfma, kTf32, kTf32x3Convs };

inline std::shared_ptr<const runtime::Backend> Backend(Way way) {
  auto load = [](bool tf32x3, bool tf32, bool convs) -> std::shared_ptr<const runtime::Backend> {
    backends::CudaBackendOptions o;
    o.allow_tf32x3 = tf32x3;
    o.allow_tf32 = tf32;
    o.tf32x3_convolutions = convs;
    auto loaded = backends::LoadCudaBackend(o);
    return loaded.ok() ? loaded->backend : nullptr;
  };
  static std::shared_ptr<const runtime::Backend> ffma = load(false, false, false), tf32 = load(true, true, false),
                                                 convs = load(true, false, true);
  switch (way) {
    case Way::kTf32x3: return CudaBackendForTests();
    case Way::kFfma: return ffma;
    case Way::kTf32: return tf32;
    case Way::kTf32x3Convs: return convs;
  }
  return nullptr;
}

#define VIGIL_SKIP_WITHOUT_CUDA()                                                  \
  do {                                                                             \
    std::string vigil_why_;                                                        \
    if (!::vigil::cuda::testing::CudaBackendForTests(&vigil_why_)) {               \
      GTEST_SKIP() << "no usable CUDA backend: " << vigil_why_;                    \
    }                                                                              \
  } while (0)

struct NodeCase {
  std::string op;
  int64_t opset = 17;
  std::vector<ir::Attribute> attributes;
  std::vector<runtime::Tensor> inputs;  // host tensors; Tensor() = omitted optional input
  std::vector<bool> constant;           // per input: an initializer (host-read inputs should be)
  size_t outputs = 1;
};

// A NodeCase in one expression (one output).
inline NodeCase MakeCase(std::string op, std::vector<runtime::Tensor> inputs, std::vector<ir::Attribute> attrs,
                         int64_t opset, std::vector<bool> constant = {}) {
  NodeCase c;
  c.op = std::move(op);
  c.opset = opset;
  c.attributes = std::move(attrs);
  c.inputs = std::move(inputs);
  c.constant = std::move(constant);
  return c;
}

// Uniform values in [lo, hi) of a float or integer dtype (bool: 0/1).
inline runtime::Tensor RandomTensor(ir::DataType dtype, std::vector<int64_t> shape, uint32_t seed, float lo = -1,
                                    float hi = 1) {
  runtime::Tensor t = runtime::Tensor::Allocate(dtype, std::move(shape)).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  uint64_t n = t.element_count();
  for (uint64_t i = 0; i < n; ++i) {
    float v = u(rng);
    switch (dtype) {
      case ir::DataType::kFloat32: t.data<float>()[i] = v; break;
      case ir::DataType::kFloat16: t.data<uint16_t>()[i] = FloatToFloat16(v); break;
      case ir::DataType::kBfloat16: t.data<uint16_t>()[i] = FloatToBfloat16(v); break;
      case ir::DataType::kFloat64: t.data<double>()[i] = v; break;
      case ir::DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(std::clamp(std::floor(v), -128.f, 127.f)); break;
      case ir::DataType::kUint8: t.data<uint8_t>()[i] = static_cast<uint8_t>(std::clamp(std::floor(v), 0.f, 255.f)); break;
      case ir::DataType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(v)); break;
      case ir::DataType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(v)); break;
      case ir::DataType::kBool: t.data<uint8_t>()[i] = v > (lo + hi) / 2 ? 1 : 0; break;
      default: ADD_FAILURE() << "RandomTensor: unsupported dtype"; return t;
    }
  }
  return t;
}

// The one-node model of `c`: non-constant inputs are graph inputs named
// x0, x1, ...; outputs y0, y1, ...
inline ir::Model OneNodeModel(const NodeCase& c) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", c.opset}};
  ir::Node node;
  node.op_type = c.op;
  node.name = c.op + "_under_test";
  node.attributes = c.attributes;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const runtime::Tensor& t = c.inputs[i];
    if (t.dtype() == ir::DataType::kUndefined) {
      node.inputs.push_back("");
      continue;
    }
    std::string name = "x" + std::to_string(i);
    node.inputs.push_back(name);
    if (i < c.constant.size() && c.constant[i]) {
      m.graph.initializers.push_back(t.AsConstant(name));
    } else {
      ir::ValueInfo vi;
      vi.name = name;
      vi.has_type = true;
      vi.type = ops::TensorType(t.dtype(), t.shape());
      m.graph.inputs.push_back(vi);
    }
  }
  for (size_t i = 0; i < c.outputs; ++i) {
    node.outputs.push_back("y" + std::to_string(i));
    ir::ValueInfo vi;
    vi.name = node.outputs.back();
    m.graph.outputs.push_back(vi);
  }
  m.graph.nodes.push_back(node);
  return m;
}

inline std::vector<runtime::InputBinding> Bindings(const NodeCase& c) {
  std::vector<runtime::InputBinding> b;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const runtime::Tensor& t = c.inputs[i];
    if (t.dtype() == ir::DataType::kUndefined || (i < c.constant.size() && c.constant[i])) continue;
    b.push_back({"x" + std::to_string(i), t.dtype(), t.shape(), t.raw_data(), t.byte_size(), ""});
  }
  return b;
}

// Runs `c` on the backends (in order of preference, no fallback) and returns
// the outputs, or fails the test.
inline std::vector<runtime::NamedTensor> RunOn(const NodeCase& c,
                                               std::vector<std::shared_ptr<const runtime::Backend>> backends,
                                               bool no_fallback) {
  runtime::SessionOptions options;
  options.backends = std::move(backends);
  options.no_fallback = no_fallback;
  options.constant_folding = false;  // the node must run, not be folded at load
  auto session = runtime::Session::Create(OneNodeModel(c), options);
  if (!session.ok()) {
    ADD_FAILURE() << c.op << ": " << session.status().ToString();
    return {};
  }
  auto out = (*session)->Run(Bindings(c));
  if (!out.ok()) {
    ADD_FAILURE() << c.op << ": " << out.status().ToString();
    return {};
  }
  return std::move(out).value();
}

// CUDA vs CPU: same dtypes and shapes, NaN only where the CPU has NaN,
// relative L2 error <= tol for float outputs, exact equality otherwise.
inline void ExpectCudaMatchesCpu(const NodeCase& c, double tol) {
  auto cuda = CudaBackendForTests();
  ASSERT_TRUE(cuda) << "call VIGIL_SKIP_WITHOUT_CUDA() first";
  auto got = RunOn(c, {cuda, cpu::MakeCpuBackend()}, /*no_fallback=*/true);
  auto want = RunOn(c, {cpu::MakeCpuBackend()}, false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const runtime::Tensor& g = got[i].tensor;
    const runtime::Tensor& w = want[i].tensor;
    bool is_float = w.dtype() == ir::DataType::kFloat32 || w.dtype() == ir::DataType::kFloat16 ||
                    w.dtype() == ir::DataType::kBfloat16 || w.dtype() == ir::DataType::kFloat64;
    // Element-wise with an infinite tolerance still checks dtype, shape and
    // NaN placement; the error itself is judged by relative L2 below.
    runtime::TensorComparison cmp = runtime::CompareTensors(w, g, is_float ? 1e300 : 0, is_float ? 1e300 : 0);
    EXPECT_TRUE(cmp.same_dtype && cmp.same_shape) << c.op << " output " << i << ": got " << g.Describe()
                                                  << ", expected " << w.Describe();
    EXPECT_EQ(cmp.nan_mismatches, 0u) << c.op << " output " << i << ": " << cmp.Describe();
    if (is_float) {
      EXPECT_LE(cmp.rel_l2_error, tol) << c.op << " output " << i << " (" << w.Describe() << "): " << cmp.Describe();
    } else {
      EXPECT_EQ(cmp.mismatches, 0u) << c.op << " output " << i << ": " << cmp.Describe();
    }
  }
}

// Device outputs filled with all-ones bytes first: NaN in float32, float16
// and bfloat16, so that an element a kernel does not write cannot pass.
class PoisonedDeviceOutputs : public runtime::OutputAllocator {
 public:
  explicit PoisonedDeviceOutputs(const runtime::Backend& backend) : backend_(backend) {}
  Result<runtime::Tensor> Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) override {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor host, runtime::Tensor::Allocate(dtype, std::move(shape)));
    std::memset(host.raw_data(), 0xFF, host.byte_size());
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor device, backend_.ToDevice(host));
    VIGIL_RETURN_IF_ERROR(backend_.Synchronize());  // `host` goes away on return
    return device;
  }

 private:
  const runtime::Backend& backend_;
};

// Runs `node` (of `opset`) on `backend` directly: `host` copied to the
// device, outputs poisoned first; output 0 back on the host.
inline Result<runtime::Tensor> RunNodeFromHost(const runtime::Backend& backend, const ir::Node& node, int64_t opset,
                                               const std::vector<const runtime::Tensor*>& host) {
  std::vector<runtime::Tensor> device;
  for (const runtime::Tensor* t : host) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor d, backend.ToDevice(*t));
    device.push_back(std::move(d));
  }
  VIGIL_RETURN_IF_ERROR(backend.Synchronize());
  std::vector<const runtime::Tensor*> inputs;
  for (const runtime::Tensor& d : device) inputs.push_back(&d);
  std::vector<runtime::Tensor> outputs;
  PoisonedDeviceOutputs allocator(backend);
  VIGIL_RETURN_IF_ERROR(backend.Run(node, opset, inputs, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend.Synchronize());
  if (outputs.empty()) return InternalError("{} wrote no output", node.op_type);
  return backend.ToHost(outputs[0]);
}

}  // namespace vigil::cuda::testing
