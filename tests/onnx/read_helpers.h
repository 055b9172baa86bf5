// Shared helpers of the reader tests.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "onnx/reader.h"
#include "support/onnx_builder.h"

namespace vigil::onnx::test {

using namespace vigil::testing;  // NOLINT: builder helpers read better unqualified

// Reads model bytes held by the caller (they must outlive the model).
inline Result<ir::Model> ReadBytes(const std::string& bytes, const ReadOptions& options = {}) {
  return ReadModelFromBytes(AsBytes(bytes), "test.onnx", "", options);
}

inline std::string ModelWithInitializer(const std::string& tensor) {
  return MakeModel(MakeGraph("g", {}, {}, {}, {.initializers = {tensor}}));
}

inline std::string ModelWithAttribute(const std::string& attribute) {
  return MakeModel(MakeGraph("g", {MakeNode("Custom", {}, {"y"}, {attribute})}, {}, {}));
}

// Asserts that `result` failed with `code` and a summary containing `text`.
#define EXPECT_READ_ERROR(result, want_code, want_text)                                        \
  do {                                                                                        \
    const auto& r_ = (result);                                                                \
    ASSERT_FALSE(r_.ok()) << "expected an error containing: " << (want_text);                \
    EXPECT_EQ(r_.status().code(), (want_code)) << r_.status().ToString();                     \
    EXPECT_NE(r_.status().summary().find(want_text), std::string::npos) << r_.status().summary(); \
  } while (0)

}  // namespace vigil::onnx::test
