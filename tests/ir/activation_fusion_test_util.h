// What the activation-fusion tests (fuse_silu_test.cpp,
// fuse_hardswish_test.cpp) share: a fused graph checked and counted, and a
// model's single output run on the CPU's reference or optimised kernels.
#pragma once

#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "runtime/session.h"
#include "vigil/float16.h"
#include "graph_builder.h"

namespace vigil::ir::testing {

inline size_t CountOps(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

// Runs `pass` (a FuseX(Model&) -> Result<size_t>) on m, which must stay a
// valid model; the number it fused.
template <typename Pass>
size_t FuseAndValidate(Model& m, Pass pass) {
  auto n = pass(m);
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  Status valid = ValidateModel(m);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
  return n.ok() ? *n : 0;
}

// n floats drawn from [lo, hi) (RandomFloats with `seed`), with NaN, +-inf,
// +-big, +-1e-40 (subnormal) and -0 placed among them.
inline std::vector<float> FloatsWithSpecials(size_t n, uint32_t seed, float lo, float hi, float big) {
  std::vector<float> x = RandomFloats(n, seed, lo, hi);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), big, -big, 1e-40f, -1e-40f, -0.0f};
  for (size_t i = 0; i < std::size(specials) && i * 997 < n; ++i) x[i * 997] = specials[i];
  return x;
}

// The bytes of m's output for input "x" = `x` (rounded to float16 when t
// is float16) of `shape`, on the CPU's reference or optimised kernels.
inline std::vector<uint8_t> RunXOnCpu(const Model& m, DataType t, const std::vector<int64_t>& shape,
                                      const std::vector<float>& x, bool reference) {
  runtime::SessionOptions o;
  o.backends.push_back(cpu::MakeCpuBackend(cpu::CpuOptions{1, reference}));
  auto s = runtime::Session::Create(m, std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  std::vector<uint16_t> half(x.size());
  for (size_t i = 0; i < x.size(); ++i) half[i] = FloatToFloat16(x[i]);
  const void* data = t == DataType::kFloat32 ? static_cast<const void*>(x.data()) : half.data();
  const size_t bytes = x.size() * (t == DataType::kFloat32 ? 4 : 2);
  auto out = (*s)->Run({{"x", t, shape, data, bytes, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const runtime::Tensor& y = (*out)[0].tensor;
  const auto* p = static_cast<const uint8_t*>(y.raw_data());
  return std::vector<uint8_t>(p, p + y.byte_size());
}

}  // namespace vigil::ir::testing
