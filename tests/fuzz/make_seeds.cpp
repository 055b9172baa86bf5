// Writes the seed corpora that are made by our own encoders, so no binary
// seeds are committed: `fuzz_make_seeds DIR` fills DIR/onnx_model, DIR/npy,
// DIR/tensor_proto, DIR/ld_so_cache and DIR/isolation_wire. scripts/fuzz.sh
// adds files from the repository and the system (tests/models .npy files,
// ONNX's test data .pb files, real ELF files, /etc/ld.so.cache).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "doctor/resolver/test_util.h"
#include "isolation/isolation_wire.h"
#include "runtime/tensor_file.h"
#include "support/onnx_builder.h"

namespace {

using vigil::ir::DataType;
using vigil::runtime::NamedTensor;
using vigil::runtime::Tensor;
using vigil::testing::WriteFile;

void WriteModels(const std::string& dir) {
  using namespace vigil::testing;  // NOLINT
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
}

// Small tensors of several dtypes and ranks, the empty and the scalar shape.
std::vector<NamedTensor> SampleTensors() {
  const std::vector<std::pair<DataType, std::vector<int64_t>>> kinds = {
      {DataType::kFloat32, {2, 3}}, {DataType::kInt64, {4}},    {DataType::kUint8, {1, 2, 2}},
      {DataType::kFloat16, {3}},    {DataType::kBool, {}},      {DataType::kFloat64, {0, 2}},
      {DataType::kInt8, {2, 1}},    {DataType::kBfloat16, {2}},
  };
  std::vector<NamedTensor> out;
  for (const auto& [dtype, shape] : kinds) {
    auto t = Tensor::Allocate(dtype, shape);
    if (!t.ok()) continue;
    auto* p = static_cast<uint8_t*>(t->raw_data());
    for (size_t i = 0; i < t->byte_size(); ++i) p[i] = static_cast<uint8_t>(i * 37 + 1);
    if (dtype == DataType::kBool) p[0] = 1;
    out.push_back({"t" + std::to_string(out.size()), std::move(*t)});
  }
  return out;
}

void WriteTensorFiles(const std::string& npy_dir, const std::string& pb_dir) {
  std::vector<NamedTensor> tensors = SampleTensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string n = std::to_string(i);
    (void)vigil::runtime::WriteNpy(npy_dir + "/" + n + ".npy", tensors[i].tensor);  // dtypes without .npy form: none
    (void)vigil::runtime::WriteTensorProto(pb_dir + "/" + n + ".pb", tensors[i].tensor, tensors[i].name);
  }
}

void WriteCaches(const std::string& dir) {
  using vigil::doctor::testing::CacheEntry;
  const std::vector<CacheEntry> entries = {
      {"libfoo.so.1", "/opt/a/libfoo.so.1", 0x0303, 0},
      {"libfoo.so.1", "/usr/lib32/libfoo.so.1", 0x0003, 0},
      {"libbar.so.2", "/opt/a/glibc-hwcaps/x86-64-v3/libbar.so.2", 0x0303, (1ull << 62) | 1},
  };
  auto put = [&](const std::string& name, const std::vector<uint8_t>& b) {
    WriteFile(dir + "/" + name, std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  };
  put("new.cache", vigil::doctor::testing::EncodeLdSoCache(entries, false, true));
  put("old.cache", vigil::doctor::testing::EncodeLdSoCache(entries, true, false));
  put("both.cache", vigil::doctor::testing::EncodeLdSoCache(entries, true, true));
}

void WriteWire(const std::string& dir) {
  std::vector<NamedTensor> tensors = SampleTensors();
  WriteFile(dir + "/all.bin", vigil::doctor::EncodeAnswer(tensors));
  WriteFile(dir + "/none.bin", vigil::doctor::EncodeAnswer(std::vector<NamedTensor>{}));
  for (size_t i = 0; i < tensors.size(); i += 3) {
    std::vector<NamedTensor> one;
    one.push_back(std::move(tensors[i]));
    WriteFile(dir + "/one" + std::to_string(i) + ".bin", vigil::doctor::EncodeAnswer(one));
  }
  vigil::Status s = vigil::InvalidInputError("input 'x' has shape [1,3] but the model wants [1,4]");
  s.WithFact("input", "x").WithCause("a batch of another size", "dim 1").WithFix("reshape it");
  WriteFile(dir + "/status.bin", vigil::doctor::EncodeAnswer(vigil::Result<std::vector<NamedTensor>>(s)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  for (const char* sub : {"onnx_model", "npy", "tensor_proto", "ld_so_cache", "isolation_wire"}) {
    std::filesystem::create_directories(dir + "/" + sub);
  }
  WriteModels(dir + "/onnx_model");
  WriteTensorFiles(dir + "/npy", dir + "/tensor_proto");
  WriteCaches(dir + "/ld_so_cache");
  WriteWire(dir + "/isolation_wire");
  return 0;
}
