// The memory plan and the device preflight count control-flow bodies: each
// body is planned at the shapes its node gives it on entry, Session::Plan
// reports what the bodies add, and a run whose body cannot fit on the device
// is refused before any node has run.
#include <memory>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "runtime/session.h"
#include "fake_device_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

constexpr int64_t kRows = 64, kCols = 127;
constexpr uint64_t kTensorBytes = kRows * kCols * sizeof(float);

ir::Attribute Graph(std::string name, ir::Graph g) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kGraph;
  a.g = std::make_shared<ir::Graph>(std::move(g));
  return a;
}

// y = Loop(3, v0): v <- Relu(v * x + x), with x read from the main graph.
// The body holds two [64, 127] float temporaries; the main graph none.
ir::Model LoopModel() {
  ir::Graph body;
  body.name = "step";
  body.inputs = {TensorValue("i", DataType::kInt64, {}), TensorValue("cond_in", DataType::kBool, {}),
                 TensorValue("v", DataType::kFloat32, {kRows, kCols})};
  body.nodes = {MakeNode("Identity", {"cond_in"}, {"cond_out"}, "keep"), MakeNode("Mul", {"v", "x"}, {"a"}, "mul"),
                MakeNode("Add", {"a", "x"}, {"b"}, "add"), MakeNode("Relu", {"b"}, {"v_out"}, "relu")};
  body.outputs = {TensorValue("cond_out", DataType::kBool, {}), TensorValue("v_out", DataType::kFloat32, {kRows, kCols})};
  ir::Node loop = MakeNode("Loop", {"m", "", "v0"}, {"y"}, "loop");
  loop.attributes = {Graph("body", body)};
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "main";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {kRows, kCols}),
                    TensorValue("v0", DataType::kFloat32, {kRows, kCols})};
  m.graph.initializers = {OwnedInitializer<int64_t>("m", DataType::kInt64, {}, {3})};
  m.graph.nodes = {loop};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {kRows, kCols})};
  return m;
}

struct Inputs {
  std::vector<float> x = std::vector<float>(kRows * kCols, 0.5f), v0 = std::vector<float>(kRows * kCols, -1.0f);
  std::vector<InputBinding> Bindings() const {
    return {{"x", DataType::kFloat32, {kRows, kCols}, x.data(), kTensorBytes, ""},
            {"v0", DataType::kFloat32, {kRows, kCols}, v0.data(), kTensorBytes, ""}};
  }
};

TEST(BodyMemory, LoopBodyIsPlannedAtItsEntryShapes) {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  auto session = Session::Create(LoopModel(), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Inputs in;
  auto plan = (*session)->Plan(in.Bindings());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->arena_bytes, 0u) << "the main graph has no temporaries";
  EXPECT_GE(plan->bodies.host_bytes, kTensorBytes) << "the body's a and b";
  EXPECT_TRUE(plan->bodies.unplanned.empty());
  // The run agrees with the plan: v = relu(v * 0.5 + 0.5) three times from -1.
  auto out = (*session)->Run(in.Bindings());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  float v = -1;
  for (int k = 0; k < 3; ++k) v = std::max(0.0f, v * 0.5f + 0.5f);
  EXPECT_EQ((*out)[0].tensor.data<float>()[kRows * kCols - 1], v);
}

TEST(BodyMemory, DevicePreflightRefusesABodyThatCannotFit) {
  auto device = std::make_shared<testing::FakeDeviceBackend>();
  SessionOptions o;
  o.backends = {device, cpu::MakeCpuBackend()};
  auto session = Session::Create(LoopModel(), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Inputs in;
  auto plan = (*session)->Plan(in.Bindings());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_GE(plan->bodies.device_bytes, kTensorBytes);
  ASSERT_TRUE((*session)->Run(in.Bindings()).ok());
  ASSERT_FALSE(device->planned.empty());
  const uint64_t main_need = device->planned.front();  // the main graph's preflight comes first
  EXPECT_GE(main_need, plan->bodies.device_bytes);

  // A device that holds the main graph's arena and outputs, but not the body's.
  device->memory_bytes = main_need - plan->bodies.device_bytes / 2;
  device->nodes_run = 0;
  auto refused = (*session)->Run(in.Bindings());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kOutOfMemory) << refused.status().ToString();
  EXPECT_EQ(device->nodes_run, 0) << "refused before any node ran";
}

// The branch an If does not take may not fit the inputs at all (here it
// splits 5 elements into 2 + 2): it is left unplanned, and the run goes on.
TEST(BodyMemory, AnUntakenBranchThatCannotBePlannedDoesNotStopTheRun) {
  ir::Graph then_g;
  then_g.name = "split_in_two";
  ir::Node sizes = MakeNode("Constant", {}, {"sizes"}, "sizes");
  ir::Attribute value;
  value.name = "value";
  value.type = ir::AttributeType::kTensor;
  value.t = OwnedInitializer<int64_t>("sizes", DataType::kInt64, {2}, {2, 2});
  sizes.attributes.push_back(std::move(value));
  then_g.nodes = {sizes, MakeNode("Split", {"x", "sizes"}, {"first", "second"}, "split")};
  then_g.outputs = {TensorValue("first", DataType::kFloat32, {2})};
  ir::Graph else_g;
  else_g.name = "same";
  else_g.nodes = {MakeNode("Neg", {"x"}, {"negated"}, "neg")};
  else_g.outputs = {TensorValue("negated", DataType::kFloat32, {5})};
  ir::Node branch = MakeNode("If", {"c"}, {"y"}, "branch");
  branch.attributes = {Graph("then_branch", then_g), Graph("else_branch", else_g)};
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "main";
  m.graph.inputs = {TensorValue("c", DataType::kBool, {}), TensorValue("x", DataType::kFloat32, {5})};
  m.graph.nodes = {branch};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {})};
  m.graph.outputs[0].type.shape.rank_known = false;
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  auto session = Session::Create(std::move(m), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<uint8_t> c = {0};
  std::vector<float> x = {1, 2, 3, 4, 5};
  std::vector<InputBinding> in = {{"c", DataType::kBool, {}, c.data(), 1, ""},
                                  {"x", DataType::kFloat32, {5}, x.data(), x.size() * sizeof(float), ""}};
  auto plan = (*session)->Plan(in);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->bodies.unplanned.size(), 1u);
  EXPECT_EQ(plan->bodies.unplanned[0], "body 'split_in_two' of node If 'branch'");
  auto out = (*session)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].tensor.data<float>()[4], -5.0f);
}

// SequenceMap's body sees items whose shapes are known only at run time.
TEST(BodyMemory, SequenceMapBodyIsNamedAsUnplanned) {
  ir::Graph body;
  body.name = "double";
  body.inputs = {TensorValue("item", DataType::kFloat32, {})};
  body.inputs[0].type.shape.rank_known = false;
  body.nodes = {MakeNode("Add", {"item", "item"}, {"twice"}, "add")};
  body.outputs = {TensorValue("twice", DataType::kFloat32, {})};
  body.outputs[0].type.shape.rank_known = false;
  ir::Node map = MakeNode("SequenceMap", {"parts"}, {"mapped"}, "map");
  map.attributes = {Graph("body", body)};
  ir::Node concat = MakeNode("ConcatFromSequence", {"mapped"}, {"z"}, "concat");
  concat.attributes = {IntAttr("axis", 0)};
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 18}};
  m.graph.name = "main";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {13, 3})};
  m.graph.nodes = {MakeNode("SplitToSequence", {"x"}, {"parts"}, "split"), map, concat};
  m.graph.outputs = {TensorValue("z", DataType::kFloat32, {13, 3})};
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  auto session = Session::Create(std::move(m), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x(39, 1.0f);
  auto plan = (*session)->Plan({{"x", DataType::kFloat32, {13, 3}, x.data(), x.size() * sizeof(float), ""}});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->bodies.unplanned.size(), 1u);
  EXPECT_EQ(plan->bodies.unplanned[0], "body 'double' of node SequenceMap 'map'");
}

}  // namespace
}  // namespace vigil::runtime
