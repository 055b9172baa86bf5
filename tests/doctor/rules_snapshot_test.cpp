// Rules from hand-built snapshots: no libraries at all.
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "doctor/rules/rules.h"
#include "fake_stack.h"

namespace vigil::doctor {
namespace {

using testing::FindById;

Component Found(const std::string& id, const std::string& file, Version v) {
  Component c;
  c.id = id;
  c.file = file;
  c.found = true;
  c.path = "/opt/" + file;
  c.version = v;
  return c;
}

TEST(RulesFromSnapshot, EveryRuleHasAUniqueId) {
  std::set<std::string_view> ids;
  for (auto table : {DriverRules(), CudnnRules(), EnvRules()}) {
    for (const Rule& r : table) EXPECT_TRUE(ids.insert(r.id).second) << r.id;
  }
  EXPECT_GE(ids.size(), 20u);
}

TEST(RulesFromSnapshot, ProbeCrashIsAnError) {
  StackSnapshot s;
  s.probe_error = "died of SIGSEGV while loading /x/libcudnn.so.9";
  const Finding* f = FindById(RunRules(s), "probe.failed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kError);
}

TEST(RulesFromSnapshot, EmptyVisibleDevicesHidesAll) {
  StackSnapshot s;
  s.components.push_back(Found(kDriver, "libcuda.so.1", MakeVersion(580, 65, 6)));
  s.env["CUDA_VISIBLE_DEVICES"] = "";
  EXPECT_NE(FindById(RunRules(s), "env.cuda_visible_devices_hides_all"), nullptr);
}

TEST(RulesFromSnapshot, SnapshotSurvivesJson) {
  StackSnapshot s;
  s.components.push_back(Found(kCudnn, "libcudnn.so.9", MakeVersion(9, 14, 0)));
  s.components[0].version_check_status = 1002;
  s.gpus.push_back({0, "Tesla T4", 7, 5, 100, 50, ""});
  s.env["CUDNN_LIB_CONFIG"] = "GRAPH_JIT_ONLY";
  s.logdest_writable = false;
  StackSnapshot back = nlohmann::json(s).get<StackSnapshot>();
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(s));
}

}  // namespace
}  // namespace vigil::doctor
