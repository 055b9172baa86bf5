// Helpers shared by the attention fusion's tests (fuse_attention_test.cpp,
// fuse_attention_projected_test.cpp): sessions with a fake device backend
// (CPU kernels on "device" tensors, so the session runs the device passes)
// or CPU only, node counts, the relative L2 error, and a model prepared as
// the pass sees it in a device session.
#pragma once

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/validate.h"
#include "runtime/fake_device_backend.h"
#include "runtime/session.h"
#include "runtime/type_inference.h"

namespace vigil::runtime::attention_test {

inline SessionOptions Options(bool device) {
  SessionOptions o;
  if (device) o.backends.push_back(std::make_shared<testing::FakeDeviceBackend>());
  o.backends.push_back(cpu::MakeCpuBackend());
  return o;
}

inline std::unique_ptr<Session> MakeSession(ir::Model m, bool device) {
  auto s = Session::Create(std::move(m), Options(device));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

inline size_t Count(const ir::Model& m, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

// Relative L2 error of got against want; NaN anywhere (or nothing to
// compare) gives infinity.
inline double RelL2(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  const double err = got.empty() || std::isnan(diff) || norm == 0 ? INFINITY : std::sqrt(diff / norm);
  std::printf("relative L2 %.3g over %zu values\n", err, got.size());
  return err;
}

// The model as the pass sees it in a device session, with its inferred types.
struct Prepared {
  ir::Model model;
  std::unordered_map<std::string, ir::TypeInfo> types;
};

inline Prepared Prepare(const ir::Model& edited) {
  Prepared p{edited, {}};
  auto order = ir::TopologicalOrder(p.model.graph);
  EXPECT_TRUE(order.ok()) << order.status().ToString();
  if (!order.ok()) return p;
  auto inferred = InferGraph(p.model, *order, {}, FoldingPolicy{});
  EXPECT_TRUE(inferred.ok()) << inferred.status().ToString();
  if (inferred.ok()) p.types = std::move(inferred->types);
  return p;
}

}  // namespace vigil::runtime::attention_test
