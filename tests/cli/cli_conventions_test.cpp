// Exit codes and help, common to every command: 0 success, 1 diagnosed
// problem, 2 usage error, 3 internal error, never a signal.
#include <gtest/gtest.h>

#include "run_vigil.h"

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

}  // namespace
}  // namespace vigil::testing
