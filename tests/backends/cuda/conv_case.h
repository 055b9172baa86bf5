// One 2D convolution node with random operands and a float64 reference at
// chosen output elements, run node by node on a CUDA backend with its
// output poisoned with NaN first: the cases of conv_tf32x3_test.cpp and
// conv_gemm_test.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"
#include "ir/fuse_conv_epilogue.h"
#include "ir/layout_nhwc.h"
#include "runtime/tensor_compare.h"  // ElementAsDouble

namespace vigil::cuda::testing {

// A convolution of X [N, C, H, W] by W [M, C, kH, kW] (logical dims; stored
// channels-last when `nhwc`): `op` is "Conv", ai.vigil.FusedConv or
// ai.vigil.ConvNhwc; square stride and dilation, symmetric padding, and an
// optional bias, residual Z and activation ("", "Relu", "Relu6").
struct ConvSpec {
  const char* op = "Conv";
  bool nhwc = false;
  std::vector<int64_t> x = {}, w = {};
  int64_t stride = 1, pad = 0, dilation = 1;
  bool bias = false, residual = false;
  std::string act = {};
  uint32_t seed = 1;
  ir::DataType dtype = ir::DataType::kFloat32;  // of X, W, the bias and Z
  // The output images with a reference (all when empty), and every
  // `every`-th of their elements.
  std::vector<int64_t> images = {};
  int64_t every = 1;
};

struct ConvCase {
  std::string label;
  ir::Node node;
  std::vector<runtime::Tensor> inputs;
  std::vector<int64_t> checked;  // flat output indices with a reference
  std::vector<double> want;
};

inline double At(const runtime::Tensor& t, int64_t i) {
  return runtime::ElementAsDouble(t, static_cast<uint64_t>(i));
}

inline ConvCase MakeConvCase(const ConvSpec& c) {
  const int64_t n = c.x[0], ch_in = c.x[1], h = c.x[2], w = c.x[3], m = c.w[0], kh = c.w[2], kw = c.w[3];
  const int64_t oh = (h + 2 * c.pad - c.dilation * (kh - 1) - 1) / c.stride + 1;
  const int64_t ow = (w + 2 * c.pad - c.dilation * (kw - 1) - 1) / c.stride + 1;
  ConvCase k;
  k.label = fmt::format("{} {} {} x[{}] w[{}] stride {} pad {} dilation {}{}{}{}{}", c.op, ir::DataTypeName(c.dtype),
                        c.nhwc ? "NHWC" : "NCHW",
                        fmt::join(c.x, ","), fmt::join(c.w, ","), c.stride, c.pad, c.dilation, c.bias ? " +bias" : "",
                        c.residual ? " +z" : "", c.act.empty() ? "" : " ", c.act);
  auto stored = [&](const std::vector<int64_t>& d) {
    return c.nhwc ? std::vector<int64_t>{d[0], d[2], d[3], d[1]} : d;
  };
  runtime::Tensor x = RandomTensor(c.dtype, stored(c.x), c.seed);
  runtime::Tensor wt = RandomTensor(c.dtype, stored(c.w), c.seed + 1);
  runtime::Tensor b = RandomTensor(c.dtype, {m}, c.seed + 2);
  runtime::Tensor z = RandomTensor(c.dtype, stored({n, m, oh, ow}), c.seed + 3);
  auto xi = [&](int64_t i, int64_t ch, int64_t y, int64_t xx) {
    return c.nhwc ? ((i * h + y) * w + xx) * ch_in + ch : ((i * ch_in + ch) * h + y) * w + xx;
  };
  auto wi = [&](int64_t o, int64_t ch, int64_t y, int64_t xx) {
    return c.nhwc ? ((o * kh + y) * kw + xx) * ch_in + ch : ((o * ch_in + ch) * kh + y) * kw + xx;
  };
  auto yi = [&](int64_t i, int64_t o, int64_t y, int64_t xx) {
    return c.nhwc ? ((i * oh + y) * ow + xx) * m + o : ((i * m + o) * oh + y) * ow + xx;
  };
  std::vector<int64_t> images = c.images;
  if (images.empty()) {
    for (int64_t i = 0; i < n; ++i) images.push_back(i);
  }
  int64_t counter = 0;
  for (int64_t i : images) {
    for (int64_t o = 0; o < m; ++o) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xx = 0; xx < ow; ++xx) {
          if (counter++ % c.every != 0) continue;
          double acc = 0;
          for (int64_t ch = 0; ch < ch_in; ++ch) {
            for (int64_t r = 0; r < kh; ++r) {
              const int64_t iy = y * c.stride - c.pad + r * c.dilation;
              if (iy < 0 || iy >= h) continue;
              for (int64_t s = 0; s < kw; ++s) {
                const int64_t ix = xx * c.stride - c.pad + s * c.dilation;
                if (ix < 0 || ix >= w) continue;
                acc += At(x, xi(i, ch, iy, ix)) * At(wt, wi(o, ch, r, s));
              }
            }
          }
          if (c.bias) acc += At(b, o);
          if (c.residual) acc += At(z, yi(i, o, y, xx));
          if (!c.act.empty()) acc = std::max(acc, 0.0);
          if (c.act == "Relu6") acc = std::min(acc, 6.0);
          k.checked.push_back(yi(i, o, y, xx));
          k.want.push_back(acc);
        }
      }
    }
  }
  std::vector<ir::Attribute> attrs = {cpu::testing::IntsAttr("strides", {c.stride, c.stride}),
                                      cpu::testing::IntsAttr("pads", {c.pad, c.pad, c.pad, c.pad}),
                                      cpu::testing::IntsAttr("dilations", {c.dilation, c.dilation})};
  if (!c.act.empty()) attrs.push_back(cpu::testing::StringAttr("activation", c.act));
  std::vector<std::string> names = {"x", "w"};
  k.inputs = {std::move(x), std::move(wt)};
  if (c.bias || c.residual) {
    names.push_back(c.bias ? "b" : "");
    k.inputs.push_back(std::move(b));
  }
  if (c.residual) {
    names.push_back("z");
    k.inputs.push_back(std::move(z));
  }
  k.node = cpu::testing::MakeNode(c.op, names, {"y"}, attrs);
  if (std::string(c.op) != "Conv") k.node.domain = ir::kVigilDomain;
  return k;
}

// Runs the case's node on `backend` (inputs copied to the device; an input
// with an empty name is passed as absent) and returns its output on the
// host, poisoned with NaN before the run.
inline Result<runtime::Tensor> RunConvCase(const runtime::Backend& backend, const ConvCase& k) {
  std::vector<runtime::Tensor> device;
  for (const runtime::Tensor& h : k.inputs) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor d, backend.ToDevice(h));
    device.push_back(std::move(d));
  }
  std::vector<const runtime::Tensor*> inputs;
  for (size_t i = 0; i < device.size(); ++i) inputs.push_back(k.node.inputs[i].empty() ? nullptr : &device[i]);
  std::vector<runtime::Tensor> outputs;
  PoisonedDeviceOutputs allocator(backend);
  VIGIL_RETURN_IF_ERROR(backend.Run(k.node, 13, inputs, outputs, allocator));
  VIGIL_RETURN_IF_ERROR(backend.Synchronize());
  if (outputs.size() != 1) return InternalError("{} outputs", outputs.size());
  return backend.ToHost(outputs[0]);
}

// The case's output on `backend` with the developer switch `name` as the
// environment has it (on) and switched off: which route ran shows in the
// bits. Null, with the test failed, where either run fails.
struct SwitchedRuns {
  runtime::Tensor on, off;
  bool same_bits() const {
    return on.byte_size() == off.byte_size() && std::memcmp(on.raw_data(), off.raw_data(), on.byte_size()) == 0;
  }
};

inline std::optional<SwitchedRuns> RunConvCaseBothWays(const runtime::Backend& backend, const ConvCase& k,
                                                       const char* name) {
  Result<runtime::Tensor> on = RunConvCase(backend, k);
  Result<runtime::Tensor> off = [&] {
    ScopedSwitchOff switched(name);  // read on every run
    return RunConvCase(backend, k);
  }();
  EXPECT_TRUE(on.ok()) << k.label << ": " << on.status().ToString();
  EXPECT_TRUE(off.ok()) << k.label << " with " << name << "=0: " << off.status().ToString();
  if (!on.ok() || !off.ok()) return std::nullopt;
  return SwitchedRuns{std::move(on).value(), std::move(off).value()};
}

// The relative L2 of `y` against the reference at the checked elements; a
// checked element that is not finite fails the test.
inline double ConvCaseRelL2(const runtime::Tensor& y, const ConvCase& k) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < k.checked.size(); ++i) {
    const double g = At(y, k.checked[i]);
    EXPECT_TRUE(std::isfinite(g)) << k.label << ": element " << k.checked[i] << " is " << g;
    err += (g - k.want[i]) * (g - k.want[i]);
    norm += k.want[i] * k.want[i];
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

}  // namespace vigil::cuda::testing
