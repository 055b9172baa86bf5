#include "base/diagnosis_render.h"

#include <gtest/gtest.h>

namespace vigil {
namespace {

Status Example() {
  return InvalidInputError("cannot run Conv 'conv1': input 'x' has dtype int32, the model expects float32")
      .WithFact("expected", "float32")
      .WithFact("got", "int32")
      .WithCause("the input file was written from an integer array", "int32 and float32 are both 4 bytes")
      .WithFix("convert the array with astype(np.float32)");
}

TEST(DiagnosisRender, Text) {
  std::string text = RenderText(Example().diagnosis());
  EXPECT_EQ(text,
            "error [InvalidInput]: cannot run Conv 'conv1': input 'x' has dtype int32, the model expects float32\n"
            "  expected: float32\n"
            "  got: int32\n"
            "likely causes:\n"
            "  1. the input file was written from an integer array (evidence: int32 and float32 are both 4 bytes)\n"
            "fix:\n"
            "  - convert the array with astype(np.float32)\n");
}

TEST(DiagnosisRender, Json) {
  nlohmann::json j = ToJson(Example());
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"]["code"], "InvalidInput");
  EXPECT_EQ(j["error"]["facts"][1]["name"], "got");
  EXPECT_EQ(j["error"]["facts"][1]["value"], "int32");
  EXPECT_EQ(j["error"]["causes"][0]["evidence"], "int32 and float32 are both 4 bytes");
  EXPECT_EQ(j["error"]["fixes"][0], "convert the array with astype(np.float32)");
  EXPECT_EQ(ToJson(Status::Ok())["ok"], true);
}

TEST(DiagnosisRender, JsonRoundTrip) {
  Status original = Example();
  original.diagnosis().code = ErrorCode::kCrashed;
  Diagnosis back = DiagnosisFromJson(ToJson(original.diagnosis()));
  EXPECT_EQ(RenderText(back), RenderText(original.diagnosis()));
  EXPECT_EQ(back.code, ErrorCode::kCrashed);
}

TEST(DiagnosisRender, FromJsonToleratesGarbage) {
  Diagnosis d = DiagnosisFromJson(nlohmann::json::parse(R"({"code":"Nonsense","facts":[1,{"name":2}],"fixes":[3]})"));
  EXPECT_EQ(d.code, ErrorCode::kInternal);
  ASSERT_EQ(d.facts.size(), 2u);
  EXPECT_EQ(d.facts[1].name, "");
  EXPECT_TRUE(d.fixes.empty());
  EXPECT_EQ(DiagnosisFromJson(nlohmann::json(42)).summary, "");
}

}  // namespace
}  // namespace vigil
