// `vigil run --isolate` (an isolated session of the library, whose runs
// happen in vigil-worker) end to end on the CPU backend, with the test-only
// fault-injection ops (VIGIL_ENABLE_TEST_OPS=1): a crash in a node becomes a
// report (signal, library + offset, build-id, node, inputs) with exit 1 and
// the parent alive; a hang is killed after --isolate-timeout and names its
// node; a clean model gives the same outputs as a run in-process.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
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

class Isolate : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("VIGIL_ENABLE_TEST_OPS", "1", 1);
    dir_ = fs::temp_directory_path() / ("vigil_isolate_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    WriteInput();
  }
  void TearDown() override {
    unsetenv("VIGIL_ENABLE_TEST_OPS");
    fs::remove_all(dir_);
  }

  // x[1,4] -> Relu 'first' -> <op> 'faulty' -> Neg 'last' -> y
  std::string Model(const std::string& op) {
    NodeOptions test_op;
    test_op.name = "faulty";
    test_op.domain = "ai.vigil.testing";
    NodeOptions first, last;
    first.name = "first";
    last.name = "last";
    std::string graph = MakeGraph("g",
                                  {MakeNode("Relu", {"x"}, {"a"}, {}, first), MakeNode(op, {"a"}, {"b"}, {}, test_op),
                                   MakeNode("Neg", {"b"}, {"y"}, {}, last)},
                                  {MakeValueInfo("x", 1, {1, 4})}, {MakeValueInfo("y", 1, {1, 4})});
    fs::path path = dir_ / (op + ".onnx");
    WriteFile(path, MakeModel(graph, {{"", 17}, {"ai.vigil.testing", 1}}));
    return path.string();
  }

  void WriteInput() {
    const float x[4] = {1.0f, -2.0f, 3.0f, -4.0f};
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }";
    header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes.push_back(static_cast<char>(header.size()));
    bytes.push_back(0);
    bytes += header;
    bytes.append(reinterpret_cast<const char*>(x), sizeof x);
    WriteFile(dir_ / "x.npy", bytes);
  }
  std::string Input() const { return "x=" + (dir_ / "x.npy").string(); }

  fs::path dir_;
};

TEST_F(Isolate, TheTestOpReallyCrashesWithoutIsolation) {
  CommandResult r = RunVigil({"run", Model("Crash"), "--input", Input()});
  ASSERT_TRUE(r.signaled) << r.err;
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST_F(Isolate, CrashBecomesAReportAndExitOne) {
  CommandResult r = RunVigil({"run", Model("Crash"), "--input", Input(), "--isolate"});
  ASSERT_FALSE(r.signaled) << "the parent must survive";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("error [Crashed]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGSEGV (11): address not mapped (SEGV_MAPERR)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fault address: 0x10"), std::string::npos) << r.err;
  // The faulting instruction is in the isolated session's worker (the CPU
  // kernel linked into vigil-worker), with the offset inside it and its
  // build-id.
  EXPECT_NE(r.err.find("faulting library: " + fs::canonical(VIGIL_WORKER_BINARY).string() + " + 0x"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("build-id: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("addr2line -f -C -e "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node: node Crash 'faulty' (#1) on the cpu backend"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("node inputs: a = float32[1,4]"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("error [Crashed]: node Crash 'faulty' died of SIGSEGV in vigil's cpu kernel: a bug in vigil "
                       "— fix: shrink the model to the failing node"),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("rules out a wrongly sized input buffer"), std::string::npos) << r.err;
}

TEST_F(Isolate, CrashReportAsJson) {
  CommandResult r = RunVigil({"run", Model("Crash"), "--input", Input(), "--isolate", "--json"});
  ASSERT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 1);
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["code"], "Crashed");
  bool has_stage = false;
  for (const auto& f : j["error"]["facts"]) has_stage = has_stage || (f["name"] == "stage" && f["value"] == "running the model");
  EXPECT_TRUE(has_stage) << r.out;
}

TEST_F(Isolate, HangIsKilledAndNamesTheNode) {
  CommandResult r = RunVigil({"run", Model("Hang"), "--input", Input(), "--isolate", "--isolate-timeout", "1"});
  ASSERT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the isolated run hung while running the model (node Hang 'faulty' (#1) on the cpu backend)"), std::string::npos)
      << r.err;
}

TEST_F(Isolate, AFailingStatusCrossesTheProcessBoundaryIntact) {
  CommandResult direct = RunVigil({"run", Model("Fail"), "--input", Input()});
  CommandResult isolated = RunVigil({"run", Model("Fail"), "--input", Input(), "--isolate"});
  EXPECT_EQ(direct.exit_code, 3);
  EXPECT_EQ(isolated.exit_code, 3);
  EXPECT_EQ(isolated.err, direct.err);
}

TEST_F(Isolate, CleanRunGivesTheSameOutputs) {
  const fs::path a = dir_ / "direct", b = dir_ / "isolated";
  CommandResult direct = RunVigil({"run", Model("Diverge"), "--input", Input(), "-o", a.string()});
  CommandResult isolated = RunVigil({"run", Model("Diverge"), "--input", Input(), "-o", b.string(), "--isolate"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  ASSERT_EQ(isolated.exit_code, 0) << isolated.err;
  auto summary = [](const std::string& out) { return out.substr(0, out.find("->")); };
  EXPECT_EQ(summary(isolated.out), summary(direct.out));
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_EQ(read(b / "y.npy"), read(a / "y.npy"));
  EXPECT_FALSE(read(a / "y.npy").empty());
}

TEST_F(Isolate, TestOpsAreUnknownWithoutTheVariable) {
  unsetenv("VIGIL_ENABLE_TEST_OPS");
  CommandResult r = RunVigil({"run", Model("Crash"), "--input", Input(), "--isolate"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("test-only fault-injection op"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace vigil::testing
