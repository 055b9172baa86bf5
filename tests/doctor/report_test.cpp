// The rendered report from hand-made findings: the verdict line first, the
// table's marks, fixes printed once, and the JSON's summary key first.
#include <gtest/gtest.h>

#include "doctor/report.h"

namespace vigil::doctor {
namespace {

Finding Make(const std::string& id, Severity severity, const std::string& summary, const std::string& fix,
             const std::string& component = "") {
  return Finding{id, severity, summary, {}, fix, component};
}

Component Lib(const std::string& id, const std::string& file) {
  Component c;
  c.id = id;
  c.file = file;
  c.found = true;
  c.path = "/opt/" + file;
  c.version = MakeVersion(9, 14, 0);
  return c;
}

std::string LineOf(const std::string& text, size_t index) {
  size_t pos = 0;
  for (size_t i = 0; i < index && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) ++pos;
  }
  if (pos == std::string::npos) return "";
  return text.substr(pos, text.find('\n', pos) - pos);
}

TEST(Report, VerdictNamesTheFirstErrorAndItsFixBeforeTheTable) {
  DoctorReport r;
  r.snapshot.components.push_back(Lib(kCudnn, "libcudnn.so.9"));
  r.findings = {Make("a.first", Severity::kError, "first error", "do A"),
                Make("b.second", Severity::kError, "second error", "do B"),
                Make("c.warn", Severity::kWarning, "a warning", "do C")};
  std::string text = RenderReportText(r);
  EXPECT_EQ(LineOf(text, 0), "2 error(s): first error — fix: do A");
  EXPECT_EQ(LineOf(text, 1), "");
  EXPECT_EQ(LineOf(text, 2), "GPU software stack");
  size_t table = text.find("GPU software stack");
  size_t findings = text.find("Findings: 2 error(s), 1 warning(s)");
  ASSERT_NE(findings, std::string::npos) << text;
  EXPECT_LT(table, findings);
  EXPECT_NE(text.find("error [a.first]: first error", findings), std::string::npos) << text;
}

TEST(Report, VerdictWithOnlyWarnings) {
  std::vector<Finding> findings = {Make("c.warn", Severity::kWarning, "a warning", "do C"),
                                   Make("d.info", Severity::kInfo, "a note", "read D")};
  EXPECT_EQ(VerdictLine(findings), "no errors, 1 warning(s): a warning — fix: do C");
}

TEST(Report, VerdictWithoutFixHasNoFixPart) {
  EXPECT_EQ(VerdictLine({Make("e.err", Severity::kError, "broken", "")}), "1 error(s): broken");
}

TEST(Report, VerdictWithNothingOrOnlyInfos) {
  EXPECT_EQ(VerdictLine({}), "no problems found");
  EXPECT_EQ(VerdictLine({Make("d.info", Severity::kInfo, "a note", "read D")}), "no problems found");
  DoctorReport r;
  EXPECT_EQ(LineOf(RenderReportText(r), 0), "no problems found");
}

TEST(Report, JsonSummaryIsTheFirstKey) {
  DoctorReport r;
  r.findings = {Make("a.first", Severity::kError, "first error", "do A")};
  std::string text = RenderReportJson(r).dump();
  EXPECT_EQ(text.rfind("{\"summary\":\"1 error(s): first error — fix: do A\",", 0), 0u) << text;
  nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back["healthy"], false);
  EXPECT_EQ(back["schema_version"], 1);
}

TEST(Report, TableMarksLibrariesNamedByFindings) {
  DoctorReport r;
  r.snapshot.components = {Lib(kCudnn, "libcudnn.so.9"), Lib("cudnn_ops", "libcudnn_ops.so.9"),
                           Lib("cudnn_cnn", "libcudnn_cnn.so.9"), Lib("cudnn_adv", "libcudnn_adv.so.9")};
  r.findings = {Make("x.err", Severity::kError, "ops is stray", "fix ops", "cudnn_ops"),
                Make("x.warn", Severity::kWarning, "cnn is odd", "look at cnn", "cudnn_cnn"),
                Make("x.info", Severity::kInfo, "adv note", "", "cudnn_adv")};
  std::string text = RenderReportText(r);
  EXPECT_NE(text.find("  ✗   ops"), std::string::npos) << text;
  EXPECT_NE(text.find("  !   cnn"), std::string::npos) << text;
  EXPECT_NE(text.find("  ✓   adv"), std::string::npos) << text;
  EXPECT_NE(text.find("  ✓ cuDNN"), std::string::npos) << text;
}

TEST(Report, TheSameFixIsPrintedOnce) {
  DoctorReport r;
  r.findings = {Make("s.missing", Severity::kError, "cnn missing", "reinstall cuDNN into /x"),
                Make("s.missing", Severity::kError, "adv missing", "reinstall cuDNN into /x"),
                Make("t.other", Severity::kWarning, "other", "something else")};
  std::string text = RenderReportText(r);
  size_t first = text.find("  fix: reinstall cuDNN into /x");
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find("  fix: reinstall cuDNN into /x", first + 1), std::string::npos) << text;
  EXPECT_NE(text.find("  fix: the same as for [s.missing] above"), std::string::npos) << text;
  EXPECT_NE(text.find("  fix: something else"), std::string::npos) << text;
  // JSON keeps every finding's own fix.
  nlohmann::ordered_json json = RenderReportJson(r);
  EXPECT_EQ(json["findings"][1]["fix"], "reinstall cuDNN into /x");
}

}  // namespace
}  // namespace vigil::doctor
