// Sequence and optional values on the CPU: the sequence ops, SequenceMap
// over a body that reads the enclosing graph, a Loop that carries a
// sequence, optional graph inputs with and without a value, sequences as
// graph inputs and outputs, and the errors for bad positions, mismatched
// shapes and dense ops given a sequence. Expected values are computed here.
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ops/sequence.h"
#include "runtime/session.h"
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

ir::Model ModelOf(std::vector<ir::ValueInfo> inputs, std::vector<ir::Node> nodes, std::vector<ir::ValueInfo> outputs,
                  int64_t opset = 18) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", opset}};
  m.graph.name = "main";
  m.graph.inputs = std::move(inputs);
  m.graph.nodes = std::move(nodes);
  m.graph.outputs = std::move(outputs);
  return m;
}

ir::ValueInfo SeqValue(std::string name, DataType dtype) {
  ir::ValueInfo vi;
  vi.name = std::move(name);
  vi.has_type = true;
  ir::TypeInfo element;
  element.kind = ir::TypeInfo::Kind::kTensor;
  element.elem_type = dtype;
  vi.type = ops::SequenceOf(element);
  return vi;
}

ir::ValueInfo OptionalOf(ir::ValueInfo inner) {
  ir::ValueInfo vi;
  vi.name = inner.name;
  vi.has_type = true;
  vi.type.kind = ir::TypeInfo::Kind::kOptional;
  vi.type.inner = std::make_shared<const ir::TypeInfo>(inner.type);
  return vi;
}

ir::Node Constant64(std::string out, std::vector<int64_t> values, std::vector<int64_t> dims) {
  ir::Node n = MakeNode("Constant", {}, {out}, out);
  ir::Attribute a;
  a.name = "value";
  a.type = ir::AttributeType::kTensor;
  a.t = OwnedInitializer<int64_t>(out, DataType::kInt64, dims, values);
  n.attributes.push_back(std::move(a));
  return n;
}

InputBinding Bind(std::string name, const std::vector<float>& data, std::vector<int64_t> shape) {
  return {std::move(name), DataType::kFloat32, std::move(shape), data.data(), data.size() * sizeof(float), ""};
}

InputBinding BindValue(std::string name, const Tensor* value) {
  InputBinding b;
  b.name = std::move(name);
  b.value = value;
  return b;
}

Tensor Floats(std::vector<int64_t> shape, float start) {
  Tensor t = Tensor::Allocate(DataType::kFloat32, std::move(shape)).value();
  for (uint64_t i = 0; i < t.element_count(); ++i) t.data<float>()[i] = start + static_cast<float>(i) * 0.5f;
  return t;
}

// x [13, 127] split along axis 0 into parts of 5, 5, 3 rows; SequenceMap
// multiplies each part by s (read from the enclosing graph) and adds y;
// ConcatFromSequence joins them back along axis 0.
TEST(Sequence, SplitMapConcatOnOddSizes) {
  ir::Graph body;
  body.name = "scale";
  body.inputs = {TensorValue("part", DataType::kFloat32, {}), TensorValue("bias", DataType::kFloat32, {127})};
  body.inputs[0].type.shape.rank_known = false;
  body.nodes = {MakeNode("Mul", {"part", "s"}, {"scaled"}, "mul"), MakeNode("Add", {"scaled", "bias"}, {"out"}, "add")};
  body.outputs = {TensorValue("out", DataType::kFloat32, {})};
  body.outputs[0].type.shape.rank_known = false;
  ir::Node map = MakeNode("SequenceMap", {"parts", "y"}, {"mapped"}, "map");
  ir::Attribute g;
  g.name = "body";
  g.type = ir::AttributeType::kGraph;
  g.g = std::make_shared<ir::Graph>(body);
  map.attributes.push_back(std::move(g));
  ir::Node split = MakeNode("SplitToSequence", {"x", "sizes"}, {"parts"}, "split");
  ir::Node concat = MakeNode("ConcatFromSequence", {"mapped"}, {"z"}, "concat");
  concat.attributes.push_back(IntAttr("axis", 0));
  ir::Model m = ModelOf({TensorValue("x", DataType::kFloat32, {13, 127}), TensorValue("y", DataType::kFloat32, {127}),
                         TensorValue("s", DataType::kFloat32, {})},
                        {Constant64("sizes", {5, 5, 3}, {3}), split, map, concat},
                        {TensorValue("z", DataType::kFloat32, {13, 127})});
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x(13 * 127), y(127), s = {-1.5f};
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 29) - 14.0f;
  for (size_t i = 0; i < y.size(); ++i) y[i] = 0.25f * static_cast<float>(i);
  auto out = (*session)->Run({Bind("x", x, {13, 127}), Bind("y", y, {127}), Bind("s", s, {})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& z = (*out)[0].tensor;
  ASSERT_EQ(z.shape(), (std::vector<int64_t>{13, 127}));
  for (size_t r = 0; r < 13; ++r) {
    for (size_t c = 0; c < 127; ++c) {
      double want = static_cast<double>(x[r * 127 + c]) * -1.5 + y[c];
      ASSERT_EQ(z.data<float>()[r * 127 + c], static_cast<float>(want)) << r << "," << c;
    }
  }
}

// Construct [a, b, c], insert d at the front and e at -1, erase position 1,
// read position -1 and the length, and stack the rest along a new axis.
TEST(Sequence, InsertEraseAtAndLength) {
  std::vector<ir::Node> nodes = {
      MakeNode("SequenceConstruct", {"a", "b", "c"}, {"s0"}, "construct"),
      Constant64("zero", {0}, {}),
      Constant64("minus1", {-1}, {}),
      Constant64("one", {1}, {}),
      MakeNode("SequenceInsert", {"s0", "d", "zero"}, {"s1"}, "insert_front"),  // d a b c
      MakeNode("SequenceInsert", {"s1", "e", "minus1"}, {"s2"}, "insert_before_last"),  // d a b e c
      MakeNode("SequenceErase", {"s2", "one"}, {"s3"}, "erase"),  // d b e c
      MakeNode("SequenceAt", {"s3", "minus1"}, {"last"}, "at"),
      MakeNode("SequenceLength", {"s3"}, {"n"}, "length"),
      MakeNode("ConcatFromSequence", {"s3"}, {"stacked"}, "stack"),
  };
  nodes.back().attributes = {IntAttr("axis", -1), IntAttr("new_axis", 1)};
  std::vector<ir::ValueInfo> inputs;
  for (const char* n : {"a", "b", "c", "d", "e"}) inputs.push_back(TensorValue(n, DataType::kFloat32, {3}));
  ir::Model m = ModelOf(inputs, nodes,
                        {TensorValue("last", DataType::kFloat32, {3}), TensorValue("n", DataType::kInt64, {}),
                         TensorValue("stacked", DataType::kFloat32, {3, 4})});
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<std::vector<float>> v = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}, {13, 14, 15}};
  std::vector<InputBinding> b;
  for (size_t i = 0; i < 5; ++i) b.push_back(Bind(std::string(1, static_cast<char>('a' + i)), v[i], {3}));
  auto out = (*session)->Run(b);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& last = (*out)[0].tensor;
  EXPECT_EQ(std::vector<float>(last.data<float>(), last.data<float>() + 3), v[2]);  // c
  EXPECT_EQ((*out)[1].tensor.data<int64_t>()[0], 4);
  const Tensor& stacked = (*out)[2].tensor;
  ASSERT_EQ(stacked.shape(), (std::vector<int64_t>{3, 4}));
  const size_t order[] = {3, 1, 4, 2};  // d b e c
  for (size_t r = 0; r < 3; ++r) {
    for (size_t k = 0; k < 4; ++k) EXPECT_EQ(stacked.data<float>()[r * 4 + k], v[order[k]][r]) << r << "," << k;
  }
}

// A Loop of 13 iterations carries a sequence, appending iter * x each time;
// the result is stacked along axis 0.
TEST(Sequence, LoopCarriesASequence) {
  ir::Graph body;
  body.name = "append";
  body.inputs = {TensorValue("i", DataType::kInt64, {}), TensorValue("cond_in", DataType::kBool, {}),
                 SeqValue("seq_in", DataType::kFloat32)};
  body.nodes = {MakeNode("Identity", {"cond_in"}, {"cond_out"}, "keep_going"),
                MakeNode("Cast", {"i"}, {"fi"}, "to_float"), MakeNode("Mul", {"fi", "x"}, {"row"}, "row"),
                MakeNode("SequenceInsert", {"seq_in", "row"}, {"seq_out"}, "append")};
  body.nodes[1].attributes = {IntAttr("to", static_cast<int64_t>(DataType::kFloat32))};
  body.outputs = {TensorValue("cond_out", DataType::kBool, {}), SeqValue("seq_out", DataType::kFloat32)};
  ir::Node loop = MakeNode("Loop", {"m", "", "empty"}, {"seq"}, "loop");
  ir::Attribute g;
  g.name = "body";
  g.type = ir::AttributeType::kGraph;
  g.g = std::make_shared<ir::Graph>(body);
  loop.attributes.push_back(std::move(g));
  ir::Node empty = MakeNode("SequenceEmpty", {}, {"empty"}, "empty");
  ir::Node concat = MakeNode("ConcatFromSequence", {"seq"}, {"rows"}, "stack");
  concat.attributes = {IntAttr("axis", 0), IntAttr("new_axis", 1)};
  ir::Model m = ModelOf({TensorValue("x", DataType::kFloat32, {5})},
                        {Constant64("m", {13}, {}), empty, loop, concat},
                        {TensorValue("rows", DataType::kFloat32, {13, 5})});
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {1, -2, 0.5f, 3, -0.25f};
  auto out = (*session)->Run({Bind("x", x, {5})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& rows = (*out)[0].tensor;
  ASSERT_EQ(rows.shape(), (std::vector<int64_t>{13, 5}));
  for (size_t i = 0; i < 13; ++i) {
    for (size_t k = 0; k < 5; ++k) EXPECT_EQ(rows.data<float>()[i * 5 + k], static_cast<float>(i) * x[k]);
  }
}

// An optional tensor input: OptionalHasElement tells, Where picks the value
// or zeros (both through If: the branch without a value never reads it).
TEST(Sequence, OptionalInputWithAndWithoutAValue) {
  ir::Model m = ModelOf({OptionalOf(TensorValue("maybe", DataType::kFloat32, {4}))},
                        {MakeNode("OptionalHasElement", {"maybe"}, {"has"}, "has")},
                        {TensorValue("has", DataType::kBool, {})});
  ir::Node get = MakeNode("OptionalGetElement", {"maybe"}, {"value"}, "get");
  m.graph.nodes.push_back(get);
  m.graph.outputs.push_back(TensorValue("value", DataType::kFloat32, {4}));
  auto session = Session::Create(m, CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> x = {1, 2, 3, 4};
  auto with = (*session)->Run({Bind("maybe", x, {4})});
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ((*with)[0].tensor.data<uint8_t>()[0], 1);
  EXPECT_EQ(std::vector<float>((*with)[1].tensor.data<float>(), (*with)[1].tensor.data<float>() + 4), x);

  Tensor none = Tensor::EmptyOptional();
  auto without = (*session)->Run({BindValue("maybe", &none)});
  ASSERT_FALSE(without.ok());
  EXPECT_NE(without.status().ToString().find("OptionalGetElement 'get': the optional input has no value"),
            std::string::npos)
      << without.status().ToString();

  m.graph.nodes.pop_back();
  m.graph.outputs.pop_back();
  auto has_only = Session::Create(m, CpuOnly());
  ASSERT_TRUE(has_only.ok()) << has_only.status().ToString();
  auto out = (*has_only)->Run({BindValue("maybe", &none)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].tensor.data<uint8_t>()[0], 0);
}

// A sequence given as a graph input comes back through Identity, item for item.
TEST(Sequence, SequenceAsGraphInputAndOutput) {
  ir::Model m = ModelOf({SeqValue("in", DataType::kFloat32)}, {MakeNode("Identity", {"in"}, {"out"}, "same")},
                        {SeqValue("out", DataType::kFloat32)});
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Tensor seq = Tensor::Sequence(DataType::kFloat32, {Floats({2, 3}, 1), Floats({7}, -3)});
  auto out = (*session)->Run({BindValue("in", &seq)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& got = (*out)[0].tensor;
  ASSERT_EQ(got.kind(), Tensor::Kind::kSequence);
  ASSERT_EQ(got.items().size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    ASSERT_EQ(got.items()[k].shape(), seq.items()[k].shape());
    EXPECT_EQ(std::memcmp(got.items()[k].raw_data(), seq.items()[k].raw_data(), seq.items()[k].byte_size()), 0);
  }
  // A sequence of another dtype, or a tensor, is refused naming the input.
  Tensor ints = Tensor::Sequence(DataType::kInt64, {});
  auto bad = (*session)->Run({BindValue("in", &ints)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("input 'in' is a sequence of int64"), std::string::npos)
      << bad.status().ToString();
}

TEST(Sequence, BadPositionsAndShapesAreDiagnosed) {
  std::vector<ir::Node> nodes = {MakeNode("SequenceConstruct", {"a", "b"}, {"s"}, "construct"),
                                 Constant64("five", {5}, {}), MakeNode("SequenceAt", {"s", "five"}, {"x"}, "at")};
  ir::Model m = ModelOf({TensorValue("a", DataType::kFloat32, {3}), TensorValue("b", DataType::kFloat32, {3})}, nodes,
                        {TensorValue("x", DataType::kFloat32, {3})});
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<float> a = {1, 2, 3}, b = {4, 5, 6};
  auto out = (*session)->Run({Bind("a", a, {3}), Bind("b", b, {3})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("SequenceAt 'at': position 5 is outside [-2, 1] for a sequence of 2 tensors"),
            std::string::npos)
      << out.status().ToString();

  ir::Node concat = MakeNode("ConcatFromSequence", {"s"}, {"y"}, "concat");
  concat.attributes = {IntAttr("axis", 0)};
  ir::Model m2 = ModelOf({TensorValue("a", DataType::kFloat32, {3}), TensorValue("b", DataType::kFloat32, {2, 2})},
                         {MakeNode("SequenceConstruct", {"a", "b"}, {"s"}, "construct"), concat},
                         {TensorValue("y", DataType::kFloat32, {})});
  m2.graph.outputs[0].type.shape.rank_known = false;
  auto s2 = Session::Create(std::move(m2), CpuOnly());
  ASSERT_TRUE(s2.ok()) << s2.status().ToString();
  std::vector<float> b4 = {4, 5, 6, 7};
  auto out2 = (*s2)->Run({Bind("a", a, {3}), Bind("b", b4, {2, 2})});
  ASSERT_FALSE(out2.ok());
  EXPECT_NE(out2.status().ToString().find("tensor 1 of the sequence is float32[2,2] and tensor 0 float32[3]"),
            std::string::npos)
      << out2.status().ToString();
}

// A dense op given a sequence is refused with the op's name, not run.
TEST(Sequence, DenseOpOnASequenceIsRefused) {
  ir::Model m = ModelOf({SeqValue("in", DataType::kFloat32)}, {MakeNode("Relu", {"in"}, {"out"}, "relu")},
                        {TensorValue("out", DataType::kFloat32, {})});
  auto session = Session::Create(std::move(m), CpuOnly());
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  Tensor seq = Tensor::Sequence(DataType::kFloat32, {Floats({3}, 1)});
  auto out = (*session)->Run({BindValue("in", &seq)});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().ToString().find("op Relu on sequence or optional values is not supported"), std::string::npos)
      << out.status().ToString();
}

}  // namespace
}  // namespace vigil::runtime
