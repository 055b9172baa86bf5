// The ONNX writer: every model of ONNX's test data, and a hand-built model
// with every attribute and value type, survives read -> write -> read with
// the same IR, and the onnx Python package (when present) loads what we write.
#include "onnx/writer.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnx/reader.h"
#include "testdata_models.h"

namespace vigil::onnx {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> AsSpan(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// ---- Field-by-field comparison: returns "" when equal, else the first difference ----

#define DIFF_IF(cond, ...)                                   \
  do {                                                       \
    if (cond) return where + ": " + fmt::format(__VA_ARGS__); \
  } while (0)
#define DIFF_EQ(a, b, what) DIFF_IF((a) != (b), "{} differs", what)
#define DIFF_SUB(expr)             \
  do {                             \
    std::string d_ = (expr);       \
    if (!d_.empty()) return d_;    \
  } while (0)

bool SameFloat(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

std::string CompareGraph(const ir::Graph& a, const ir::Graph& b, const std::string& where);

std::string CompareTensor(const ir::Tensor& a, const ir::Tensor& b, const std::string& where) {
  DIFF_EQ(a.name, b.name, "name");
  DIFF_EQ(a.dtype, b.dtype, "dtype");
  DIFF_EQ(a.dims, b.dims, "dims");
  DIFF_EQ(a.strings, b.strings, "strings");
  DIFF_IF(a.bytes.size() != b.bytes.size(), "byte size {} vs {}", a.bytes.size(), b.bytes.size());
  DIFF_IF(!a.bytes.empty() && std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) != 0, "bytes differ");
  return "";
}

std::string CompareSparse(const ir::SparseTensor& a, const ir::SparseTensor& b, const std::string& where) {
  DIFF_EQ(a.dims, b.dims, "sparse dims");
  DIFF_SUB(CompareTensor(a.values, b.values, where + ".values"));
  DIFF_SUB(CompareTensor(a.indices, b.indices, where + ".indices"));
  return "";
}

std::string CompareType(const ir::TypeInfo& a, const ir::TypeInfo& b, const std::string& where) {
  DIFF_EQ(a.kind, b.kind, "type kind");
  DIFF_EQ(a.elem_type, b.elem_type, "elem_type");
  DIFF_EQ(a.denotation, b.denotation, "denotation");
  DIFF_EQ(a.shape.rank_known, b.shape.rank_known, "rank_known");
  DIFF_EQ(a.shape.dims.size(), b.shape.dims.size(), "rank");
  for (size_t i = 0; i < a.shape.dims.size(); ++i) {
    DIFF_EQ(a.shape.dims[i].value, b.shape.dims[i].value, fmt::format("dim {} value", i));
    DIFF_EQ(a.shape.dims[i].param, b.shape.dims[i].param, fmt::format("dim {} param", i));
    DIFF_EQ(a.shape.dims[i].denotation, b.shape.dims[i].denotation, fmt::format("dim {} denotation", i));
  }
  DIFF_EQ(a.inner == nullptr, b.inner == nullptr, "inner presence");
  if (a.inner) DIFF_SUB(CompareType(*a.inner, *b.inner, where + ".inner"));
  return "";
}

std::string CompareValueInfos(const std::vector<ir::ValueInfo>& a, const std::vector<ir::ValueInfo>& b,
                              const std::string& where) {
  DIFF_EQ(a.size(), b.size(), "count");
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string w = where + "[" + a[i].name + "]";
    DIFF_IF(a[i].name != b[i].name, "name {} vs {}", a[i].name, b[i].name);
    DIFF_EQ(a[i].doc_string, b[i].doc_string, "doc_string");
    DIFF_EQ(a[i].has_type, b[i].has_type, "has_type");
    DIFF_SUB(CompareType(a[i].type, b[i].type, w));
  }
  return "";
}

std::string CompareSubgraph(const std::shared_ptr<ir::Graph>& a, const std::shared_ptr<ir::Graph>& b,
                            const std::string& where) {
  DIFF_EQ(a == nullptr, b == nullptr, "graph presence");
  return a ? CompareGraph(*a, *b, where) : "";
}

std::string CompareAttribute(const ir::Attribute& a, const ir::Attribute& b, const std::string& where) {
  DIFF_EQ(a.name, b.name, "name");
  DIFF_EQ(a.type, b.type, "type");
  DIFF_EQ(a.ref_attr_name, b.ref_attr_name, "ref_attr_name");
  DIFF_EQ(a.doc_string, b.doc_string, "doc_string");
  DIFF_IF(!SameFloat(a.f, b.f), "f {} vs {}", a.f, b.f);
  DIFF_EQ(a.i, b.i, "i");
  DIFF_EQ(a.s, b.s, "s");
  DIFF_SUB(CompareTensor(a.t, b.t, where + ".t"));
  DIFF_SUB(CompareSubgraph(a.g, b.g, where + ".g"));
  DIFF_SUB(CompareSparse(a.sparse_tensor, b.sparse_tensor, where + ".sparse_tensor"));
  DIFF_SUB(CompareType(a.tp, b.tp, where + ".tp"));
  DIFF_EQ(a.floats.size(), b.floats.size(), "floats count");
  for (size_t i = 0; i < a.floats.size(); ++i) DIFF_IF(!SameFloat(a.floats[i], b.floats[i]), "floats[{}]", i);
  DIFF_EQ(a.ints, b.ints, "ints");
  DIFF_EQ(a.strings, b.strings, "strings");
  DIFF_EQ(a.tensors.size(), b.tensors.size(), "tensors count");
  for (size_t i = 0; i < a.tensors.size(); ++i) DIFF_SUB(CompareTensor(a.tensors[i], b.tensors[i], where + ".tensors"));
  DIFF_EQ(a.graphs.size(), b.graphs.size(), "graphs count");
  for (size_t i = 0; i < a.graphs.size(); ++i) DIFF_SUB(CompareSubgraph(a.graphs[i], b.graphs[i], where + ".graphs"));
  DIFF_EQ(a.sparse_tensors.size(), b.sparse_tensors.size(), "sparse_tensors count");
  for (size_t i = 0; i < a.sparse_tensors.size(); ++i) {
    DIFF_SUB(CompareSparse(a.sparse_tensors[i], b.sparse_tensors[i], where + ".sparse_tensors"));
  }
  DIFF_EQ(a.type_protos.size(), b.type_protos.size(), "type_protos count");
  for (size_t i = 0; i < a.type_protos.size(); ++i) {
    DIFF_SUB(CompareType(a.type_protos[i], b.type_protos[i], where + ".type_protos"));
  }
  return "";
}

std::string CompareNodes(const std::vector<ir::Node>& a, const std::vector<ir::Node>& b, const std::string& where) {
  DIFF_EQ(a.size(), b.size(), "node count");
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string w = where + "/" + a[i].Describe(i);
    DIFF_IF(a[i].op_type != b[i].op_type, "node {} op {} vs {}", i, a[i].op_type, b[i].op_type);
    DIFF_EQ(a[i].name, b[i].name, "node name");
    DIFF_EQ(a[i].domain, b[i].domain, "node domain");
    DIFF_EQ(a[i].overload, b[i].overload, "node overload");
    DIFF_EQ(a[i].inputs, b[i].inputs, "node inputs");
    DIFF_EQ(a[i].outputs, b[i].outputs, "node outputs");
    DIFF_EQ(a[i].doc_string, b[i].doc_string, "node doc_string");
    DIFF_EQ(a[i].attributes.size(), b[i].attributes.size(), "attribute count");
    for (size_t j = 0; j < a[i].attributes.size(); ++j) {
      DIFF_SUB(CompareAttribute(a[i].attributes[j], b[i].attributes[j], w + "." + a[i].attributes[j].name));
    }
  }
  return "";
}

std::string CompareGraph(const ir::Graph& a, const ir::Graph& b, const std::string& where) {
  DIFF_EQ(a.name, b.name, "graph name");
  DIFF_EQ(a.doc_string, b.doc_string, "graph doc_string");
  DIFF_SUB(CompareNodes(a.nodes, b.nodes, where));
  DIFF_EQ(a.initializers.size(), b.initializers.size(), "initializer count");
  for (size_t i = 0; i < a.initializers.size(); ++i) {
    DIFF_SUB(CompareTensor(a.initializers[i], b.initializers[i], where + "/initializer " + a.initializers[i].name));
  }
  DIFF_EQ(a.sparse_initializers.size(), b.sparse_initializers.size(), "sparse initializer count");
  for (size_t i = 0; i < a.sparse_initializers.size(); ++i) {
    DIFF_SUB(CompareSparse(a.sparse_initializers[i], b.sparse_initializers[i], where + "/sparse initializer"));
  }
  DIFF_SUB(CompareValueInfos(a.inputs, b.inputs, where + "/input"));
  DIFF_SUB(CompareValueInfos(a.outputs, b.outputs, where + "/output"));
  DIFF_SUB(CompareValueInfos(a.value_infos, b.value_infos, where + "/value_info"));
  return "";
}

std::string CompareOpsets(const std::vector<ir::OpsetImport>& a, const std::vector<ir::OpsetImport>& b,
                          const std::string& where) {
  DIFF_EQ(a.size(), b.size(), "opset_import count");
  for (size_t i = 0; i < a.size(); ++i) {
    DIFF_EQ(a[i].domain, b[i].domain, "opset domain");
    DIFF_EQ(a[i].version, b[i].version, "opset version");
  }
  return "";
}

std::string CompareModels(const ir::Model& a, const ir::Model& b) {
  const std::string where = "model";
  DIFF_EQ(a.ir_version, b.ir_version, "ir_version");
  DIFF_SUB(CompareOpsets(a.opset_imports, b.opset_imports, where));
  DIFF_EQ(a.producer_name, b.producer_name, "producer_name");
  DIFF_EQ(a.producer_version, b.producer_version, "producer_version");
  DIFF_EQ(a.domain, b.domain, "domain");
  DIFF_EQ(a.model_version, b.model_version, "model_version");
  DIFF_EQ(a.doc_string, b.doc_string, "doc_string");
  DIFF_EQ(a.metadata_props, b.metadata_props, "metadata_props");
  DIFF_SUB(CompareGraph(a.graph, b.graph, "graph"));
  DIFF_EQ(a.functions.size(), b.functions.size(), "function count");
  for (size_t i = 0; i < a.functions.size(); ++i) {
    const ir::Function& fa = a.functions[i];
    const ir::Function& fb = b.functions[i];
    const std::string w = "function " + fa.name;
    DIFF_EQ(fa.name, fb.name, "function name");
    DIFF_EQ(fa.domain, fb.domain, "function domain");
    DIFF_EQ(fa.overload, fb.overload, "function overload");
    DIFF_EQ(fa.inputs, fb.inputs, "function inputs");
    DIFF_EQ(fa.outputs, fb.outputs, "function outputs");
    DIFF_EQ(fa.attributes, fb.attributes, "function attributes");
    DIFF_EQ(fa.doc_string, fb.doc_string, "function doc_string");
    DIFF_EQ(fa.attribute_defaults.size(), fb.attribute_defaults.size(), "attribute_proto count");
    for (size_t j = 0; j < fa.attribute_defaults.size(); ++j) {
      DIFF_SUB(CompareAttribute(fa.attribute_defaults[j], fb.attribute_defaults[j], w + ".attribute_proto"));
    }
    DIFF_SUB(CompareNodes(fa.nodes, fb.nodes, w));
    DIFF_SUB(CompareOpsets(fa.opset_imports, fb.opset_imports, w));
    DIFF_SUB(CompareValueInfos(fa.value_infos, fb.value_infos, w + "/value_info"));
  }
  return "";
}

// Writes `model`, reads the bytes back, and returns the difference ("" when
// none). `bytes` receives the written bytes; the re-read model points into it.
std::string RoundTrip(const ir::Model& model, std::string* bytes) {
  Result<std::string> written = WriteModelToBytes(model);
  if (!written.ok()) return "write failed: " + written.status().ToString();
  *bytes = std::move(*written);
  Result<ir::Model> again = ReadModelFromBytes(AsSpan(*bytes), "written.onnx", "");
  if (!again.ok()) return "re-read failed: " + again.status().ToString();
  std::string diff = CompareModels(model, *again);
  if (!diff.empty()) return diff;
  // Writing is deterministic: the re-read model writes the same bytes.
  Result<std::string> twice = WriteModelToBytes(*again);
  if (!twice.ok()) return "second write failed: " + twice.status().ToString();
  if (*twice != *bytes) return "second write gave different bytes";
  return "";
}

TEST(OnnxWriter, EveryTestDataModelRoundTrips) {
  if (!fs::is_directory(testing::kTestDataRoot)) {
    GTEST_SKIP() << testing::kTestDataRoot << " is absent; install the Debian package libonnx-testdata";
  }
  std::vector<fs::path> models = testing::FindTestDataModels();
  size_t round_tripped = 0, nodes = 0, initializers = 0;
  for (const fs::path& path : models) {
    Result<ir::Model> model = ReadModel(path.string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    std::string bytes;
    std::string diff = RoundTrip(*model, &bytes);
    if (!diff.empty()) {
      ADD_FAILURE() << path << ": " << diff;
      continue;
    }
    ++round_tripped;
    nodes += model->graph.nodes.size();
    initializers += model->graph.initializers.size();
  }
  std::cout << "[ writer   ] round-tripped " << round_tripped << " of " << models.size() << " models (" << nodes
            << " top-level nodes, " << initializers << " initializers)\n";
  EXPECT_EQ(round_tripped, models.size());
  EXPECT_GT(round_tripped, 1000u);
}

// ---- A hand-built model with every attribute type and value type ----

ir::Tensor OwnedTensor(std::string name, ir::DataType dtype, std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  auto buffer = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  t.bytes = std::span<const uint8_t>(buffer->data(), buffer->size());
  t.keep_alive = buffer;
  t.storage = ir::Tensor::Storage::kTypedDecoded;
  return t;
}

template <typename T>
std::vector<uint8_t> BytesOf(std::vector<T> values) {
  std::vector<uint8_t> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

ir::Tensor FloatTensor(std::string name, std::vector<int64_t> dims, std::vector<float> values) {
  return OwnedTensor(std::move(name), ir::DataType::kFloat32, std::move(dims), BytesOf(std::move(values)));
}

ir::Tensor StringTensor(std::string name, std::vector<int64_t> dims, std::vector<std::string> values) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = ir::DataType::kString;
  t.dims = std::move(dims);
  t.strings = std::move(values);
  t.storage = ir::Tensor::Storage::kStrings;
  return t;
}

ir::SparseTensor Sparse() {
  ir::SparseTensor st;
  st.dims = {3, 4};
  st.values = FloatTensor("sp", {2}, {1.5f, -2.0f});
  st.indices = OwnedTensor("", ir::DataType::kInt64, {2}, BytesOf(std::vector<int64_t>{1, 10}));
  return st;
}

ir::TypeInfo TensorType(ir::DataType dtype, std::vector<ir::Dim> dims, bool rank_known = true) {
  ir::TypeInfo t;
  t.kind = ir::TypeInfo::Kind::kTensor;
  t.elem_type = dtype;
  t.shape.rank_known = rank_known;
  t.shape.dims = std::move(dims);
  return t;
}

ir::TypeInfo Wrap(ir::TypeInfo::Kind kind, ir::TypeInfo inner, ir::DataType key = ir::DataType::kUndefined) {
  ir::TypeInfo t;
  t.kind = kind;
  t.elem_type = key;
  t.inner = std::make_shared<ir::TypeInfo>(std::move(inner));
  return t;
}

ir::ValueInfo Value(std::string name, ir::TypeInfo type) {
  ir::ValueInfo v;
  v.name = std::move(name);
  v.has_type = true;
  v.type = std::move(type);
  return v;
}

std::shared_ptr<ir::Graph> Subgraph(const std::string& name) {
  auto g = std::make_shared<ir::Graph>();
  g->name = name;
  ir::Node n;
  n.op_type = "Identity";
  n.inputs = {"outer"};
  n.outputs = {name + "_out"};
  g->nodes.push_back(n);
  g->outputs.push_back(Value(name + "_out", TensorType(ir::DataType::kFloat32, {ir::Dim::Symbolic("N")})));
  return g;
}

ir::Attribute Attr(std::string name, ir::AttributeType type) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = type;
  return a;
}

ir::Model HandBuiltModel() {
  using AT = ir::AttributeType;
  using Kind = ir::TypeInfo::Kind;
  ir::Model m;
  m.ir_version = 10;
  m.opset_imports = {{"", 21}, {"com.example", 1}};
  m.producer_name = "vigil-test";
  m.producer_version = "0.1";
  m.domain = "org.vigil";
  m.model_version = 7;
  m.doc_string = "hand-built";
  m.metadata_props = {{"k1", "v1"}, {"k2", ""}};

  ir::Node node;
  node.name = "custom0";
  node.op_type = "Everything";
  node.domain = "com.example";
  node.inputs = {"x", "", "w"};
  node.outputs = {"y", ""};
  node.doc_string = "a node with every attribute type";
  std::vector<ir::Attribute>& attrs = node.attributes;
  ir::Attribute a = Attr("f", AT::kFloat);
  a.f = -0.0f;
  a.doc_string = "negative zero";
  attrs.push_back(a);
  a = Attr("f_nan", AT::kFloat);
  a.f = std::numeric_limits<float>::quiet_NaN();
  attrs.push_back(a);
  a = Attr("i", AT::kInt);
  a.i = -1234567890123;
  attrs.push_back(a);
  a = Attr("i0", AT::kInt);
  attrs.push_back(a);
  a = Attr("s", AT::kString);
  a.s = std::string("bytes\0\xff", 7);
  attrs.push_back(a);
  a = Attr("s_empty", AT::kString);
  attrs.push_back(a);
  a = Attr("t", AT::kTensor);
  a.t = FloatTensor("tval", {2, 2}, {1, 2, 3, 4});
  attrs.push_back(a);
  a = Attr("g", AT::kGraph);
  a.g = Subgraph("then");
  attrs.push_back(a);
  a = Attr("floats", AT::kFloats);
  a.floats = {0.5f, -1e30f, 3.0f};
  attrs.push_back(a);
  a = Attr("ints", AT::kInts);
  a.ints = {0, -1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  attrs.push_back(a);
  a = Attr("strings", AT::kStrings);
  a.strings = {"a", "", "ccc"};
  attrs.push_back(a);
  a = Attr("tensors", AT::kTensors);
  a.tensors = {FloatTensor("t0", {}, {42}), StringTensor("t1", {2}, {"x", ""}),
               OwnedTensor("t2", ir::DataType::kInt8, {0, 3}, {}),
               OwnedTensor("t3", ir::DataType::kFloat16, {2}, {0x00, 0x3c, 0x00, 0xc0}),
               OwnedTensor("t4", ir::DataType::kBool, {3}, {1, 0, 1})};
  attrs.push_back(a);
  a = Attr("graphs", AT::kGraphs);
  a.graphs = {Subgraph("body0"), Subgraph("body1")};
  attrs.push_back(a);
  a = Attr("sparse_tensor", AT::kSparseTensor);
  a.sparse_tensor = Sparse();
  attrs.push_back(a);
  a = Attr("sparse_tensors", AT::kSparseTensors);
  a.sparse_tensors = {Sparse(), Sparse()};
  attrs.push_back(a);
  a = Attr("tp", AT::kTypeProto);
  a.tp = Wrap(Kind::kSequence, TensorType(ir::DataType::kInt64, {ir::Dim::Known(3)}));
  attrs.push_back(a);
  a = Attr("type_protos", AT::kTypeProtos);
  a.type_protos = {TensorType(ir::DataType::kFloat32, {}, false),
                   Wrap(Kind::kMap, TensorType(ir::DataType::kFloat32, {}), ir::DataType::kInt64)};
  attrs.push_back(a);
  a = Attr("empty_ints", AT::kInts);
  attrs.push_back(a);
  m.graph.nodes.push_back(node);

  m.graph.name = "main";
  m.graph.doc_string = "main graph";
  m.graph.initializers = {FloatTensor("w", {3}, {1, 2, 3}), StringTensor("names", {1, 2}, {"ab", "c"}),
                          OwnedTensor("i4", ir::DataType::kInt4, {3}, {0x21, 0x03}),
                          OwnedTensor("c64", ir::DataType::kComplex64, {1}, BytesOf(std::vector<float>{1, -1}))};
  m.graph.sparse_initializers = {Sparse()};
  ir::Dim denoted = ir::Dim::Known(4);
  denoted.denotation = "DATA_CHANNEL";
  ir::TypeInfo x_type = TensorType(ir::DataType::kFloat32, {ir::Dim::Symbolic("batch"), ir::Dim{}, denoted});
  x_type.denotation = "TENSOR";
  m.graph.inputs = {Value("x", x_type), Value("w", TensorType(ir::DataType::kFloat32, {ir::Dim::Known(3)}))};
  m.graph.inputs[0].doc_string = "the input";
  ir::TypeInfo sparse_type = TensorType(ir::DataType::kFloat32, {ir::Dim::Known(3), ir::Dim::Known(4)});
  sparse_type.kind = Kind::kSparseTensor;
  m.graph.outputs = {Value("y", Wrap(Kind::kOptional, Wrap(Kind::kSequence, TensorType(ir::DataType::kFloat32, {})))),
                     Value("s", sparse_type)};
  ir::ValueInfo untyped;
  untyped.name = "untyped";
  m.graph.value_infos = {Value("m", Wrap(Kind::kMap, TensorType(ir::DataType::kString, {}), ir::DataType::kString)),
                         untyped};

  ir::Function fn;
  fn.name = "Everything";
  fn.domain = "com.example";
  fn.overload = "v2";
  fn.inputs = {"x", "w"};
  fn.outputs = {"y"};
  fn.attributes = {"alpha"};
  ir::Attribute def = Attr("beta", AT::kFloat);
  def.f = 0.25f;
  fn.attribute_defaults = {def};
  ir::Node fnode;
  fnode.op_type = "LeakyRelu";
  fnode.inputs = {"x"};
  fnode.outputs = {"y"};
  ir::Attribute ref = Attr("alpha", AT::kFloat);
  ref.ref_attr_name = "alpha";
  fnode.attributes = {ref};
  fn.nodes = {fnode};
  fn.opset_imports = {{"", 21}};
  fn.value_infos = {Value("y", TensorType(ir::DataType::kFloat32, {}, false))};
  fn.doc_string = "a function";
  m.functions = {fn};
  return m;
}

TEST(OnnxWriter, HandBuiltModelWithEveryAttributeTypeRoundTrips) {
  ir::Model model = HandBuiltModel();
  std::string bytes;
  EXPECT_EQ(RoundTrip(model, &bytes), "");
  // Every attribute type the reader supports is covered.
  std::set<ir::AttributeType> types;
  for (const ir::Attribute& a : model.graph.nodes[0].attributes) types.insert(a.type);
  EXPECT_EQ(types.size(), 14u);
}

TEST(OnnxWriter, WriteModelWritesAFileThatReads) {
  ir::Model model = HandBuiltModel();
  const fs::path path = fs::temp_directory_path() / fmt::format("vigil_writer_test_{}.onnx", ::getpid());
  ASSERT_TRUE(WriteModel(model, path.string()).ok());
  Result<ir::Model> again = ReadModel(path.string());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(CompareModels(model, *again), "");
  fs::remove(path);
  Status bad = WriteModel(model, "/nonexistent-dir/x/model.onnx");
  EXPECT_EQ(bad.code(), ErrorCode::kEnvironment) << bad.ToString();
}

TEST(OnnxWriter, RefusesTensorsItCannotWriteFaithfully) {
  ir::Model model;
  model.ir_version = 10;
  ir::Tensor external;
  external.name = "big";
  external.dtype = ir::DataType::kFloat32;
  external.dims = {4};
  external.storage = ir::Tensor::Storage::kExternal;
  external.external_location = "weights.bin";
  model.graph.initializers = {external};
  Result<std::string> r = WriteModelToBytes(model);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().ToString().find("external data"), std::string::npos) << r.status().ToString();

  model.graph.initializers = {FloatTensor("short", {4}, {1, 2})};
  r = WriteModelToBytes(model);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("short"), std::string::npos) << r.status().ToString();

  ir::Tensor undefined;
  undefined.name = "nodtype";
  model.graph.initializers = {undefined};
  EXPECT_FALSE(WriteModelToBytes(model).ok());

  model.graph.initializers = {StringTensor("strs", {3}, {"a"})};
  EXPECT_FALSE(WriteModelToBytes(model).ok());

  // A graph that is its own subgraph.
  auto cyclic = std::make_shared<ir::Graph>();
  ir::Node n;
  n.op_type = "If";
  ir::Attribute g = Attr("then_branch", ir::AttributeType::kGraph);
  g.g = cyclic;
  n.attributes = {g};
  cyclic->nodes = {n};
  model.graph = *cyclic;
  model.graph.initializers.clear();
  r = WriteModelToBytes(model);
  cyclic->nodes.clear();  // break the cycle so the graph is freed
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
}

// ---- The onnx Python package loads what we write ----

bool PythonHasOnnx() {
  return fs::exists("/usr/bin/python3") &&
         std::system("/usr/bin/python3 -c 'import onnx' >/dev/null 2>&1") == 0;
}

TEST(OnnxWriter, OnnxPythonPackageLoadsWrittenModels) {
  if (!PythonHasOnnx()) GTEST_SKIP() << "/usr/bin/python3 has no onnx package";
  const fs::path dir = fs::temp_directory_path() / fmt::format("vigil_writer_py_{}", ::getpid());
  fs::create_directories(dir);
  // The hand-built model (parsed only: its custom op is not checkable), and
  // a few real ones, which must also pass onnx.checker and match the
  // original initializers and nodes.
  ASSERT_TRUE(WriteModel(HandBuiltModel(), (dir / "hand.onnx").string()).ok());
  std::vector<std::string> real;
  const std::vector<std::string> picks = {"node/test_conv_with_strides_padding", "node/test_if_seq",
                                          "node/test_loop11", "pytorch-converted/test_ConvTranspose2d",
                                          "simple/test_expand_shape_model1", "node/test_cast_FLOAT_to_STRING"};
  for (const std::string& pick : picks) {
    const fs::path original = fs::path(testing::kTestDataRoot) / pick / "model.onnx";
    if (!fs::exists(original)) continue;
    Result<ir::Model> model = ReadModel(original.string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    const fs::path out = dir / (fs::path(pick).filename().string() + ".onnx");
    ASSERT_TRUE(WriteModel(*model, out.string()).ok());
    real.push_back(original.string() + "=" + out.string());
  }
  std::ostringstream script;
  script << "import onnx, sys\n"
            "from onnx import numpy_helper\n"
            "m = onnx.load(sys.argv[1])\n"
            "n = m.graph.node[0]\n"
            "assert len(n.attribute) == 18, len(n.attribute)\n"
            "a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}\n"
            "assert a['i'] == -1234567890123 and a['ints'] == [0, -1, 2**63 - 1, -2**63], a['ints']\n"
            "assert a['s'] == b'bytes\\0\\xff' and a['strings'] == [b'a', b'', b'ccc']\n"
            "assert a['floats'][0] == 0.5 and a['f'] == 0.0 and len(a['graphs']) == 2\n"
            "assert numpy_helper.to_array(a['t']).tolist() == [[1, 2], [3, 4]]\n"
            "assert list(a['tensors'][1].string_data) == [b'x', b''] and a['tensors'][1].data_type == 8\n"
            "assert list(a['sparse_tensor'].dims) == [3, 4] and len(a['type_protos']) == 2\n"
            "assert m.functions[0].node[0].attribute[0].ref_attr_name == 'alpha'\n"
            "assert list(m.graph.initializer[0].dims) == [3]\n"
            "assert m.metadata_props[0].key == 'k1'\n"
            "for pair in sys.argv[2:]:\n"
            "    a, b = (onnx.load(p) for p in pair.split('='))\n"
            "    onnx.checker.check_model(b)\n"
            "    assert [x.op_type for x in a.graph.node] == [x.op_type for x in b.graph.node], pair\n"
            "    assert [(x.name, x.type) for x in a.graph.input] == [(x.name, x.type) for x in b.graph.input]\n"
            "    assert [(x.name, x.type) for x in a.graph.output] == [(x.name, x.type) for x in b.graph.output]\n"
            "    for x, y in zip(a.graph.node, b.graph.node):\n"
            "        assert [t.name for t in x.attribute] == [t.name for t in y.attribute], pair\n"
            "    for x, y in zip(a.graph.initializer, b.graph.initializer):\n"
            "        assert (numpy_helper.to_array(x) == numpy_helper.to_array(y)).all(), pair\n"
            "print('onnx loaded', 1 + len(sys.argv[2:]), 'models')\n";
  const fs::path script_path = dir / "check.py";
  std::ofstream(script_path) << script.str();
  std::string command = "/usr/bin/python3 " + script_path.string() + " " + (dir / "hand.onnx").string();
  for (const std::string& r : real) command += " " + r;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil::onnx
