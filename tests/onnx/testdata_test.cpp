// Every model of ONNX's own test data (Debian package libonnx-testdata) reads.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnx/reader.h"

namespace vigil::onnx {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTestDataRoot = "/usr/include/onnx/backend/test/data";

std::vector<fs::path> FindModels() {
  std::vector<fs::path> models;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    fs::path dir = fs::path(kTestDataRoot) / suite;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      fs::path model = entry.path() / "model.onnx";
      if (fs::is_regular_file(model)) models.push_back(model);
    }
  }
  return models;
}

TEST(OnnxTestData, EveryModelReads) {
  if (!fs::is_directory(kTestDataRoot)) {
    GTEST_SKIP() << kTestDataRoot << " is absent; install the Debian package libonnx-testdata";
  }
  std::vector<fs::path> models = FindModels();
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
