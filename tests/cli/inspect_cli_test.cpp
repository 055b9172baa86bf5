// `vigil inspect`: the bundled example, and a corpus of malformed models that
// must each give exit 1 with a message naming what is wrong, never a signal.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_vigil.h"
#include "support/onnx_builder.h"

namespace vigil::testing {
namespace {

namespace fs = std::filesystem;

const std::string kExample = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn.onnx";

fs::path Scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("vigil_inspect_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Writes `bytes` as a model and expects exit 1 with `fragment` in the message.
void ExpectDiagnosed(const std::string& name, const std::string& bytes, const std::string& fragment) {
  fs::path p = Scratch(name);
  WriteFile(p, bytes);
  CommandResult r = RunVigil({"inspect", p.string()});
  ASSERT_FALSE(r.signaled) << name << " killed by signal " << r.signal;
  EXPECT_EQ(r.exit_code, 1) << name << "\n" << r.out << r.err;
  EXPECT_NE(r.err.find("error [InvalidModel]"), std::string::npos) << name << "\n" << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << name << ": wanted '" << fragment << "' in\n" << r.err;
}

TEST(InspectCli, ExampleJsonDescribesTheModel) {
  CommandResult r = RunVigil({"inspect", "--json", kExample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "image");
  EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(j["inputs"][0]["shape"], nlohmann::json::parse(R"(["N",3,32,32])"));
  EXPECT_EQ(j["outputs"][0]["name"], "probs");
  EXPECT_EQ(j["outputs"][0]["shape"], nlohmann::json::parse(R"(["N",10])"));
  EXPECT_EQ(j["opsets"], nlohmann::json::parse(R"({"":17})"));
  EXPECT_EQ(j["ir_version"], 8);
  EXPECT_EQ(j["producer"], "vigil-examples");
  EXPECT_EQ(j["nodes"], 9);
  EXPECT_EQ(j["ops"]["Conv"], 2);
  EXPECT_EQ(j["ops"]["Relu"], 2);
  EXPECT_EQ(j["ops"]["Softmax"], 1);
  // conv1 8x3x3x3+8, conv2 16x8x3x3+16, fc 10x16+10
  EXPECT_EQ(j["parameters"], 216 + 8 + 1152 + 16 + 160 + 10);
  EXPECT_EQ(j["parameter_bytes"], 4 * (216 + 8 + 1152 + 16 + 160 + 10));
}

TEST(InspectCli, ExampleText) {
  CommandResult r = RunVigil({"inspect", kExample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("float32[N,3,32,32]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ai.onnx 17"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parameters: 1562"), std::string::npos) << r.out;
}

TEST(InspectCli, PartitionOnTheCpu) {
  CommandResult r = RunVigil({"inspect", kExample, "--backend", "cpu"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("partition on cpu (after constant folding): 9 cpu\n"), std::string::npos) << r.out;
  CommandResult j = RunVigil({"inspect", kExample, "--backend", "cpu", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  nlohmann::json parsed = nlohmann::json::parse(j.out);
  EXPECT_EQ(parsed["partition"]["nodes_per_backend"]["cpu"], 9);
  EXPECT_TRUE(parsed["partition"]["fallbacks"].empty());
}

TEST(InspectCli, PartitionOnCudaWithoutAGpuIsDiagnosed) {
  CommandResult r = RunVigil({"inspect", kExample, "--backend", "cuda"});
  if (r.exit_code == 0) {
    // A GPU is usable: every node of the example runs there.
    EXPECT_NE(r.out.find("partition on cuda (after constant folding): 9 cuda\n"), std::string::npos) << r.out;
    return;
  }
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error [Environment]"), std::string::npos) << r.err;
}

// Ops vigil has no schema for are listed with the reason, before any session.
TEST(InspectCli, OpsOutsideTheCatalogueAreListedWithWhy) {
  NodeOptions typo, tfidf, contrib;
  typo.name = "typo";
  tfidf.name = "tfidf";
  contrib.name = "fused";
  contrib.domain = "com.microsoft";
  const std::string graph =
      MakeGraph("g",
                {MakeNode("Relu", {"x"}, {"a"}), MakeNode("Rleu", {"a"}, {"b"}, {}, typo),
                 MakeNode("MaxRoiPool", {"b"}, {"c"}, {}, tfidf),
                 MakeNode("FusedGemm", {"c"}, {"y"}, {}, contrib)},
                {MakeValueInfo("x", 1, {1, 4})}, {MakeValueInfo("y", 1, {1, 4})});
  const fs::path p = Scratch("unknown_ops.onnx");
  WriteFile(p, MakeModel(graph, {{"", 17}, {"com.microsoft", 1}}));
  CommandResult text = RunVigil({"inspect", p.string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("not in vigil's op catalogue (3; a session cannot be created):"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("not an ONNX operator (nearest: Relu)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("an ONNX operator vigil does not implement yet"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("com.microsoft::FusedGemm"), std::string::npos) << text.out;

  CommandResult js = RunVigil({"inspect", p.string(), "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const nlohmann::json j = nlohmann::json::parse(js.out);
  ASSERT_EQ(j["unsupported_ops"].size(), 3u) << js.out;
  for (const auto& u : j["unsupported_ops"]) EXPECT_NE(u["op"], "Relu");

  CommandResult example = RunVigil({"inspect", kExample, "--json"});  // everything known: an empty list
  EXPECT_TRUE(nlohmann::json::parse(example.out)["unsupported_ops"].empty()) << example.out;
}

TEST(InspectCli, MissingFileIsDiagnosedWithPath) {
  CommandResult r = RunVigil({"inspect", "/nonexistent/model.onnx"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/nonexistent/model.onnx"), std::string::npos) << r.err;
}

TEST(InspectCli, JsonErrorIsJson) {
  CommandResult r = RunVigil({"inspect", "--json", "/nonexistent/model.onnx"});
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["code"], "Environment");
}

TEST(InspectCli, DirectoryIsRefused) {
  CommandResult r = RunVigil({"inspect", fs::temp_directory_path().string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

TEST(InspectCli, EmptyFileIsNotAModel) {
  ExpectDiagnosed("empty.onnx", "", "no graph");
}

TEST(InspectCli, TextFileIsNotAModel) {
  fs::path p = Scratch("notes.onnx");
  WriteFile(p, "this is not an ONNX model, just some text\n");
  CommandResult r = RunVigil({"inspect", p.string()});
  ASSERT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

TEST(InspectCli, Cycle) {
  std::string g = MakeGraph("loopy",
                            {MakeNode("Add", {"x", "b"}, {"a"}, {}, {.name = "add"}),
                             MakeNode("Neg", {"a"}, {"b"}, {}, {.name = "neg"}),
                             MakeNode("Identity", {"b"}, {"y"})},
                            {MakeValueInfo("x", 1, {2})}, {MakeValueInfo("y", 1, {2})});
  ExpectDiagnosed("cycle.onnx", MakeModel(g), "form a cycle");
}

TEST(InspectCli, DuplicateOutputs) {
  std::string g = MakeGraph("dup",
                            {MakeNode("Relu", {"x"}, {"y"}, {}, {.name = "first"}),
                             MakeNode("Neg", {"x"}, {"y"}, {}, {.name = "second"})},
                            {MakeValueInfo("x", 1, {2})}, {MakeValueInfo("y", 1, {2})});
  ExpectDiagnosed("dup.onnx", MakeModel(g), "value 'y' in graph 'dup' is defined twice");
}

TEST(InspectCli, UndefinedInput) {
  std::string g = MakeGraph("g", {MakeNode("Relu", {"ghost"}, {"y"}, {}, {.name = "r"})},
                            {MakeValueInfo("x", 1, {2})}, {MakeValueInfo("y", 1, {2})});
  ExpectDiagnosed("undefined.onnx", MakeModel(g), "input 0 'ghost' is not defined");
}

TEST(InspectCli, MissingOpsetImport) {
  std::string g = MakeGraph("g", {MakeNode("Relu", {"x"}, {"y"}, {}, {.name = "r", .domain = "com.example"})},
                            {MakeValueInfo("x", 1, {2})}, {MakeValueInfo("y", 1, {2})});
  ExpectDiagnosed("opset.onnx", MakeModel(g), "domain 'com.example', which the model does not import");
}

TEST(InspectCli, UnknownDtype) {
  std::string g = MakeGraph("g", {MakeNode("Relu", {"x"}, {"y"})}, {MakeValueInfo("x", 77, {2})},
                            {MakeValueInfo("y", 1, {2})});
  ExpectDiagnosed("dtype.onnx", MakeModel(g), "77");
}

TEST(InspectCli, NegativeInitializerDim) {
  std::string g = MakeGraph("g", {MakeNode("Add", {"x", "w"}, {"y"})}, {MakeValueInfo("x", 1, {2})},
                            {MakeValueInfo("y", 1, {2})},
                            {.initializers = {MakeTensor("w", 1, {-2}, std::string(8, '\0'))}});
  ExpectDiagnosed("negdim.onnx", MakeModel(g), "'w'");
}

TEST(InspectCli, RawDataSizeMismatch) {
  std::string g = MakeGraph("g", {MakeNode("Add", {"x", "w"}, {"y"})}, {MakeValueInfo("x", 1, {2})},
                            {MakeValueInfo("y", 1, {2})},
                            {.initializers = {MakeTensor("w", 1, {1000000}, std::string(8, '\0'))}});
  ExpectDiagnosed("short_raw.onnx", MakeModel(g), "'w'");
}

std::string ModelWithExternal(const std::string& location) {
  std::string g = MakeGraph(
      "g", {MakeNode("Add", {"x", "w"}, {"y"})}, {MakeValueInfo("x", 1, {2})}, {MakeValueInfo("y", 1, {2})},
      {.initializers = {MakeExternalTensor("w", 1, {2}, {{"location", location}, {"length", "8"}})}});
  return MakeModel(g);
}

TEST(InspectCli, ExternalDataEscapesAreRefused) {
  ExpectDiagnosed("ext_abs.onnx", ModelWithExternal("/etc/passwd"), "/etc/passwd");
  ExpectDiagnosed("ext_dotdot.onnx", ModelWithExternal("../../etc/passwd"), "../../etc/passwd");
}

TEST(InspectCli, MissingExternalDataFileIsAnEnvironmentProblem) {
  fs::path p = Scratch("ext_missing.onnx");
  WriteFile(p, ModelWithExternal("weights.bin"));
  CommandResult r = RunVigil({"inspect", p.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error [Environment]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'weights.bin'"), std::string::npos) << r.err;
}

TEST(InspectCli, ExternalDataInsideDirectoryLoads) {
  fs::path dir = Scratch("extok");
  fs::create_directories(dir);
  WriteFile(dir / "weights.bin", std::string(8, '\1'));
  WriteFile(dir / "model.onnx", ModelWithExternal("weights.bin"));
  CommandResult r = RunVigil({"inspect", "--json", (dir / "model.onnx").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["parameters"], 2);
}

TEST(InspectCli, TruncationsNeverCrash) {
  std::string bytes = ReadAll(kExample);
  ASSERT_GT(bytes.size(), 1000u);
  // Every offset would spawn ~7000 processes; the reader's own tests cover
  // every offset in-process. Here: a spread of offsets through the file.
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    fs::path p = Scratch("trunc.onnx");
    WriteFile(p, bytes.substr(0, cut));
    CommandResult r = RunVigil({"inspect", p.string()});
    ASSERT_FALSE(r.signaled) << "cut at " << cut << ": signal " << r.signal;
    EXPECT_EQ(r.exit_code, 1) << "cut at " << cut << "\n" << r.out;
  }
}

}  // namespace
}  // namespace vigil::testing

namespace vigil::testing {
namespace {

// Loading must not copy weights: a 256 MiB initializer is used in place from
// the mapping, and inspect never touches its pages.
//
// The file is streamed out with its enclosing message lengths computed up
// front, so this test process never holds the weights: a spawned child's
// ru_maxrss starts from its parent's high-water mark.
void WriteLargeModel(const fs::path& path, int64_t floats) {
  const uint64_t data_bytes = static_cast<uint64_t>(floats) * 4;
  ProtoWriter tensor_head = MakeTensorHeader("w", 1, {floats});
  tensor_head.Tag(field::tensor::kRawData, Wire::kLen).RawVarint(data_bytes);
  const uint64_t tensor_len = tensor_head.str().size() + data_bytes;
  ProtoWriter graph_head;
  graph_head.Raw(MakeGraph("big", {MakeNode("Add", {"x", "w"}, {"y"})}, {MakeValueInfo("x", 1, {floats})},
                           {MakeValueInfo("y", 1, {floats})}));
  graph_head.Tag(field::graph::kInitializer, Wire::kLen).RawVarint(tensor_len);
  const uint64_t graph_len = graph_head.str().size() + tensor_len;
  ProtoWriter model_head;
  model_head.Varint(field::model::kIrVersion, 8).Message(field::model::kOpsetImport, MakeOpset("", 17));
  model_head.Tag(field::model::kGraph, Wire::kLen).RawVarint(graph_len);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const ProtoWriter* w : {&model_head, &graph_head, &tensor_head}) out.write(w->str().data(), w->str().size());
  std::string chunk(1 << 20, '\x01');
  for (uint64_t done = 0; done < data_bytes; done += chunk.size()) out.write(chunk.data(), chunk.size());
  ASSERT_TRUE(out.good());
}

TEST(InspectCli, LargeModelIsNotCopied) {
  const int64_t kFloats = int64_t{64} << 20;  // 256 MiB of float32
  fs::path p = Scratch("big.onnx");
  WriteLargeModel(p, kFloats);
  uint64_t file_size = fs::file_size(p);
  CommandResult r = RunVigil({"inspect", "--json", p.string()});
  fs::remove(p);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["parameter_bytes"], kFloats * 4);
  long rss_mib = r.max_rss_kb / 1024;
  std::printf("[ measure  ] file %llu MiB, vigil inspect peak RSS %ld MiB\n",
              static_cast<unsigned long long>(file_size >> 20), rss_mib);
  EXPECT_LT(rss_mib, 96) << "peak RSS suggests the weights were copied or read";
}

}  // namespace
}  // namespace vigil::testing

namespace vigil::testing {
namespace {

TEST(InspectCli, ShapesGivesEveryNodesTypesAndFlops) {
  CommandResult r = RunVigil({"inspect", "--json", "--shapes", kExample});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["node_shapes"].size(), 9u);
  EXPECT_EQ(j["node_shapes"][2]["outputs"][0], "p1: float32[N,8,16,16]");  // MaxPool halves 32x32
  EXPECT_EQ(j["node_shapes"][6]["outputs"][0], "f: float32[N,16]");
  // conv1 2*8*32*32*27, conv2 2*16*16*16*72, fc 2*10*16, with N = 1.
  EXPECT_EQ(j["node_shapes"][0]["flops"], 2 * 8 * 32 * 32 * 27);
  EXPECT_EQ(j["flops"], 2 * 8 * 32 * 32 * 27 + 2 * 16 * 16 * 16 * 72 + 2 * 10 * 16);
}

}  // namespace
}  // namespace vigil::testing
