// The model.onnx files of ONNX's own test data (Debian package
// libonnx-testdata), for the reader and writer tests that walk all of them.
#pragma once

#include <filesystem>
#include <vector>

namespace vigil::onnx::testing {

inline constexpr const char* kTestDataRoot = "/usr/include/onnx/backend/test/data";

// Every <suite>/<case>/model.onnx of the node, pytorch and simple suites
// (empty when the package is absent).
inline std::vector<std::filesystem::path> FindTestDataModels() {
  namespace fs = std::filesystem;
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

}  // namespace vigil::onnx::testing
