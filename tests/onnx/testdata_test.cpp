// Every model of ONNX's own test data (Debian package libonnx-testdata) reads.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnx/reader.h"
#include "testdata_models.h"

namespace vigil::onnx {
namespace {

namespace fs = std::filesystem;

TEST(OnnxTestData, EveryModelReads) {
  if (!fs::is_directory(testing::kTestDataRoot)) {
    GTEST_SKIP() << testing::kTestDataRoot << " is absent; install the Debian package libonnx-testdata";
  }
  std::vector<fs::path> models = testing::FindTestDataModels();
  ASSERT_GT(models.size(), 1000u) << "expected the whole node/pytorch/simple suites";
  size_t failures = 0;
  for (const fs::path& path : models) {
    Result<ir::Model> model = ReadModel(path.string());
    if (!model.ok()) {
      ++failures;
      ADD_FAILURE() << model.status().ToString();
      continue;
    }
    EXPECT_GT(model->ir_version, 0) << path;
    EXPECT_FALSE(model->opset_imports.empty()) << path;
  }
  EXPECT_EQ(failures, 0u) << "of " << models.size() << " models";
}

}  // namespace
}  // namespace vigil::onnx
