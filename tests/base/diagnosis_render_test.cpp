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

TEST(DiagnosisRender, TextLeadsWithTheCauseAndItsFix) {
  std::string text = RenderText(Example().diagnosis());
  EXPECT_EQ(text,
            "error [InvalidInput]: the input file was written from an integer array — fix: convert the array with "
            "astype(np.float32)\n"
            "  symptom: cannot run Conv 'conv1': input 'x' has dtype int32, the model expects float32\n"
            "  evidence: int32 and float32 are both 4 bytes\n"
            "  expected: float32\n"
            "  got: int32\n");
  EXPECT_EQ(Headline(Example().diagnosis()),
            "the input file was written from an integer array — fix: convert the array with astype(np.float32)");
}

TEST(DiagnosisRender, TextListsTheOtherCausesAndFixesOnce) {
  Status s = Example();
  s.WithCause("the array was built as int32 on purpose").WithFix("re-export the model with an int32 input");
  EXPECT_EQ(RenderText(s.diagnosis()),
            "error [InvalidInput]: the input file was written from an integer array — fix: convert the array with "
            "astype(np.float32)\n"
            "  symptom: cannot run Conv 'conv1': input 'x' has dtype int32, the model expects float32\n"
            "  evidence: int32 and float32 are both 4 bytes\n"
            "  expected: float32\n"
            "  got: int32\n"
            "other possible causes:\n"
            "  2. the array was built as int32 on purpose\n"
            "other fixes:\n"
            "  - re-export the model with an int32 input\n");
}

TEST(DiagnosisRender, WithoutACauseTheSummaryLeads) {
  Status s = InvalidInputError("input 'x' has 3 dims, the model expects 4");
  EXPECT_EQ(RenderText(s.diagnosis()), "error [InvalidInput]: input 'x' has 3 dims, the model expects 4\n");
  s.WithFix("add the batch dimension:\n  x = x[None]");
  EXPECT_EQ(RenderText(s.diagnosis()),
            "error [InvalidInput]: input 'x' has 3 dims, the model expects 4 — fix: add the batch dimension:\n"
            "      x = x[None]\n");
}

TEST(DiagnosisRender, Json) {
  auto j = ToJson(Example());  // ordered: the keys as printed
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["error"].begin().key(), "headline");  // first, as in the text
  EXPECT_EQ(j["error"]["headline"], Headline(Example().diagnosis()));
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
