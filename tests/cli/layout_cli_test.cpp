// `--layout auto|nchw` on the commands that run models: listed in --help,
// checked, and accepted on every backend (it only changes anything for
// float16/bfloat16 convolutions on cuda; those runs are in the GPU tests).
#include <gtest/gtest.h>

#include "run_vigil.h"

namespace vigil::testing {
namespace {

const std::string kModel = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn.onnx";
const std::string kInput = std::string(VIGIL_EXAMPLES_DIR) + "/tiny_cnn_input.npy";

TEST(LayoutCli, HelpListsTheChoices) {
  for (const char* cmd : {"run", "bench"}) {
    CommandResult r = RunVigil({cmd, "--help"});
    ASSERT_FALSE(r.signaled);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--layout"), std::string::npos) << cmd << ":\n" << r.out;
    EXPECT_NE(r.out.find("{auto,nchw}"), std::string::npos) << cmd << ":\n" << r.out;
  }
}

TEST(LayoutCli, UnknownLayoutIsAUsageError) {
  CommandResult r = RunVigil({"run", kModel, "--input", kInput, "--layout", "nhwc4"});
  ASSERT_FALSE(r.signaled);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--layout"), std::string::npos) << r.err;
}

TEST(LayoutCli, BothChoicesRunOnTheCpu) {
  for (const char* layout : {"auto", "nchw"}) {
    CommandResult r = RunVigil({"run", kModel, "--input", kInput, "--backend", "cpu", "--layout", layout});
    ASSERT_FALSE(r.signaled);
    EXPECT_EQ(r.exit_code, 0) << layout << ": " << r.out << r.err;
  }
}

}  // namespace
}  // namespace vigil::testing
