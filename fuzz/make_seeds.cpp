// Writes a seed corpus for fuzz_reader from the test builder, so no binary
// models are committed: `make_seeds DIR`.
#include <cstdio>
#include <string>

#include "support/onnx_builder.h"

using namespace vigil::testing;  // NOLINT

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::string body = MakeGraph("body", {MakeNode("Identity", {"a"}, {"b"})}, {MakeValueInfo("a", 1, {1})},
                               {MakeValueInfo("b", 1, {"N"})});
  std::string sparse = MakeSparseTensor(MakeFloatTensor("sp", {1}, {1.f}), MakeTensor("", 7, {1}, RawBytes<int64_t>({2})), {3});
  std::string node = MakeNode(
      "If", {"c"}, {"y"},
      {AttrGraph("then_branch", body), AttrInts("ints", {1, 2}), AttrFloats("fs", {0.5f}), AttrStrings("ss", {"a"}),
       AttrTensor("t", MakeTensorHeader("t", 7, {2}).PackedVarints(field::tensor::kInt64Data, {1, 300})),
       AttrTypeProto("tp", MakeMapType(8, MakeOptionalType(MakeTensorType(1, {2}))))});
  std::string g = MakeGraph(
      "g", {node, MakeNode("Relu", {"y"}, {"z"}, {}, {.name = "r", .domain = "ai.onnx"})},
      {MakeValueInfoOfType("c", MakeSequenceType(MakeTensorType(9, {})))}, {MakeValueInfo("z", 1, {"N"})},
      {.initializers = {MakeTensorHeader("f", 1, {2}).PackedFloats(field::tensor::kFloatData, {1, 2}),
                        MakeTensorHeader("h", 10, {2}).UnpackedVarints(field::tensor::kInt32Data, {1, 2}),
                        MakeTensorHeader("s", 8, {1}).Strings(field::tensor::kStringData, {"x"}),
                        MakeTensor("q", 22, {3}, "\x12\x03")},
       .sparse_initializers = {sparse}});
  ModelParts parts;
  parts.functions = {MakeFunction("F", "d", {"x"}, {"y"}, {MakeNode("Relu", {"x"}, {"y"})}, {{"", 18}},
                                  {.attributes = {"a"}, .attribute_protos = {AttrFloat("b", 1)}})};
  parts.metadata_props = {{"k", "v"}};
  WriteFile(dir + "/rich.onnx", MakeModel(g, {{"", 18}, {"d", 1}}, parts));
  WriteFile(dir + "/tiny.onnx", MakeTinyModel());
  return 0;
}
