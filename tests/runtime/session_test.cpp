// Session: load → infer → fold → partition → plan → run, on small models built
// in memory. Uses the CPU backend's kernels for Add, Mul, Relu, Shape, Gather,
// Concat, Reshape, Identity, Unsqueeze.
#include "runtime/session.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <variant>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

ir::ValueInfo SymbolicValue(std::string name, DataType dtype, std::vector<std::variant<int64_t, std::string>> dims) {
  ir::ValueInfo vi = TensorValue(std::move(name), dtype, {});
  for (auto& d : dims) {
    vi.type.shape.dims.push_back(std::holds_alternative<int64_t>(d) ? ir::Dim::Known(std::get<int64_t>(d))
                                                                    : ir::Dim::Symbolic(std::get<std::string>(d)));
  }
  return vi;
}

ir::Tensor Int64Constant(std::string name, std::vector<int64_t> values) {
  auto owned = std::make_shared<std::vector<int64_t>>(std::move(values));
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = DataType::kInt64;
  t.dims = {static_cast<int64_t>(owned->size())};
  t.storage = ir::Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(owned->data()), owned->size() * 8};
  t.keep_alive = owned;
  return t;
}

SessionOptions CpuOnly() {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  return o;
}

InputBinding Bind(std::string name, const std::vector<float>& data, std::vector<int64_t> shape) {
  return {std::move(name), DataType::kFloat32, std::move(shape), data.data(), data.size() * sizeof(float), ""};
}

// y = Relu(x + x) * x ; x float32[N, 3]
ir::Model ArithmeticModel() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "arith";
  m.graph.inputs = {SymbolicValue("x", DataType::kFloat32, {std::string("N"), int64_t{3}})};
  m.graph.outputs = {SymbolicValue("y", DataType::kFloat32, {std::string("N"), int64_t{3}})};
  m.graph.nodes = {MakeNode("Add", {"x", "x"}, {"s"}, "add"), MakeNode("Relu", {"s"}, {"r"}, "relu"),
                   MakeNode("Mul", {"r", "x"}, {"y"}, "mul")};
  return m;
}

TEST(Session, RunsAndMatchesReference) {
  auto session = Session::Create(ArithmeticModel(), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {1, -2, 3, 4, -5, 6};
  auto out = (*session)->Run({Bind("x", x, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  const Tensor& y = (*out)[0].tensor;
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3}));
  for (size_t i = 0; i < x.size(); ++i) {
    float expect = std::max(0.0f, 2 * x[i]) * x[i];
    EXPECT_EQ(y.data<float>()[i], expect) << i;
  }
}

// A NodeObserver hears every node before it runs, in order, then once more
// with no node before the outputs are read back (where a profile ends the
// last node's time).
TEST(Session, ObserverHearsEachNodeThenTheEndOfTheNodes) {
  auto session = Session::Create(ArithmeticModel(), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<std::string> heard;
  NodeObserver observer = [&](const NodeStart& n) {
    heard.push_back(n.node ? n.node->name + " on " + std::string(n.backend) : fmt::format("end #{}", n.node_index));
    if (n.node) {
      EXPECT_NE(n.input_shapes, nullptr);
    } else {
      EXPECT_EQ(n.input_shapes, nullptr);
      EXPECT_TRUE(n.backend.empty());
    }
  };
  std::vector<float> x = {1, -2, 3};
  auto out = (*session)->Run({Bind("x", x, {1, 3})}, observer);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(heard, (std::vector<std::string>{"add on cpu", "relu on cpu", "mul on cpu", "end #3"}));
}

TEST(Session, ShapeSubgraphFoldsToExactShapes) {
  // z = Reshape(x, Concat(Gather(Shape(x), 0), [-1])) with x [N, 2, 3]:
  // at plan time N is known, so the reshape target is a constant [N, -1].
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "reshape";
  m.graph.inputs = {SymbolicValue("x", DataType::kFloat32, {std::string("N"), int64_t{2}, int64_t{3}})};
  m.graph.outputs = {SymbolicValue("z", DataType::kFloat32, {std::string("N"), int64_t{6}})};
  m.graph.initializers = {Int64Constant("zero", {0}), Int64Constant("minus_one", {-1})};
  m.graph.nodes = {MakeNode("Shape", {"x"}, {"shape"}), MakeNode("Gather", {"shape", "zero"}, {"n"}),
                   MakeNode("Concat", {"n", "minus_one"}, {"target"}), MakeNode("Reshape", {"x", "target"}, {"z"})};
  m.graph.nodes[2].attributes.push_back([] {
    ir::Attribute a;
    a.name = "axis";
    a.type = ir::AttributeType::kInt;
    a.i = 0;
    return a;
  }());
  auto session = Session::Create(m, CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x(4 * 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  auto out = (*session)->Run({Bind("x", x, {4, 2, 3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].tensor.shape(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ((*out)[0].tensor.data<float>()[23], 23.0f);
}

TEST(Session, MemoryPlanReusesIntermediates) {
  // A chain of 6 Relu over [64, 64] floats: 5 intermediates of 16 KiB, at
  // most 2 live at once.
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "chain";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {64, 64})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {64, 64})};
  std::string prev = "x";
  for (int i = 0; i < 6; ++i) {
    std::string out = i == 5 ? "y" : "t" + std::to_string(i);
    m.graph.nodes.push_back(MakeNode("Relu", {prev}, {out}));
    prev = out;
  }
  auto session = Session::Create(m, CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x(64 * 64, 1.0f);
  auto plan = (*session)->Plan({Bind("x", x, {64, 64})});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->tensors.size(), 5u);
  EXPECT_EQ(plan->arena_bytes, 2u * 64 * 64 * 4);
  auto out = (*session)->Run({Bind("x", x, {64, 64})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].tensor.data<float>()[4095], 1.0f);
}

TEST(Session, OutputThatIsAViewOfTheInputOwnsItsMemory) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "id";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {3})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {3})};
  m.graph.nodes = {MakeNode("Identity", {"x"}, {"y"})};
  auto session = Session::Create(m, CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto x = std::make_unique<std::vector<float>>(std::vector<float>{1, 2, 3});
  auto out = (*session)->Run({Bind("x", *x, {3})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE((*out)[0].tensor.raw_data(), static_cast<const void*>(x->data()));
  x.reset();  // the caller frees its buffer; the output must stay valid
  EXPECT_EQ((*out)[0].tensor.data<float>()[2], 3.0f);
}

TEST(Session, BitCastViewOfAnIntermediateOutlivesItsSlot) {
  // r = Relu(x) lives in the arena; b = BitCast(r) reads r's bytes as int32
  // and is read only after s and t, which would reuse r's slot if the plan
  // took r to be dead after the BitCast.
  ir::Model m;
  m.ir_version = 10;
  m.opset_imports = {{"", 26}};
  m.graph.name = "bitcast";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {13})};
  m.graph.outputs = {TensorValue("y", DataType::kInt32, {13}), TensorValue("t", DataType::kFloat32, {13})};
  m.graph.nodes = {MakeNode("Relu", {"x"}, {"r"}), MakeNode("BitCast", {"r"}, {"b"}), MakeNode("Neg", {"x"}, {"s"}),
                   MakeNode("Neg", {"s"}, {"t"}), MakeNode("Add", {"b", "b"}, {"y"})};
  m.graph.nodes[1].attributes.push_back(IntAttr("to", static_cast<int64_t>(DataType::kInt32)));
  auto session = Session::Create(m, CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x(13);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.75f - 4.0f;
  auto out = (*session)->Run({Bind("x", x, {13})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (size_t i = 0; i < x.size(); ++i) {
    float r = std::max(0.0f, x[i]);
    uint32_t bits;
    std::memcpy(&bits, &r, 4);
    EXPECT_EQ((*out)[0].tensor.data<int32_t>()[i], static_cast<int32_t>(bits * 2u)) << i;
    EXPECT_EQ((*out)[1].tensor.data<float>()[i], x[i]) << i;
  }
}

// What an op without a schema is, said on the first line: not an ONNX
// operator, an ONNX operator vigil lacks, one vigil has at other opsets, or
// an op of another domain.
Status CreateWithOp(const std::string& op, const std::string& domain = "", int64_t opset = 17) {
  ir::Model m = ArithmeticModel();
  m.graph.nodes[1].op_type = op;
  m.graph.nodes[1].domain = domain;
  m.opset_imports = {{"", opset}};
  if (!domain.empty()) m.opset_imports.push_back({domain, 1});
  auto session = Session::Create(m, CpuOnly());
  return session.ok() ? Status::Ok() : session.status();
}

bool HasCause(const Status& s, const std::string& text) {
  for (const Cause& c : s.diagnosis().causes) {
    if (c.what.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Session, UnknownOpsAreToldApart) {
  Status custom = CreateWithOp("FancyRelu");
  EXPECT_EQ(custom.code(), ErrorCode::kInvalidModel);
  EXPECT_NE(custom.summary().find("node FancyRelu 'relu'"), std::string::npos) << custom.summary();
  EXPECT_NE(custom.summary().find("'FancyRelu' is not an ONNX operator"), std::string::npos) << custom.summary();
  EXPECT_TRUE(HasCause(custom, "custom op")) << custom.ToString();
  EXPECT_FALSE(HasCause(custom, "misspelling")) << custom.ToString();

  Status typo = CreateWithOp("Rleu");
  EXPECT_TRUE(HasCause(typo, "a misspelling of Relu")) << typo.ToString();

  Status missing = CreateWithOp("MaxRoiPool");
  EXPECT_EQ(missing.code(), ErrorCode::kUnsupported);
  EXPECT_NE(missing.summary().find("vigil does not implement the ONNX operator MaxRoiPool"), std::string::npos)
      << missing.summary();

  Status old_opset = CreateWithOp("Gelu", "", 17);  // Gelu is an ONNX op from opset 20
  EXPECT_EQ(old_opset.code(), ErrorCode::kUnsupported);
  EXPECT_NE(old_opset.summary().find("vigil implements Gelu for opsets 20 to"), std::string::npos)
      << old_opset.summary();
  EXPECT_NE(old_opset.summary().find("the model imports opset 17"), std::string::npos) << old_opset.summary();

  Status contrib = CreateWithOp("FusedGemm", "com.microsoft");
  EXPECT_EQ(contrib.code(), ErrorCode::kUnsupported);
  EXPECT_NE(contrib.summary().find("from the domain 'com.microsoft'"), std::string::npos) << contrib.summary();
  ASSERT_FALSE(contrib.diagnosis().fixes.empty());
  EXPECT_NE(contrib.diagnosis().fixes[0].find("default ONNX domain"), std::string::npos);
  // com.microsoft has some ops in vigil (the QOperator quantized ones): the
  // message lists them.
  EXPECT_NE(contrib.summary().find("of which vigil implements only QLinearAdd"), std::string::npos)
      << contrib.summary();
  Status other = CreateWithOp("Foo", "org.example");
  EXPECT_NE(other.summary().find("from the domain 'org.example', which vigil does not implement"), std::string::npos)
      << other.summary();
}

TEST(Session, ConcurrentRunsGiveIdenticalOutputs) {
  auto session = Session::Create(ArithmeticModel(), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const Session& s = **session;
  std::vector<float> x(3 * 1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i));
  auto reference = s.Run({Bind("x", x, {1000, 3})});
  ASSERT_TRUE(reference.ok());
  const Tensor& ref = (*reference)[0].tensor;
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        // Alternate batch sizes so threads also race on the plan cache.
        int64_t n = (t + i) % 2 ? 1000 : 999;
        InputBinding b = Bind("x", x, {n, 3});
        b.byte_size = size_t(n) * 3 * sizeof(float);  // the part of the buffer the shape covers
        auto out = s.Run({b});
        if (!out.ok()) {
          ++failures;
          continue;
        }
        if (std::memcmp((*out)[0].tensor.raw_data(), ref.raw_data(), size_t(n) * 3 * 4) != 0) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

class RejectingBackend : public Backend {
 public:
  std::string_view name() const override { return "picky"; }
  bool Supports(const ir::Node& node, int64_t) const override { return node.op_type == "Add"; }
  Status Run(const ir::Node&, int64_t, std::span<const Tensor* const>, std::vector<Tensor>&,
             OutputAllocator&) const override {
    return InternalError("not expected to run in this test");
  }
};

TEST(Session, PartitionFallsBackOrRefuses) {
  SessionOptions o;
  o.backends = {std::make_shared<RejectingBackend>(), cpu::MakeCpuBackend()};
  auto session = Session::Create(ArithmeticModel(), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  const auto& placement = (*session)->placement();
  ASSERT_EQ(placement.size(), 3u);
  EXPECT_EQ(placement[0].backend, "picky");
  EXPECT_EQ(placement[1].backend, "cpu");
  o.no_fallback = true;
  auto strict = Session::Create(ArithmeticModel(), o);
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().summary().find("node Relu 'relu'"), std::string::npos) << strict.status().summary();
  EXPECT_NE(strict.status().summary().find("fallback is off"), std::string::npos);
}

}  // namespace
}  // namespace vigil::runtime

namespace vigil::runtime {
namespace {

// ReduceLogSum over x of `dtype` (opset 18: no axes input, all dims).
ir::Model LogSumModel(DataType dtype) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 18}};
  m.graph.name = "logsum";
  m.graph.inputs = {TensorValue("x", dtype, {2, 3})};
  m.graph.outputs = {TensorValue("y", dtype, {1, 1})};
  m.graph.nodes = {MakeNode("ReduceLogSum", {"x"}, {"y"}, "logsum")};
  return m;
}

// ONNX's ReduceLogSum takes int32; the CPU kernel takes only floats. The
// CPU (the last backend) refuses the node when the model loads, and the
// error says why, instead of a failure when the node first runs.
TEST(Session, CpuRefusesADtypeItsKernelDoesNotTakeAtLoad) {
  auto ok = Session::Create(LogSumModel(DataType::kFloat32), CpuOnly());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();

  auto refused = Session::Create(LogSumModel(DataType::kInt32), CpuOnly());
  ASSERT_FALSE(refused.ok());
  const Status& st = refused.status();
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported);
  EXPECT_NE(st.summary().find("node ReduceLogSum 'logsum'"), std::string::npos) << st.summary();
  EXPECT_NE(st.summary().find("no backend can run it"), std::string::npos) << st.summary();
  EXPECT_NE(st.summary().find("cpu: dtype int32 of input 0 is not among the CPU ReduceLogSum kernel's dtypes for T "
                              "(float32, float16, float64, bfloat16)"),
            std::string::npos)
      << st.summary();

  // The same when x is a constant: folding leaves the node to the partition.
  ir::Model constant = LogSumModel(DataType::kInt32);
  ir::Tensor x = Int64Constant("x", {1, 2, 3, 4, 5, 6});
  auto int32_values = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  x.dtype = DataType::kInt32;
  x.dims = {2, 3};
  x.bytes = {reinterpret_cast<const uint8_t*>(int32_values->data()), int32_values->size() * 4};
  x.keep_alive = int32_values;
  constant.graph.inputs.clear();
  constant.graph.initializers = {x};
  auto folded = Session::Create(constant, CpuOnly());
  ASSERT_FALSE(folded.ok());
  EXPECT_NE(folded.status().summary().find("cpu: dtype int32 of input 0 is not among the CPU ReduceLogSum kernel's"),
            std::string::npos)
      << folded.status().summary();

  // With a device backend in front that refuses it too, both say why.
  SessionOptions o;
  o.backends = {std::make_shared<RejectingBackend>(), cpu::MakeCpuBackend()};
  auto both = Session::Create(LogSumModel(DataType::kInt32), o);
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().summary().find("cpu: dtype int32 of input 0"), std::string::npos)
      << both.status().summary();
  std::vector<std::string> refusals;
  for (const Fact& f : both.status().diagnosis().facts) {
    if (f.name == "refused by") refusals.push_back(f.value);
  }
  ASSERT_EQ(refusals.size(), 2u);
  EXPECT_EQ(refusals[0], "picky: no kernel for this op at this opset");
  EXPECT_NE(refusals[1].find("cpu: dtype int32 of input 0 is not among"), std::string::npos) << refusals[1];
}

}  // namespace
}  // namespace vigil::runtime
