// The kernel table and the op catalogue agree: every CPU kernel has a schema
// covering the same opsets, and no op/opset has two kernels.
#include <gtest/gtest.h>

#include "backends/cpu/kernel.h"
#include "ops/schema.h"

namespace vigil::cpu {
namespace {

TEST(KernelTable, EveryKernelHasASchema) {
  for (const KernelDef& k : AllKernels()) {
    for (int v : {k.since_version, std::min(k.until_version, 23)}) {
      if (v < k.since_version) continue;
      EXPECT_NE(ops::FindSchema(k.domain, k.op, v), nullptr) << k.op << " opset " << v << " has a kernel but no schema";
    }
  }
}

TEST(KernelTable, NoOverlappingKernels) {
  auto all = AllKernels();
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) {
      if (std::string_view(all[i].op) != all[j].op || std::string_view(all[i].domain) != all[j].domain) continue;
      bool overlap = all[i].since_version <= all[j].until_version && all[j].since_version <= all[i].until_version;
      EXPECT_FALSE(overlap) << all[i].op << " has two kernels for overlapping opsets";
    }
  }
}

TEST(OpCatalogue, NoOverlappingSchemas) {
  auto all = ops::AllSchemas();
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) {
      if (std::string_view(all[i].name) != all[j].name || std::string_view(all[i].domain) != all[j].domain) continue;
      bool overlap = all[i].since_version <= all[j].until_version && all[j].since_version <= all[i].until_version;
      EXPECT_FALSE(overlap) << all[i].name << " has two schemas for overlapping opsets";
    }
  }
}

}  // namespace
}  // namespace vigil::cpu
