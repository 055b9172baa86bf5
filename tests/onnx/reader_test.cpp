// Round trips of ModelProto, GraphProto, NodeProto, AttributeProto,
// FunctionProto, ValueInfoProto and TypeProto through the builder and reader.
#include <cstring>

#include "read_helpers.h"

namespace vigil::onnx::test {
namespace {

using ir::AttributeType;
using ir::TypeInfo;

TEST(Reader, ModelMetadataAndOpsets) {
  ModelParts parts;
  parts.ir_version = 8;
  parts.producer_name = "pytorch";
  parts.producer_version = "2.1";
  parts.domain = "ai.example";
  parts.model_version = 42;
  parts.doc_string = "doc";
  parts.metadata_props = {{"author", "me"}, {"license", "MIT"}};
  std::string bytes = MakeModel(MakeGraph("main", {}, {}, {}), {{"", 13}, {"com.microsoft", 1}}, parts);
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->ir_version, 8);
  EXPECT_EQ(model->producer_name, "pytorch");
  EXPECT_EQ(model->producer_version, "2.1");
  EXPECT_EQ(model->domain, "ai.example");
  EXPECT_EQ(model->model_version, 42);
  EXPECT_EQ(model->doc_string, "doc");
  ASSERT_EQ(model->metadata_props.size(), 2u);
  EXPECT_EQ(model->metadata_props[1].first, "license");
  EXPECT_EQ(model->metadata_props[1].second, "MIT");
  ASSERT_EQ(model->opset_imports.size(), 2u);
  EXPECT_EQ(model->opset_imports[0].domain, "");
  EXPECT_EQ(model->opset_imports[0].version, 13);
  EXPECT_EQ(model->opset_imports[1].domain, "com.microsoft");
  EXPECT_EQ(model->graph.name, "main");
  EXPECT_EQ(model->path, "test.onnx");
}

TEST(Reader, GraphAndNodeFields) {
  std::string g = MakeGraph(
      "g",
      {MakeNode("Conv", {"x", "w", ""}, {"y"}, {},
                {.name = "conv1", .domain = "ai.onnx", .overload = "v2", .doc_string = "a conv"}),
       MakeNode("Relu", {"y"}, {"z"})},
      {MakeValueInfo("x", 1, {"N", 3, 224, 224})}, {MakeValueInfo("z", 1, {"N", 8, 222, 222})},
      {.initializers = {MakeFloatTensor("w", {1}, {1.f})},
       .value_infos = {MakeValueInfo("y", 1, {"N", 8, 222, 222})},
       .doc_string = "graph doc"});
  std::string bytes = MakeModel(g);
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ir::Graph& graph = model->graph;
  EXPECT_EQ(graph.doc_string, "graph doc");
  ASSERT_EQ(graph.nodes.size(), 2u);
  const ir::Node& conv = graph.nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.name, "conv1");
  EXPECT_EQ(conv.domain, "ai.onnx");
  EXPECT_EQ(conv.overload, "v2");
  EXPECT_EQ(conv.doc_string, "a conv");
  EXPECT_EQ(conv.inputs, (std::vector<std::string>{"x", "w", ""}));
  EXPECT_EQ(conv.outputs, (std::vector<std::string>{"y"}));
  ASSERT_EQ(graph.inputs.size(), 1u);
  ASSERT_EQ(graph.outputs.size(), 1u);
  ASSERT_EQ(graph.value_infos.size(), 1u);
  EXPECT_EQ(graph.value_infos[0].name, "y");
  ASSERT_EQ(graph.initializers.size(), 1u);
}

TEST(Reader, ValueInfoTensorShapes) {
  ProtoWriter dim_with_denotation;
  dim_with_denotation.Varint(field::shape::kDimValue, 3).Bytes(field::shape::kDenotation, "DATA_CHANNEL");
  ProtoWriter shape;
  shape.Message(field::shape::kDim, ProtoWriter().Bytes(field::shape::kDimParam, "batch"))
      .Message(field::shape::kDim, dim_with_denotation)
      .Message(field::shape::kDim, ProtoWriter())  // neither value nor param: unknown
      .Message(field::shape::kDim, ProtoWriter().Varint(field::shape::kDimValue, -1));
  std::string type = ProtoWriter()
                         .Message(field::type::kTensorType, ProtoWriter().Varint(1, 10).Message(2, shape))
                         .Bytes(field::type::kDenotation, "IMAGE");
  std::string bytes = MakeModel(MakeGraph(
      "g", {}, {MakeValueInfoOfType("x", type), MakeValueInfoOfType("s", MakeTensorType(1, {}, true))},
      {MakeValueInfoOfType("y", MakeTensorType(7, {}, false)),
       ProtoWriter().Bytes(field::value_info::kName, "untyped").Bytes(field::value_info::kDocString, "d")}));
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ir::ValueInfo& x = model->graph.inputs[0];
  ASSERT_TRUE(x.has_type);
  EXPECT_EQ(x.type.kind, TypeInfo::Kind::kTensor);
  EXPECT_EQ(x.type.elem_type, ir::DataType::kFloat16);
  EXPECT_EQ(x.type.denotation, "IMAGE");
  ASSERT_TRUE(x.type.shape.rank_known);
  ASSERT_EQ(x.type.shape.dims.size(), 4u);
  EXPECT_TRUE(x.type.shape.dims[0].is_symbolic());
  EXPECT_EQ(x.type.shape.dims[0].param, "batch");
  EXPECT_EQ(x.type.shape.dims[1].value, 3);
  EXPECT_EQ(x.type.shape.dims[1].denotation, "DATA_CHANNEL");
  EXPECT_FALSE(x.type.shape.dims[2].is_known());
  EXPECT_FALSE(x.type.shape.dims[2].is_symbolic());
  EXPECT_FALSE(x.type.shape.dims[3].is_known()) << "negative dim_value reads as unknown";
  const ir::ValueInfo& s = model->graph.inputs[1];
  EXPECT_TRUE(s.type.shape.rank_known);
  EXPECT_TRUE(s.type.shape.dims.empty()) << "a scalar";
  const ir::ValueInfo& y = model->graph.outputs[0];
  EXPECT_EQ(y.type.elem_type, ir::DataType::kInt64);
  EXPECT_FALSE(y.type.shape.rank_known);
  EXPECT_FALSE(model->graph.outputs[1].has_type);
  EXPECT_EQ(model->graph.outputs[1].doc_string, "d");
}

// Paddle's exporter names every dynamic dim '?': those dims are unknown, not
// one size shared by all of them (a [1,3,'?','?'] input takes any image).
TEST(Reader, DimNamesThatMeanUnknownAreNotSymbols) {
  ProtoWriter shape;
  for (const char* param : {"?", "?", "-1", "None", "  ", "N", "unk__12"}) {
    shape.Message(field::shape::kDim, ProtoWriter().Bytes(field::shape::kDimParam, param));
  }
  std::string type =
      ProtoWriter().Message(field::type::kTensorType, ProtoWriter().Varint(1, 1).Message(2, shape));
  std::string bytes = MakeModel(MakeGraph("g", {}, {MakeValueInfoOfType("x", type)}, {}));
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const std::vector<ir::Dim>& dims = model->graph.inputs[0].type.shape.dims;
  ASSERT_EQ(dims.size(), 7u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_FALSE(dims[i].is_symbolic()) << "dim " << i << " '" << dims[i].param << "'";
    EXPECT_FALSE(dims[i].is_known());
  }
  EXPECT_EQ(dims[5].param, "N") << "a real name stays a symbol";
  EXPECT_EQ(dims[6].param, "unk__12") << "tf2onnx's unique names stay symbols";
  EXPECT_EQ(ir::ShapeToString(model->graph.inputs[0].type.shape), "[?,?,?,?,?,N,unk__12]");
}

TEST(Reader, SequenceOptionalMapAndSparseTypes) {
  std::string seq = MakeSequenceType(MakeTensorType(1, {"N"}));
  std::string opt = MakeOptionalType(MakeSequenceType(MakeTensorType(7, {})));
  std::string map = MakeMapType(8, MakeTensorType(1, {}));
  std::string sparse = MakeSparseTensorType(1, {10, 20});
  std::string bytes = MakeModel(MakeGraph("g", {}, {MakeValueInfoOfType("a", seq), MakeValueInfoOfType("b", opt),
                                                    MakeValueInfoOfType("c", map), MakeValueInfoOfType("d", sparse)},
                                          {}));
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto& in = model->graph.inputs;
  EXPECT_EQ(in[0].type.kind, TypeInfo::Kind::kSequence);
  ASSERT_TRUE(in[0].type.inner);
  EXPECT_EQ(in[0].type.inner->kind, TypeInfo::Kind::kTensor);
  EXPECT_EQ(in[0].type.inner->shape.dims[0].param, "N");
  EXPECT_EQ(in[1].type.kind, TypeInfo::Kind::kOptional);
  ASSERT_TRUE(in[1].type.inner && in[1].type.inner->inner);
  EXPECT_EQ(in[1].type.inner->kind, TypeInfo::Kind::kSequence);
  EXPECT_EQ(in[1].type.inner->inner->elem_type, ir::DataType::kInt64);
  EXPECT_EQ(in[2].type.kind, TypeInfo::Kind::kMap);
  EXPECT_EQ(in[2].type.elem_type, ir::DataType::kString);
  ASSERT_TRUE(in[2].type.inner);
  EXPECT_EQ(in[2].type.inner->elem_type, ir::DataType::kFloat32);
  EXPECT_EQ(in[3].type.kind, TypeInfo::Kind::kSparseTensor);
  ASSERT_EQ(in[3].type.shape.dims.size(), 2u);
  EXPECT_EQ(in[3].type.shape.dims[1].value, 20);
}

const ir::Attribute& OnlyAttribute(const Result<ir::Model>& model) {
  return model->graph.nodes.at(0).attributes.at(0);
}

TEST(Reader, ScalarAndListAttributes) {
  std::string node = MakeNode("Op", {}, {"y"},
                              {AttrFloat("f", 1.5f), AttrInt("i", -7), AttrString("s", std::string("a\0b", 3)),
                               AttrFloats("fs", {1.f, 2.f}), AttrInts("is", {-1, 0, 1LL << 40}),
                               AttrStrings("ss", {"x", "", "z"})});
  std::string bytes = MakeModel(MakeGraph("g", {node}, {}, {}));
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto& a = model->graph.nodes[0].attributes;
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].type, AttributeType::kFloat);
  EXPECT_EQ(a[0].f, 1.5f);
  EXPECT_EQ(a[1].type, AttributeType::kInt);
  EXPECT_EQ(a[1].i, -7);
  EXPECT_EQ(a[2].s, std::string("a\0b", 3));
  EXPECT_EQ(a[3].type, AttributeType::kFloats);
  EXPECT_EQ(a[3].floats, (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(a[4].ints, (std::vector<int64_t>{-1, 0, 1LL << 40}));
  EXPECT_EQ(a[5].strings, (std::vector<std::string>{"x", "", "z"}));
}

TEST(Reader, PackedAttributeListsAreAcceptedToo) {
  std::string attr = AttrHeader("p", 7).PackedVarints(field::attr::kInts, {3, -4}).str();
  std::string fl = AttrHeader("q", 6).PackedFloats(field::attr::kFloats, {0.25f}).UnpackedFloats(7, {0.5f}).str();
  std::string bytes = MakeModel(MakeGraph("g", {MakeNode("Op", {}, {"y"}, {attr, fl})}, {}, {}));
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->graph.nodes[0].attributes[0].ints, (std::vector<int64_t>{3, -4}));
  EXPECT_EQ(model->graph.nodes[0].attributes[1].floats, (std::vector<float>{0.25f, 0.5f}));
}

TEST(Reader, TensorGraphSparseAndTypeAttributes) {
  std::string t = MakeFloatTensor("t", {2}, {1.f, 2.f});
  std::string body = MakeGraph("body", {MakeNode("Identity", {"a"}, {"b"})}, {MakeValueInfo("a", 1, {1})},
                               {MakeValueInfo("b", 1, {1})});
  std::string sp = MakeSparseTensor(MakeFloatTensor("sv", {1}, {3.f}), MakeTensor("", 7, {1}, RawBytes<int64_t>({2})),
                                    {4});
  std::string node =
      MakeNode("If", {"c"}, {"y"},
               {AttrTensor("t", t), AttrGraph("then_branch", body), AttrGraphs("gs", {body, body}),
                AttrTensors("ts", {t, t, t}), AttrSparseTensor("sp", sp), AttrSparseTensors("sps", {sp}),
                AttrTypeProto("tp", MakeTensorType(1, {2})), AttrTypeProtos("tps", {MakeSequenceType(MakeTensorType(1, {}))})});
  std::string bytes = MakeModel(MakeGraph("g", {node}, {}, {}));
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const auto& a = model->graph.nodes[0].attributes;
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a[0].type, AttributeType::kTensor);
  EXPECT_EQ(a[0].t.name, "t");
  EXPECT_EQ(a[0].t.bytes.size(), 8u);
  EXPECT_EQ(a[1].type, AttributeType::kGraph);
  ASSERT_TRUE(a[1].g);
  EXPECT_EQ(a[1].g->name, "body");
  EXPECT_EQ(a[1].g->nodes[0].op_type, "Identity");
  EXPECT_EQ(a[2].graphs.size(), 2u);
  EXPECT_EQ(a[3].tensors.size(), 3u);
  EXPECT_EQ(a[4].type, AttributeType::kSparseTensor);
  EXPECT_EQ(a[4].sparse_tensor.dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(a[5].sparse_tensors.size(), 1u);
  EXPECT_EQ(a[6].tp.kind, TypeInfo::Kind::kTensor);
  ASSERT_EQ(a[7].type_protos.size(), 1u);
  EXPECT_EQ(a[7].type_protos[0].kind, TypeInfo::Kind::kSequence);
}

TEST(Reader, AttributeTypeIsInferredWhenOmitted) {
  // IR version 1 files have no `type` field.
  struct Case {
    std::string attr;
    AttributeType want;
  };
  std::vector<Case> cases = {
      {ProtoWriter().Bytes(1, "a").Float(field::attr::kF, 2.f), AttributeType::kFloat},
      {ProtoWriter().Bytes(1, "a").Varint(field::attr::kI, 3), AttributeType::kInt},
      {ProtoWriter().Bytes(1, "a").Bytes(field::attr::kS, "x"), AttributeType::kString},
      {ProtoWriter().Bytes(1, "a").Message(field::attr::kT, MakeFloatTensor("", {}, {1.f})), AttributeType::kTensor},
      {ProtoWriter().Bytes(1, "a").Message(field::attr::kG, MakeGraph("b", {}, {}, {})), AttributeType::kGraph},
      {ProtoWriter().Bytes(1, "a").UnpackedFloats(field::attr::kFloats, {1.f}), AttributeType::kFloats},
      {ProtoWriter().Bytes(1, "a").UnpackedVarints(field::attr::kInts, {1, 2}), AttributeType::kInts},
      {ProtoWriter().Bytes(1, "a").Strings(field::attr::kStrings, {"q"}), AttributeType::kStrings},
      {ProtoWriter().Bytes(1, "a").Message(field::attr::kTp, MakeTensorType(1, {})), AttributeType::kTypeProto},
      {ProtoWriter().Bytes(1, "a"), AttributeType::kUndefined},
  };
  for (const Case& c : cases) {
    std::string bytes = ModelWithAttribute(c.attr);
    auto model = ReadBytes(bytes);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_EQ(OnlyAttribute(model).type, c.want) << ir::AttributeTypeName(c.want);
  }
}

TEST(Reader, AmbiguousUntypedAttributeIsRefused) {
  std::string bytes = ModelWithAttribute(ProtoWriter().Bytes(1, "a").Varint(field::attr::kI, 1).Float(field::attr::kF, 1));
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "attribute 'a' has no type and sets values");
}

TEST(Reader, UnknownAttributeTypeIsRefused) {
  std::string bytes = ModelWithAttribute(AttrHeader("a", 99).str());
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "attribute 'a' has type 99");
}

TEST(Reader, FunctionsWithAllFields) {
  std::string body = MakeNode("Mul", {"x", "x"}, {"y"}, {AttrRef("alpha", 1, "scale")});
  FunctionParts parts;
  parts.attributes = {"scale"};
  parts.attribute_protos = {AttrFloat("beta", 0.5f)};
  parts.value_infos = {MakeValueInfo("y", 1, {"N"})};
  parts.overload = "o1";
  parts.doc_string = "squares";
  std::string fn = MakeFunction("Square", "custom", {"x"}, {"y"}, {body}, {{"", 18}}, parts);
  ModelParts mp;
  mp.functions = {fn};
  std::string bytes = MakeModel(MakeGraph("g", {MakeNode("Square", {"a"}, {"b"}, {}, {.domain = "custom"})}, {}, {}),
                                {{"", 18}, {"custom", 1}}, mp);
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_EQ(model->functions.size(), 1u);
  const ir::Function& f = model->functions[0];
  EXPECT_EQ(f.name, "Square");
  EXPECT_EQ(f.domain, "custom");
  EXPECT_EQ(f.overload, "o1");
  EXPECT_EQ(f.doc_string, "squares");
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(f.attributes, (std::vector<std::string>{"scale"}));
  ASSERT_EQ(f.attribute_defaults.size(), 1u);
  EXPECT_EQ(f.attribute_defaults[0].f, 0.5f);
  ASSERT_EQ(f.nodes.size(), 1u);
  EXPECT_EQ(f.nodes[0].attributes[0].ref_attr_name, "scale");
  EXPECT_EQ(f.nodes[0].attributes[0].type, AttributeType::kFloat);
  ASSERT_EQ(f.opset_imports.size(), 1u);
  EXPECT_EQ(f.opset_imports[0].version, 18);
  ASSERT_EQ(f.value_infos.size(), 1u);
}

TEST(Reader, UnknownFieldsOfEveryWireTypeAreSkipped) {
  ProtoWriter unknown;
  unknown.Varint(1000, 12345).Fixed32(1001, 7).Fixed64(1002, 8).Bytes(1003, "ignored");
  std::string node = MakeNode("Relu", {"x"}, {"y"}) + unknown.str();
  std::string tensor = MakeFloatTensor("w", {1}, {2.f}) + unknown.str();
  std::string graph = MakeGraph("g", {node}, {}, {}, {.initializers = {tensor}}) + unknown.str();
  std::string bytes = unknown.str() + MakeModel(graph) + unknown.str();
  auto model = ReadBytes(bytes);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(model->graph.nodes[0].op_type, "Relu");
  EXPECT_EQ(model->graph.initializers[0].bytes.size(), 4u);
}

TEST(Reader, ModelWithoutGraphIsRefused) {
  std::string bytes = ProtoWriter().Varint(field::model::kIrVersion, 8);
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "the model has no graph");
}

TEST(Reader, ReadModelMapsTheFileAndKeepsItAlive) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "vigil_reader_map";
  std::string bytes = MakeTinyModel();
  WriteFile(dir / "tiny.onnx", bytes);
  ir::Tensor w;
  {
    auto model = ReadModel((dir / "tiny.onnx").string());
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    ASSERT_TRUE(model->file);
    w = model->graph.initializers.at(0);
    const uint8_t* begin = model->file->bytes().data();
    EXPECT_GE(w.bytes.data(), begin);
    EXPECT_LE(w.bytes.data() + w.bytes.size(), begin + model->file->size());
    EXPECT_EQ(w.storage, ir::Tensor::Storage::kRawInPlace);
  }
  // The model is gone; the tensor's keep_alive still holds the mapping.
  ASSERT_EQ(w.bytes.size(), 8u);
  float v[2];
  std::memcpy(v, w.bytes.data(), 8);
  EXPECT_EQ(v[1], -1.0f);
}

TEST(Reader, MissingFileIsAnEnvironmentError) {
  auto model = ReadModel("/nonexistent/vigil/model.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), ErrorCode::kEnvironment);
}

}  // namespace
}  // namespace vigil::onnx::test
