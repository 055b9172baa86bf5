// Exit codes and help, common to every command: 0 success, 1 diagnosed
// problem, 2 usage error, 3 internal error, never a signal; and no byte from
// a file reaches the terminal raw.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_vigil.h"
#include "support/onnx_builder.h"

namespace vigil::testing {
namespace {

TEST(CliConventions, HelpExitsZeroAndListsCommands) {
  CommandResult r = RunVigil({"--help"});
  ASSERT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos);
  EXPECT_NE(r.out.find("doctor"), std::string::npos);
  EXPECT_NE(r.out.find("Exit codes"), std::string::npos);
}

TEST(CliConventions, EachCommandHasHelp) {
  for (const char* cmd : {"inspect", "doctor"}) {
    CommandResult r = RunVigil({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  }
}

TEST(CliConventions, UsageErrorsExitTwo) {
  EXPECT_EQ(RunVigil({}).exit_code, 2);
  EXPECT_EQ(RunVigil({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(RunVigil({"inspect"}).exit_code, 2);  // MODEL missing
  EXPECT_EQ(RunVigil({"inspect", "a.onnx", "--no-such-flag"}).exit_code, 2);
}

TEST(CliConventions, VersionFlag) {
  CommandResult r = RunVigil({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("vigil "), std::string::npos);
}

// The bytes a hostile file can put in a name: a screen clear, a window title
// (OSC, ended by BEL), a C1 CSI, a carriage return, NUL-free invalid UTF-8.
const std::string kHostile = "x\x1b[2J\x1b]0;owned\x07\xc2\x9b" "31m\r\xff\xc0\xaf";

// Nothing but newline and tab below 0x20, no DEL, no ESC, valid UTF-8.
::testing::AssertionResult Clean(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      return ::testing::AssertionFailure() << "control byte " << int(c) << " at " << i << " in:\n" << text;
    }
  }
  // Valid UTF-8: nlohmann's strict parser of a JSON string holding it.
  try {
    (void)nlohmann::json::parse(nlohmann::json(text).dump());
  } catch (const nlohmann::json::exception& e) {
    return ::testing::AssertionFailure() << "invalid UTF-8: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

TEST(CliConventions, NamesFromAHostileModelNeverReachTheTerminalRaw) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("vigil_hostile_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  NodeOptions node;
  node.name = "node" + kHostile;
  const std::string input = "in" + kHostile, output = "out" + kHostile;
  const std::string graph = MakeGraph("g" + kHostile, {MakeNode("Relu", {input}, {output}, {}, node)},
                                      {MakeValueInfo(input, 1, {1, 4})}, {MakeValueInfo(output, 1, {1, 4})});
  const fs::path model = dir / "hostile.onnx";
  std::ofstream(model, std::ios::binary) << MakeModel(graph, {{"", 17}});

  struct Case {
    std::vector<std::string> args;
    bool names_shown;  // the output names the model's input, node or output
  };
  const std::vector<Case> cases = {
      {{"inspect", model.string()}, true},
      {{"inspect", model.string(), "--json"}, true},
      {{"inspect", model.string(), "--shapes"}, true},
      {{"run", model.string()}, true},  // the input is missing: a diagnosis naming it
      {{"run", model.string(), "--json"}, true},
      {{"check", model.string()}, true},
      {{"bench", model.string(), "--iters", "1"}, false},  // random inputs: it runs
  };
  for (const Case& c : cases) {
    CommandResult r = RunVigil(c.args);
    const std::string what = c.args[0] + (c.args.size() > 2 ? " " + c.args[2] : "");
    ASSERT_FALSE(r.signaled) << what;
    EXPECT_NE(r.exit_code, 3) << what << "\n" << r.err;
    EXPECT_TRUE(Clean(r.out)) << what;
    EXPECT_TRUE(Clean(r.err)) << what;
    const std::string all = r.out + r.err;  // text escapes ESC as \x1b; JSON as \u001b
    if (c.names_shown) {  // still there, escaped, so the user can tell them apart
      EXPECT_TRUE(all.find("\\x1b[2J") != std::string::npos || all.find("\\u001b[2J") != std::string::npos)
          << what << "\n" << all;
    }
    if (std::find(c.args.begin(), c.args.end(), "--json") != c.args.end()) {
      EXPECT_NO_THROW((void)nlohmann::json::parse(r.out)) << what << "\n" << r.out;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vigil::testing
