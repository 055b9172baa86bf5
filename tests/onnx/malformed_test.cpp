// Hostile and broken files: every one gets a Status (or, by chance, a valid
// model), never a crash, a hang or a giant allocation. Run under ASan+UBSan.
#include "base/diagnosis_render.h"
#include "read_helpers.h"

namespace vigil::onnx::test {
namespace {

// A small model touching most readers: typed and raw tensors, a subgraph,
// a function, types, sparse initializer.
std::string RichModel() {
  std::string body = MakeGraph("body", {MakeNode("Identity", {"a"}, {"b"})}, {MakeValueInfo("a", 1, {1})},
                               {MakeValueInfo("b", 1, {"N"})});
  std::string sparse = MakeSparseTensor(MakeFloatTensor("sp", {1}, {1.f}), MakeTensor("", 7, {1}, RawBytes<int64_t>({2})), {3});
  std::string node = MakeNode("If", {"c"}, {"y"},
                              {AttrGraph("then_branch", body), AttrInts("ints", {1, 2}), AttrFloats("fs", {0.5f}),
                               AttrTensor("t", MakeTensorHeader("t", 7, {2}).PackedVarints(field::tensor::kInt64Data, {1, 300}))});
  std::string g = MakeGraph("g", {node}, {MakeValueInfoOfType("c", MakeSequenceType(MakeTensorType(9, {})))},
                            {MakeValueInfo("y", 1, {"N"})},
                            {.initializers = {MakeTensorHeader("f", 1, {2}).PackedFloats(field::tensor::kFloatData, {1, 2})},
                             .sparse_initializers = {sparse}});
  ModelParts parts;
  parts.functions = {MakeFunction("F", "d", {"x"}, {"y"}, {MakeNode("Relu", {"x"}, {"y"})}, {{"", 18}})};
  return MakeModel(g, {{"", 18}}, parts);
}

// What a user would see of the diagnosis: no control byte but the newlines
// between lines (a flipped bit can put any byte in a name the message
// quotes), and JSON that a strict serialiser accepts (valid UTF-8).
::testing::AssertionResult PrintableAsShown(const Status& status) {
  const std::string text = RenderText(status.diagnosis());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) {
      return ::testing::AssertionFailure() << "control byte " << int(c) << " at " << i << " in:\n" << text;
    }
  }
  try {
    (void)ToJson(status).dump();  // throws on invalid UTF-8
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "JSON: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

void ExpectEveryResultIsStatusOrModel(const std::string& bytes) {
  auto m = ReadBytes(bytes);
  if (!m.ok()) {
    EXPECT_FALSE(m.status().summary().empty());
    EXPECT_NE(m.status().code(), ErrorCode::kInternal) << m.status().ToString();
    EXPECT_TRUE(PrintableAsShown(m.status()));
  }
}

TEST(Malformed, BaseModelsAreValid) {
  std::string tiny = MakeTinyModel(), rich = RichModel();
  ASSERT_TRUE(ReadBytes(tiny).ok()) << ReadBytes(tiny).status().ToString();
  ASSERT_TRUE(ReadBytes(rich).ok()) << ReadBytes(rich).status().ToString();
}

TEST(Malformed, TruncationAtEveryOffset) {
  for (const std::string& full : {MakeTinyModel(), RichModel()}) {
    size_t failures = 0;
    for (size_t n = 0; n < full.size(); ++n) {
      std::string cut = full.substr(0, n);
      auto m = ReadBytes(cut);
      if (!m.ok()) {
        ++failures;
        EXPECT_EQ(m.status().code(), ErrorCode::kInvalidModel) << n << ": " << m.status().ToString();
      }
    }
    // Most cuts land inside the graph message, which then runs past the end.
    EXPECT_GT(failures, full.size() / 2);
  }
}

TEST(Malformed, TruncatedGraphNamesTheProblemAndOffset) {
  std::string full = MakeTinyModel();
  std::string cut = full.substr(0, full.size() - 40);
  auto m = ReadBytes(cut);
  EXPECT_READ_ERROR(m, ErrorCode::kInvalidModel, "runs past the end of the message");
  EXPECT_NE(m.status().summary().find("at byte"), std::string::npos);
}

TEST(Malformed, EverySingleBitFlip) {
  for (const std::string& base : {MakeTinyModel(), RichModel()}) {
    for (size_t bit = 0; bit < base.size() * 8; ++bit) {
      std::string flipped = base;
      flipped[bit / 8] = static_cast<char>(flipped[bit / 8] ^ (1 << (bit % 8)));
      ExpectEveryResultIsStatusOrModel(flipped);
    }
  }
}

TEST(Malformed, BadVarints) {
  std::string eleven = std::string(1, '\x08') + std::string(10, '\x80') + std::string(1, '\x00');
  EXPECT_READ_ERROR(ReadBytes(eleven), ErrorCode::kInvalidModel, "varint at byte 1 overflows 64 bits");
  std::string overflow = std::string(1, '\x08') + std::string(9, '\xFF') + std::string(1, '\x7F');
  EXPECT_READ_ERROR(ReadBytes(overflow), ErrorCode::kInvalidModel, "overflows 64 bits");
  std::string truncated = "\x08\xFF";
  EXPECT_READ_ERROR(ReadBytes(truncated), ErrorCode::kInvalidModel, "truncated varint at byte 1");
}

TEST(Malformed, LengthPastTheEnd) {
  std::string bytes = ProtoWriter().Tag(field::model::kGraph, Wire::kLen).RawVarint(1000).Raw("abc");
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "field 7 at byte 0: length 1000 runs past the end");
  std::string inner = MakeModel(ProtoWriter().Tag(field::graph::kNode, Wire::kLen).RawVarint(50).Raw("x"));
  auto m = ReadBytes(inner);
  EXPECT_READ_ERROR(m, ErrorCode::kInvalidModel, "graph: field 1 at byte");
}

TEST(Malformed, WireTypes3467AreRefusedWithTheirNumber) {
  for (uint32_t wire : {3u, 4u, 6u, 7u}) {
    std::string bytes = ProtoWriter().Varint(1, 8).RawVarint((100u << 3) | wire).RawVarint(0);
    auto m = ReadBytes(bytes);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().summary().find("wire type " + std::to_string(wire)), std::string::npos)
        << m.status().summary();
    // The same inside a node.
    std::string node = ProtoWriter().Bytes(field::node::kOpType, "Relu").RawVarint((9u << 3) | wire).RawVarint(0);
    std::string nested = MakeModel(MakeGraph("g", {node}, {}, {}));
    auto n = ReadBytes(nested);
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.status().summary().find("graph.node[0]"), std::string::npos) << n.status().summary();
  }
}

TEST(Malformed, WrongWireTypeForAKnownField) {
  std::string bytes = ProtoWriter().Varint(field::model::kGraph, 5);
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel,
                    "field 'graph' (number 7) has wire type varint, expected length-delimited");
}

TEST(Malformed, NegativeDimsAndOverflowInInitializers) {
  std::string neg = ModelWithInitializer(MakeTensor("w", 1, {-1}, ""));
  EXPECT_READ_ERROR(ReadBytes(neg), ErrorCode::kInvalidModel, "graph.initializer[0]: tensor 'w' has negative dim -1");
  std::string ovf = ModelWithInitializer(MakeTensor("w", 1, {INT64_MAX, INT64_MAX, 4}, ""));
  EXPECT_READ_ERROR(ReadBytes(ovf), ErrorCode::kInvalidModel, "overflows");
}

TEST(Malformed, HugeClaimedCounts) {
  // A packed int64 run claiming far more than the dims: counted, not allocated.
  std::string t = MakeTensorHeader("w", 7, {1000000000000LL}).PackedVarints(field::tensor::kInt64Data, {1});
  EXPECT_READ_ERROR(ReadBytes(ModelWithInitializer(t)), ErrorCode::kInvalidModel, "int64_data has 1 entries");
  // A repeated field past the configured limit.
  ReadOptions options;
  options.limits.max_repeated = 3;
  std::string many = MakeModel(MakeGraph("g", {MakeNode("A", {}, {"a"}), MakeNode("B", {}, {"b"}),
                                               MakeNode("C", {}, {"c"}), MakeNode("D", {}, {"d"})}, {}, {}));
  EXPECT_READ_ERROR(ReadBytes(many, options), ErrorCode::kInvalidModel, "field 'node' repeats more than 3 times");
  std::string ints = ModelWithAttribute(AttrHeader("a", 7).PackedVarints(field::attr::kInts, {1, 2, 3, 4}).str());
  EXPECT_READ_ERROR(ReadBytes(ints, options), ErrorCode::kInvalidModel, "field 'ints' has 0 + 4 entries, more than 3");
}

TEST(Malformed, StructureMemoryIsBudgeted) {
  // 1000 empty attributes: 2 bytes of file each, ~900 bytes of IR each.
  std::vector<std::string> empty(1000, std::string());
  std::string bytes = MakeModel(MakeGraph("g", {MakeNode("Op", {}, {"y"}, empty)}, {}, {}));
  ReadOptions options;
  options.limits.max_structure_bytes = 100000;
  EXPECT_READ_ERROR(ReadBytes(bytes, options), ErrorCode::kInvalidModel, "the model's structure needs more than 100000 bytes");
  EXPECT_TRUE(ReadBytes(bytes).ok()) << "the default budget has room for it";
}

// Nested If nodes, each holding the next graph in its then_branch.
std::string NestedGraphs(int depth) {
  std::string g = MakeGraph("leaf", {}, {}, {});
  for (int i = 0; i < depth; ++i) g = MakeGraph("g", {MakeNode("If", {"c"}, {"y"}, {AttrGraph("then_branch", g)})}, {}, {});
  return MakeModel(g);
}

TEST(Malformed, NestedSubgraphsWithinTheLimitRead) {
  std::string bytes = NestedGraphs(20);
  EXPECT_TRUE(ReadBytes(bytes).ok()) << ReadBytes(bytes).status().ToString();
}

TEST(Malformed, SubgraphNestingBombIsRefused) {
  std::string bytes = NestedGraphs(40);
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "graphs nest deeper than 32 levels");
}

TEST(Malformed, DeepTypeNestingIsRefusedWithoutStackOverflow) {
  // 100000 nested sequence types: a recursion bomb for an unbounded reader.
  // Built from the inside out in linear time: each level is a header
  // "TypeProto.sequence_type{ Sequence.elem_type{ <inner> } }".
  std::string leaf = MakeTensorType(1, {});
  std::vector<std::string> headers;
  size_t inner = leaf.size();
  for (int i = 0; i < 100000; ++i) {
    std::string elem = ProtoWriter().Tag(1, Wire::kLen).RawVarint(inner).str();
    std::string seq = ProtoWriter().Tag(field::type::kSequenceType, Wire::kLen).RawVarint(inner + elem.size()).str();
    inner += elem.size() + seq.size();
    headers.push_back(seq + elem);
  }
  std::string type;
  type.reserve(inner);
  for (auto it = headers.rbegin(); it != headers.rend(); ++it) type += *it;
  type += leaf;
  std::string bytes = MakeModel(MakeGraph("g", {}, {MakeValueInfoOfType("x", type)}, {}));
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "messages nest deeper than 100 levels");
}

TEST(Malformed, RankLimitInShapes) {
  std::vector<DimSpec> dims(65, int64_t{1});
  std::string bytes = MakeModel(MakeGraph("g", {}, {MakeValueInfo("x", 1, Dims(dims))}, {}));
  EXPECT_READ_ERROR(ReadBytes(bytes), ErrorCode::kInvalidModel, "shape has more than 64 dims");
}

TEST(Malformed, GarbageIsNotAModel) {
  std::string text = "this is not an onnx file\n";
  auto m = ReadBytes(text);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kInvalidModel);
  EXPECT_FALSE(m.status().diagnosis().fixes.empty());
  std::string empty;
  EXPECT_READ_ERROR(ReadBytes(empty), ErrorCode::kInvalidModel, "the model has no graph");
}

TEST(Malformed, Int32FieldsOutOfRange) {
  std::string t = ProtoWriter().Varint(field::tensor::kDataType, 1LL << 40).Bytes(field::tensor::kRawData, "");
  EXPECT_READ_ERROR(ReadBytes(ModelWithInitializer(t)), ErrorCode::kInvalidModel,
                    "field 'data_type' holds 1099511627776, which does not fit int32");
}

}  // namespace
}  // namespace vigil::onnx::test
