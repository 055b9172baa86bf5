// The precision hint's int8 check on session notes (no GPU needed: the
// notes are the JSON a CUDA session of a QDQ model gives).
#include "cli/precision_hint.h"

#include <string>

#include <gtest/gtest.h>

namespace vigil::cli {
namespace {

TEST(PrecisionHint, CountsTheQdqNodesThatRunInInt8) {
  const std::string mixed = R"j({"int8_convolutions": [{"node": "a", "int8": true, "reason": ""},
                                                      {"node": "b", "int8": false, "reason": "3 channels"},
                                                      {"node": "c", "int8": true, "reason": ""}],
                                "int8_matmuls": [{"node": "fc", "int8": true, "reason": ""}]})j";
  EXPECT_EQ(Int8NodeCount(mixed), 3u);
  const std::string none = R"j({"int8_convolutions": [{"node": "b", "int8": false, "reason": "3 channels"}]})j";
  EXPECT_EQ(Int8NodeCount(none), 0u);
}

TEST(PrecisionHint, FloatModelsAndBadNotesCountNone) {
  const std::string float_model = R"j({"backends": ["cuda"], "cuda_stack": "NVIDIA H200 (sm_90)"})j";
  EXPECT_EQ(Int8NodeCount(float_model), 0u);
  EXPECT_EQ(Int8NodeCount("not json"), 0u);
  const std::string odd = R"j({"int8_convolutions": 3, "int8_matmuls": [7, {"int8": "yes"}]})j";
  EXPECT_EQ(Int8NodeCount(odd), 0u);
}

}  // namespace
}  // namespace vigil::cli
