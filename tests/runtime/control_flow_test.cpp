// If, Loop and Scan on the CPU backend: bodies that read values of enclosing
// graphs (two levels up), loop-carried values, scan outputs, early exit,
// reversed scans, and the errors for malformed nodes. Expected values are
// computed here in double.
#include <cmath>
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "backends/cpu/cpu_backend.h"
#include "runtime/session.h"
#include "fake_device_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

SessionOptions CpuOnly() {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  return o;
}

ir::Attribute GraphAttr(std::string name, ir::Graph g) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(g));
  return a;
}

ir::Graph Body(std::string name, std::vector<ir::ValueInfo> inputs, std::vector<ir::Node> nodes,
               std::vector<ir::ValueInfo> outputs) {
  ir::Graph g;
  g.name = std::move(name);
  g.inputs = std::move(inputs);
  g.nodes = std::move(nodes);
  g.outputs = std::move(outputs);
  return g;
}

ir::Model ModelOf(ir::Graph g, int64_t opset = 17) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", opset}};
  m.graph = std::move(g);
  return m;
}

template <typename T>
InputBinding Bind(std::string name, DataType dtype, const std::vector<T>& data, std::vector<int64_t> shape) {
  return {std::move(name), dtype, std::move(shape), data.data(), data.size() * sizeof(T), ""};
}

// y = If(c, then: h + x, else: x - h), h = x * x computed outside the If and
// read only inside its branches.
ir::Model IfModel() {
  ir::Graph then_g = Body("then", {}, {MakeNode("Add", {"h", "x"}, {"t"}, "then_add")},
                          {TensorValue("t", DataType::kFloat32, {5})});
  ir::Graph else_g = Body("else", {}, {MakeNode("Sub", {"x", "h"}, {"e"}, "else_sub")},
                          {TensorValue("e", DataType::kFloat32, {5})});
  ir::Node if_node = MakeNode("If", {"c"}, {"y"}, "branch");
  if_node.attributes = {GraphAttr("then_branch", then_g), GraphAttr("else_branch", else_g)};
  ir::Graph g = Body("main", {TensorValue("c", DataType::kBool, {}), TensorValue("x", DataType::kFloat32, {5})},
                     {MakeNode("Mul", {"x", "x"}, {"h"}, "square"), if_node},
                     {TensorValue("y", DataType::kFloat32, {5})});
  return ModelOf(std::move(g));
}

TEST(ControlFlow, IfRunsTheChosenBranchOnValuesOfTheEnclosingGraph) {
  auto session = Session::Create(IfModel(), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {1.5f, -2, 3, 0.25f, -7};
  for (uint8_t c : {uint8_t{1}, uint8_t{0}}) {
    std::vector<uint8_t> cond = {c};
    auto out = (*session)->Run({Bind("c", DataType::kBool, cond, {}), Bind("x", DataType::kFloat32, x, {5})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const Tensor& y = (*out)[0].tensor;
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{5}));
    for (size_t i = 0; i < x.size(); ++i) {
      double h = double(x[i]) * x[i];
      double expect = c ? h + x[i] : x[i] - h;
      EXPECT_EQ(double(y.data<float>()[i]), expect) << "cond " << int(c) << " element " << i;
    }
  }
}

TEST(ControlFlow, IfRefusesAConditionOfTwoElements) {
  auto session = Session::Create(IfModel(), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ir::Model m = IfModel();
  m.graph.inputs[0] = TensorValue("c", DataType::kBool, {2});
  auto two = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  std::vector<uint8_t> cond = {1, 0};
  std::vector<float> x(5, 1.0f);
  auto out = (*two)->Run({Bind("c", DataType::kBool, cond, {2}), Bind("x", DataType::kFloat32, x, {5})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("If 'branch'"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().ToString().find("one element"), std::string::npos) << out.status().ToString();
}

// Loop(M, cond, acc0): acc += x (x from the enclosing graph); scan output
// acc * acc; cond_out = i < limit - 1 when `early_exit`, else cond_in.
ir::Model LoopModel(bool early_exit, bool with_trip_count) {
  std::vector<ir::Node> body_nodes = {MakeNode("Add", {"acc", "x"}, {"acc2"}, "accumulate"),
                                      MakeNode("Mul", {"acc2", "acc2"}, {"sq"}, "square")};
  if (early_exit) {
    body_nodes.push_back(MakeNode("Less", {"i", "limit"}, {"cond_out"}, "keep_going"));
  } else {
    body_nodes.push_back(MakeNode("Identity", {"cond_in"}, {"cond_out"}, "same_cond"));
  }
  ir::Graph body = Body("body",
                        {TensorValue("i", DataType::kInt64, {}), TensorValue("cond_in", DataType::kBool, {}),
                         TensorValue("acc", DataType::kFloat32, {3})},
                        std::move(body_nodes),
                        {TensorValue("cond_out", DataType::kBool, {}), TensorValue("acc2", DataType::kFloat32, {3}),
                         TensorValue("sq", DataType::kFloat32, {3})});
  ir::Node loop = MakeNode("Loop", {with_trip_count ? "M" : "", "cond", "acc0"}, {"acc_final", "squares"}, "loop");
  loop.attributes = {GraphAttr("body", body)};
  ir::Graph g = Body("main",
                     {TensorValue("M", DataType::kInt64, {}), TensorValue("cond", DataType::kBool, {}),
                      TensorValue("x", DataType::kFloat32, {3})},
                     {MakeNode("Sub", {"x", "x"}, {"acc0"}, "zeros"), loop},
                     {TensorValue("acc_final", DataType::kFloat32, {3}), ir::ValueInfo{"squares", false, {}, {}}});
  g.initializers.push_back(OwnedInitializer<int64_t>("limit", DataType::kInt64, {}, {2}));
  return ModelOf(std::move(g));
}

void ExpectLoop(const std::vector<NamedTensor>& out, const std::vector<float>& x, int64_t iterations) {
  const Tensor& acc = out[0].tensor;
  const Tensor& squares = out[1].tensor;
  ASSERT_EQ(acc.shape(), (std::vector<int64_t>{3}));
  ASSERT_EQ(squares.shape(), (std::vector<int64_t>{iterations, 3}));
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(acc.data<float>()[j], double(x[j]) * iterations, 1e-5) << j;
    for (int64_t k = 0; k < iterations; ++k) {
      double a = double(x[j]) * (k + 1);
      EXPECT_NEAR(squares.data<float>()[k * 3 + j], a * a, 1e-4) << "iteration " << k << " element " << j;
    }
  }
}

TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  auto session = Session::Create(LoopModel(false, true), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {0.5f, -1.25f, 3};
  std::vector<uint8_t> cond = {1};
  for (int64_t m : {int64_t{4}, int64_t{1}, int64_t{13}}) {
    std::vector<int64_t> trip = {m};
    auto out = (*session)->Run({Bind("M", DataType::kInt64, trip, {}), Bind("cond", DataType::kBool, cond, {}),
                                Bind("x", DataType::kFloat32, x, {3})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectLoop(*out, x, m);
  }
}

TEST(ControlFlow, LoopOfNoIterationGivesTheInitialValuesAndEmptyScans) {
  auto session = Session::Create(LoopModel(false, true), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {0.5f, -1.25f, 3};
  std::vector<int64_t> trip = {5};
  std::vector<uint8_t> cond = {0};  // false before the first iteration
  auto out = (*session)->Run({Bind("M", DataType::kInt64, trip, {}), Bind("cond", DataType::kBool, cond, {}),
                              Bind("x", DataType::kFloat32, x, {3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectLoop(*out, x, 0);
}

TEST(ControlFlow, LoopStopsWhenTheBodyReturnsFalse) {
  auto session = Session::Create(LoopModel(true, false), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {2, 4, -8};
  std::vector<int64_t> trip = {100};  // bound, but unused: M is omitted
  std::vector<uint8_t> cond = {1};
  auto out = (*session)->Run({Bind("M", DataType::kInt64, trip, {}), Bind("cond", DataType::kBool, cond, {}),
                              Bind("x", DataType::kFloat32, x, {3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectLoop(*out, x, 3);  // i = 0, 1 go on; i = 2 returns false after its iteration
}

TEST(ControlFlow, LoopWithNeitherTripCountNorConditionIsRefused) {
  ir::Model m = LoopModel(false, false);
  m.graph.nodes[1].inputs[1] = "";
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {1, 2, 3};
  std::vector<int64_t> trip = {1};
  std::vector<uint8_t> cond = {1};
  auto out = (*session)->Run({Bind("M", DataType::kInt64, trip, {}), Bind("cond", DataType::kBool, cond, {}),
                              Bind("x", DataType::kFloat32, x, {3})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("Loop 'loop'"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().ToString().find("never end"), std::string::npos) << out.status().ToString();
}

// A Loop whose body holds an If whose then-branch reads x, two graphs up,
// and acc, one graph up: acc += x on even iterations only.
TEST(ControlFlow, NestedBodiesReadEveryEnclosingGraph) {
  ir::Graph then_g = Body("then", {}, {MakeNode("Add", {"acc", "x"}, {"t"}, "add_x")},
                          {TensorValue("t", DataType::kFloat32, {3})});
  ir::Graph else_g = Body("else", {}, {MakeNode("Identity", {"acc"}, {"e"}, "keep")},
                          {TensorValue("e", DataType::kFloat32, {3})});
  ir::Node if_node = MakeNode("If", {"even"}, {"acc2"}, "inner_if");
  if_node.attributes = {GraphAttr("then_branch", then_g), GraphAttr("else_branch", else_g)};
  ir::Graph body = Body("body",
                        {TensorValue("i", DataType::kInt64, {}), TensorValue("cond_in", DataType::kBool, {}),
                         TensorValue("acc", DataType::kFloat32, {3})},
                        {MakeNode("Mod", {"i", "two"}, {"rem"}, "mod"), MakeNode("Equal", {"rem", "zero"}, {"even"}, "eq"),
                         if_node, MakeNode("Identity", {"cond_in"}, {"cond_out"}, "same_cond")},
                        {TensorValue("cond_out", DataType::kBool, {}), TensorValue("acc2", DataType::kFloat32, {3})});
  ir::Node loop = MakeNode("Loop", {"M", "", "acc0"}, {"acc_final"}, "outer_loop");
  loop.attributes = {GraphAttr("body", body)};
  ir::Graph g = Body("main", {TensorValue("M", DataType::kInt64, {}), TensorValue("x", DataType::kFloat32, {3}),
                              TensorValue("acc0", DataType::kFloat32, {3})},
                     {loop}, {TensorValue("acc_final", DataType::kFloat32, {3})});
  g.initializers.push_back(OwnedInitializer<int64_t>("two", DataType::kInt64, {}, {2}));
  g.initializers.push_back(OwnedInitializer<int64_t>("zero", DataType::kInt64, {}, {0}));
  auto session = Session::Create(ModelOf(std::move(g)), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {1, -3, 0.5f}, acc0 = {10, 20, 30};
  std::vector<int64_t> trip = {7};  // i = 0, 2, 4, 6 add x
  auto out = (*session)->Run({Bind("M", DataType::kInt64, trip, {}), Bind("x", DataType::kFloat32, x, {3}),
                              Bind("acc0", DataType::kFloat32, acc0, {3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t j = 0; j < 3; ++j) EXPECT_EQ((*out)[0].tensor.data<float>()[j], acc0[j] + 4 * x[j]) << j;
}

// Scan over axis 1 of X[2, 13], reversed: s += column; each step's s is
// stacked along axis 0 of the scan output.
TEST(ControlFlow, ScanReversedAlongAnAxis) {
  ir::Graph body = Body("body", {TensorValue("s", DataType::kFloat32, {2}), TensorValue("col", DataType::kFloat32, {2})},
                        {MakeNode("Add", {"s", "col"}, {"s2"}, "sum"), MakeNode("Identity", {"s2"}, {"partial"}, "copy")},
                        {TensorValue("s2", DataType::kFloat32, {2}), TensorValue("partial", DataType::kFloat32, {2})});
  ir::Node scan = MakeNode("Scan", {"s0", "X"}, {"s_final", "partials"}, "scan");
  scan.attributes = {GraphAttr("body", body), IntAttr("num_scan_inputs", 1), IntsAttr("scan_input_axes", {1}),
                     IntsAttr("scan_input_directions", {1})};
  ir::Graph g = Body("main", {TensorValue("s0", DataType::kFloat32, {2}), TensorValue("X", DataType::kFloat32, {2, 13})},
                     {scan},
                     {TensorValue("s_final", DataType::kFloat32, {2}), TensorValue("partials", DataType::kFloat32, {13, 2})});
  auto session = Session::Create(ModelOf(std::move(g)), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> s0 = {0.5f, -1}, X(26);
  for (size_t k = 0; k < X.size(); ++k) X[k] = std::sin(float(k)) * 3;
  auto out = (*session)->Run({Bind("s0", DataType::kFloat32, s0, {2}), Bind("X", DataType::kFloat32, X, {2, 13})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& partials = (*out)[1].tensor;
  ASSERT_EQ(partials.shape(), (std::vector<int64_t>{13, 2}));
  for (size_t r = 0; r < 2; ++r) {
    double s = s0[r];
    for (int64_t step = 0; step < 13; ++step) {
      s += X[r * 13 + static_cast<size_t>(12 - step)];
      EXPECT_NEAR(partials.data<float>()[step * 2 + r], s, 1e-5) << "step " << step << " row " << r;
    }
    EXPECT_NEAR((*out)[0].tensor.data<float>()[r], s, 1e-5) << r;
  }
}

// A device backend in name only that counts the float32 values crossing
// between host and device.
class CountingDevice : public testing::FakeDeviceBackend {
 public:
  Result<Tensor> ToDevice(const Tensor& host) const override {
    if (host.dtype() == DataType::kFloat32) ++floats_to_device;
    return FakeDeviceBackend::ToDevice(host);
  }
  Result<Tensor> ToHost(const Tensor& device) const override {
    if (device.dtype() == DataType::kFloat32) ++floats_to_host;
    return FakeDeviceBackend::ToHost(device);
  }
  mutable std::atomic<int> floats_to_device{0}, floats_to_host{0};
};

// With a device backend, a Loop's carried value and its scan outputs stay on
// the device across iterations: only x goes up once and the two outputs come
// down once, whatever the trip count (the condition crosses each iteration,
// as a bool).
TEST(ControlFlow, LoopCarriedValuesStayOnTheDevice) {
  auto device = std::make_shared<CountingDevice>();
  SessionOptions o;
  o.backends = {device, cpu::MakeCpuBackend()};
  auto session = Session::Create(LoopModel(false, true), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {0.5f, -1.25f, 3};
  std::vector<uint8_t> cond = {1};
  std::vector<int64_t> trip = {13};
  auto out = (*session)->Run({Bind("M", DataType::kInt64, trip, {}), Bind("cond", DataType::kBool, cond, {}),
                              Bind("x", DataType::kFloat32, x, {3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectLoop(*out, x, 13);
  EXPECT_LE(device->floats_to_device.load(), 1) << "x uploaded once";
  EXPECT_LE(device->floats_to_host.load(), 2) << "acc_final and squares downloaded once";
}

}  // namespace
}  // namespace vigil::runtime
